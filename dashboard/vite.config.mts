import { defineConfig } from 'vite';

/**
 * The dashboard's build: plain Preact through Vite's own JSX transform (Oxc), served by the API
 * process from dist/ at /dashboard (src/api/dashboard/static.ts), with no CDN.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: '/dashboard/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 300 },
  logLevel: 'warn',
});
