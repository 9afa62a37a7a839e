/**
 * The load generator's process, forked by generator.ts: runs each job it is sent over IPC. It
 * exits when the channel closes; Ctrl-C stops only the sending (the benchmark closes the channel).
 */
import type { FromLoadProcess, LoadJob, ToLoadProcess } from './generator';
import { closedLoop, openLoop, type LoadResult } from './load';
import { senders } from './senders';

if (!process.send)
  throw new Error('tools/bench/load-process.ts runs forked by tools/bench/generator.ts');

const made = senders();
const running = new Map<number, AbortController>();
const reply = (message: FromLoadProcess) => {
  if (process.connected) process.send!(message);
};

async function run(id: number, job: LoadJob): Promise<LoadResult> {
  const controller = new AbortController();
  running.set(id, controller);
  try {
    const send = await made.open(job.sender);
    const { shape } = job;
    const signal = controller.signal;
    return shape.kind === 'closed'
      ? await closedLoop({ ...shape, send, signal })
      : await openLoop({ rate: shape.rate, durationS: shape.durationS, send, signal });
  } finally {
    running.delete(id);
  }
}

process.on('message', (message: ToLoadProcess) => {
  if ('stop' in message) {
    running.get(message.stop)?.abort();
    return;
  }
  run(message.run, message.job).then(
    (result) => reply({ id: message.run, result }),
    (error: unknown) =>
      reply({ id: message.run, error: error instanceof Error ? error.message : String(error) }),
  );
});
process.on('disconnect', () => {
  for (const controller of running.values()) controller.abort();
  void made.close().finally(() => process.exit(0));
});
// Ctrl-C reaches the whole process group: stop sending, and let the benchmark end this process.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    for (const controller of running.values()) controller.abort();
  });
}
reply({ ready: true });
