import pg from 'pg';
import { asDatabaseSettingError, pgConnection } from './connection';

/** The channel the `events` insert trigger notifies for the relay (migrations 0005, 0011). */
export const RELAY_CHANNEL = 'webhook_events';

export type ListenOn = {
  channel: string;
  /** Only notifications with this payload wake the listener; absent: any. */
  payload?: string;
};

export type EventListener = {
  /**
   * Resolves at the first notification since the last call (at once if one came meanwhile),
   * after `timeoutMs`, or when `signal` aborts, whichever comes first.
   */
  wait: (timeoutMs: number, signal?: AbortSignal) => Promise<void>;
  /** The connection broke: no notification will come; close this one and listen anew. */
  lost: () => boolean;
  close: () => Promise<void>;
};

/**
 * A dedicated connection listening for committed events, so the outbox relay wakes as soon as
 * a money movement commits instead of polling. The caller still reads the table after a timeout:
 * a notification lost with a dropped connection costs latency, never an event.
 */
export async function listenForEvents(
  databaseUrl: string,
  on: ListenOn = { channel: RELAY_CHANNEL },
): Promise<EventListener> {
  const client = new pg.Client(pgConnection(databaseUrl));
  let notified = false;
  let wake: (() => void) | undefined;
  let lost = false;
  client.on('notification', (notification) => {
    if (on.payload !== undefined && notification.payload !== on.payload) return;
    notified = true;
    wake?.();
  });
  // A broken connection ends the wait at once; the relay reconnects next round.
  const broke = () => {
    lost = true;
    wake?.();
  };
  client.on('error', broke);
  client.on('end', broke);
  await client.connect().catch((error: unknown) => {
    throw asDatabaseSettingError(error, databaseUrl);
  });
  await client.query(`LISTEN ${on.channel}`);
  return {
    wait: (timeoutMs, signal) => {
      if (notified || signal?.aborted) {
        notified = false;
        return Promise.resolve();
      }
      return new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          wake = undefined;
          notified = false;
          resolve();
        };
        const timer = setTimeout(done, timeoutMs);
        signal?.addEventListener('abort', done, { once: true });
        wake = done;
      });
    },
    lost: () => lost,
    close: () => client.end().catch(() => undefined),
  };
}
