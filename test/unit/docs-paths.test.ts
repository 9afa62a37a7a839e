import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A file the docs name must exist, so that a file moved or renamed fails here until the docs
 * follow. `src/domain/ledger.assertBalanced` names a function; a `*` or `NNNN` span, its folder.
 */
const ROOT = path.join(__dirname, '..', '..');
const DOCS = path.join(ROOT, 'docs');
const TRACKED = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
  .split('\0')
  .filter(Boolean);
const TOP = new Set(TRACKED.map((file) => file.split('/')[0]));
/** A tracked file, or a folder holding one. */
const exists = (span: string) => {
  const folder = `${span.replace(/\/$/, '')}/`;
  return TRACKED.some((file) => file === span || file.startsWith(folder));
};
const EXTENSIONS = /\.(ts|tsx|mts|js|cjs|mjs|json|md|sql|sh|yml|yaml|css|html|png)$/;

function namedPaths(text: string): string[] {
  return [...text.matchAll(/`([^`\s]+)`/g)]
    .map(([, span = '']) => span.replace(/[:#].*$/, ''))
    .filter((span) => /^[\w.-]+\/[\w.*/-]*$/.test(span) && TOP.has(span.split('/')[0] ?? ''))
    .filter((span) => span.endsWith('/') || EXTENSIONS.test(span))
    .map((span) => (/[*]|NNNN/.test(span) ? path.dirname(span) : span));
}

describe('the paths the docs name', () => {
  const files = readdirSync(DOCS).filter((file) => file.endsWith('.md'));

  test.each(files)('docs/%s names only paths that exist', (file) => {
    const named = namedPaths(readFileSync(path.join(DOCS, file), 'utf8'));
    expect(named.filter((span) => !exists(span))).toEqual([]);
  });

  test('the architecture page says where to change what, with real paths', () => {
    const text = readFileSync(path.join(DOCS, 'architecture.md'), 'utf8');
    const start = text.indexOf('\n### To change X, edit Y\n');
    expect(start).toBeGreaterThanOrEqual(0);
    const table = text.slice(start, text.indexOf('\n### ', start + 1));
    const rows = table.split('\n').filter((line) => /^\| [a-z]/.test(line));
    expect(rows.length).toBeGreaterThan(10);
    const withoutPath = rows.filter((row) => namedPaths(row).length === 0);
    expect(withoutPath).toEqual([]);
  });

  test('the request diagram names only files that exist', () => {
    const text = readFileSync(path.join(DOCS, 'architecture.md'), 'utf8');
    const diagram = /```mermaid\n([^]*?)```/.exec(text)?.[1] ?? '';
    const files = [...diagram.matchAll(/[\w-]+(?:\/[\w.-]+)+\.ts/g)].map(([file]) => file);
    expect(files.length).toBeGreaterThan(3);
    expect(files.filter((file) => !exists(file))).toEqual([]);
  });
});
