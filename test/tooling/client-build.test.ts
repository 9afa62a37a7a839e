import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { buildClient, CLIENT_DIR } from '../../tools/scripts/client-build';

const ROOT = path.join(__dirname, '..', '..');
const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'));

/** Loads both builds in a plain Node process, as a merchant's project would. */
const PROBE = `
const esm = await import(${JSON.stringify(path.join(CLIENT_DIR, 'dist/esm/index.js'))});
const { createRequire } = await import('node:module');
const cjs = createRequire(import.meta.url)(${JSON.stringify(path.join(CLIENT_DIR, 'dist/cjs/index.js'))});
const report = {};
for (const [name, lib] of [['esm', esm], ['cjs', cjs]]) {
  const client = lib.createWalletClient({ baseUrl: 'http://127.0.0.1:9', retry: { maxAttempts: 1 } });
  const error = await client.get('/healthz').catch((e) => e);
  report[name] = {
    exports: Object.keys(lib).sort(),
    error: [error instanceof lib.WalletApiError, error.status],
    verifier: typeof lib.verifyWebhook,
  };
}
console.log(JSON.stringify(report));
`;

describe('the TypeScript client package', () => {
  beforeAll(() => buildClient(), 120_000);

  it('builds to ES modules and CommonJS with declarations, and Node loads both', () => {
    const pkg = readJson(path.join(CLIENT_DIR, 'package.json'));
    for (const target of ['import', 'require']) {
      for (const file of Object.values<string>(pkg.exports['.'][target])) {
        expect(readdirSync(path.dirname(path.join(CLIENT_DIR, file)))).toContain(
          path.basename(file),
        );
      }
    }
    expect(readJson(path.join(CLIENT_DIR, 'dist/esm/package.json'))).toEqual({ type: 'module' });
    expect(readJson(path.join(CLIENT_DIR, 'dist/cjs/package.json'))).toEqual({ type: 'commonjs' });
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', PROBE], {
      cwd: CLIENT_DIR,
      encoding: 'utf8',
    });
    const report = JSON.parse(out);
    expect(report.esm).toEqual(report.cjs);
    expect(report.esm.exports).toEqual(
      expect.arrayContaining(['createWalletClient', 'verifyWebhook', 'WalletApiError']),
    );
    expect(report.esm.error).toEqual([true, 0]);
    expect(report.esm.verifier).toBe('function');
  });

  it('imports nothing of Node in what a browser loads, and pins its dependencies as the repository does', () => {
    const esm = path.join(CLIENT_DIR, 'dist/esm');
    for (const file of readdirSync(esm).filter((name) => name.endsWith('.js'))) {
      const text = readFileSync(path.join(esm, file), 'utf8');
      expect({ file, imports: [...text.matchAll(/from '([^.][^']*)'/g)].map((m) => m[1]) }).toEqual(
        {
          file,
          imports: expect.not.arrayContaining([
            expect.stringMatching(/^node:|^(fs|path|crypto|http)$/),
          ]),
        },
      );
      expect(text).not.toMatch(/\brequire\(|process\.|Buffer\./);
    }
    const pkg = readJson(path.join(CLIENT_DIR, 'package.json'));
    const root = readJson(path.join(ROOT, 'package.json'));
    for (const [name, version] of Object.entries(pkg.dependencies)) {
      expect({ name, version }).toEqual({ name, version: root.dependencies[name] });
    }
  });
});
