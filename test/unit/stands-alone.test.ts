import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The repository stands on its own: what it ships cites its own docs, never a folder beside the
 * checkout or a tracker it does not hold. The changelog keeps its history as it was written.
 */
const ROOT = path.join(__dirname, '../..');
const FORBIDDEN = [/shared\/(spec|DESIGN|STYLE)/, /decisions\.md/, /\b[Ii]ssue \d+/];

describe('the repository cites only itself', () => {
  it('cites no spec beside the checkout and no tracker issue, outside the changelog', () => {
    const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
      .split('\0')
      .filter((file) => file && file !== 'CHANGELOG.md' && !/\.(png|jpg|ico)$/.test(file));
    const hits = files.flatMap((file) =>
      readFileSync(path.join(ROOT, file), 'utf8')
        .split('\n')
        .flatMap((line, index) =>
          FORBIDDEN.some((pattern) => pattern.test(line)) ? [`${file}:${index + 1}: ${line}`] : [],
        ),
    );
    expect(hits).toEqual([]);
  });
});
