import { createServer, type Server } from 'node:net';
import { freePort } from '../../src/worker/ports';
import { startTemporalDevServer } from '../../tools/harness/temporal';

/** Starting the dev server (tools/harness/temporal.ts): again when it exits during start-up, then why. */

let taken: Server;
let port: number;

beforeAll(async () => {
  port = await freePort();
  // Taken by another program, which hangs up on whoever connects.
  taken = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise((resolve) => taken.close(resolve));
});

it('a dev server that exits during start-up is started again, then fails saying what it said', async () => {
  const lines: string[] = [];
  const started = startTemporalDevServer({ port, log: (line) => lines.push(line) });
  await expect(started).rejects.toThrow(
    new RegExp(
      `exited during start-up \\(exit code 1\\): .*can't set frontend port ${port}.*address already in use`,
    ),
  );
  // Three attempts in all: two of them followed by a start again.
  expect(lines.filter((line) => line.includes('starting it again'))).toEqual([
    expect.stringContaining('(attempt 2)'),
    expect.stringContaining('(attempt 3)'),
  ]);
});
