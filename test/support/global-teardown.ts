import { rm } from 'node:fs/promises';

type Handles = {
  postgres: { stop: () => Promise<void> };
  temporal: { stop: () => Promise<void> };
  dir: string;
};

export default async function globalTeardown(): Promise<void> {
  const handles = (globalThis as { __walletTest?: Handles }).__walletTest;
  if (!handles) return;
  await handles.temporal.stop();
  await handles.postgres.stop();
  await rm(handles.dir, { recursive: true, force: true });
}
