import type { Config } from '../config';

/**
 * The kinds of work, each on a task queue of its own so that each scales and fails on its own:
 * a backlog of webhook deliveries never waits in front of money (docs/operations.md).
 */
export const QUEUE_KINDS = ['payments', 'webhooks', 'maintenance'] as const;
export type QueueKind = (typeof QUEUE_KINDS)[number];

/** The task queue name the configuration gives a kind of work. */
export function taskQueueOf(config: Pick<Config, 'temporal'>, kind: QueueKind): string {
  const { temporal } = config;
  const names: Record<QueueKind, string> = {
    payments: temporal.taskQueue,
    webhooks: temporal.webhookTaskQueue,
    maintenance: temporal.maintenanceTaskQueue,
  };
  return names[kind];
}

export class QueueListError extends Error {}

/**
 * The kinds named by `--queues` (comma-separated, in the order of QUEUE_KINDS, each once).
 * An unknown or empty list throws with the one line to show.
 */
export function parseQueueList(list: string): QueueKind[] {
  const names = list
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const unknown = names.filter((name) => !(QUEUE_KINDS as readonly string[]).includes(name));
  if (unknown.length > 0 || names.length === 0) {
    throw new QueueListError(
      `--queues: unknown queue ${unknown.length ? `"${unknown.join('", "')}"` : '(none given)'}; expected a comma-separated list of ${QUEUE_KINDS.join(', ')}`,
    );
  }
  return QUEUE_KINDS.filter((kind) => names.includes(kind));
}
