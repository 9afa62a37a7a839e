import { execFileSync } from 'node:child_process';
import { copyFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * `npm run client:build`: compiles clients/typescript twice with the repository's tsc, to ES
 * modules (dist/esm) and to CommonJS (dist/cjs), each with its declarations. Its dependencies
 * resolve from the repository's node_modules, as any package's do from an ancestor folder.
 */
export const CLIENT_DIR = path.join(__dirname, '..', '..', 'clients', 'typescript');

export function buildClient(): void {
  const dist = path.join(CLIENT_DIR, 'dist');
  rmSync(dist, { recursive: true, force: true });
  const tsc = require.resolve('typescript/bin/tsc');
  for (const [format, type] of [
    ['esm', 'module'],
    ['cjs', 'commonjs'],
  ] as const) {
    execFileSync(process.execPath, [tsc, '-p', path.join(CLIENT_DIR, `tsconfig.${format}.json`)], {
      stdio: 'inherit',
    });
    // Each output says which module system its .js files are, whatever the package says.
    writeFileSync(path.join(dist, format, 'package.json'), `${JSON.stringify({ type })}\n`);
    // tsc emits no .d.ts of a .d.ts: the generated types are copied beside the declarations.
    copyFileSync(
      path.join(CLIENT_DIR, 'src', 'schema.d.ts'),
      path.join(dist, format, 'schema.d.ts'),
    );
  }
}

if (require.main === module) buildClient();
