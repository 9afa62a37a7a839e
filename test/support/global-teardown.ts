import type { ScratchServers } from '../../tools/harness/scratch';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __walletTest?: ScratchServers }).__walletTest?.stop();
}
