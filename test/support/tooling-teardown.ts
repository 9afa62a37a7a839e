import { rm } from 'node:fs/promises';

/** Removes what `tooling-setup.ts` wrote, if it wrote anything. */
export default async function toolingTeardown(): Promise<void> {
  const dir = (globalThis as { __walletToolingDir?: string }).__walletToolingDir;
  if (dir) await rm(dir, { recursive: true, force: true });
}
