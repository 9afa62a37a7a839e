import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { findApplication } from '../../src/db/applications';
import { findEvents, readEventWindow, type FeedScope } from '../../src/db/event-feed';
import {
  LISTENERS_CHANNEL,
  listenersPayload,
  pruneEventListeners,
  removeEventListener,
  renewEventListener,
} from '../../src/db/event-listeners';
import type { DatabasePool } from '../../src/db/pool';
import type { EventRow } from '../../src/db/webhook-deliveries';
import { listenForEvents, type EventListener } from '../../src/db/webhook-listener';
import { EVENT_TYPES } from '../../src/domain/events';
import type { Mode } from '../../src/domain/types';
import {
  assertPublicUrl,
  classifyAddress,
  ForbiddenAddressError,
  InvalidWebhookUrlError,
  parseHostAddress,
} from '../../src/outbound/address-guard';
import { newWebhookSecret } from '../../src/crypto/secret-box';
import { postWebhook, signedDelivery } from '../../src/outbound/webhook-post';
import { UsageError } from './errors';

/**
 * `cli webhooks listen`: forwards an application's new events to a developer's server, signed with
 * a secret of its own. Registered in `event_listeners`, it reads what committed when notified; the
 * slow read only covers a lost notification. See docs/cli.md, Webhooks on your machine.
 */

export const LISTEN_USAGE =
  'cli webhooks listen --app APP_ID --mode test|live --forward-to URL [--events KIND,...]';

/** How far behind its last read each read looks: longer than an event's transaction stays open. */
const LOOKBACK_SECONDS = 120;
/** A seen id is forgotten this long after it left the window, so clock rounding cannot resend it. */
const FORGET_MARGIN_MS = 5_000;
/** The pause after a failed read or a failed reconnection before trying again. */
const RETRY_MS = 1_000;
/** The developer's server gets as long as a subscription's endpoint (docs/api.md, Webhooks). */
const POST_TIMEOUT_MS = 10_000;
/** Loopback is the point of the command; the SSRF guard's other refusals stand. */
const LOOPBACK_RANGES = ['127.0.0.0/8', '::1/128'];

/** How the command's connections show in `pg_stat_activity`. */
export const LISTEN_APPLICATION_NAME = 'cli webhooks listen';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export type ListenOptions = {
  applicationId: string;
  mode: Mode;
  forwardTo: string;
  /** null: every type. */
  types: string[] | null;
};

/** The command's arguments (what follows `webhooks listen`), checked before anything opens. */
export function parseListenArgs(args: string[]): ListenOptions {
  let values: Record<string, string | undefined>;
  try {
    values = parseArgs({
      args,
      strict: true,
      options: {
        app: { type: 'string' },
        mode: { type: 'string' },
        'forward-to': { type: 'string' },
        events: { type: 'string' },
      },
    }).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { app, mode, events } = values;
  const forwardTo = values['forward-to'];
  if (!app || !UUID.test(app)) throw new UsageError('--app must be an application id');
  if (mode !== 'test' && mode !== 'live') throw new UsageError('--mode must be test or live');
  if (!forwardTo) throw new UsageError('--forward-to is required');
  let types: string[] | null = null;
  if (events !== undefined) {
    types = [...new Set(events.split(',').map((kind) => kind.trim()))];
    const unknown = types.filter((kind) => !(EVENT_TYPES as readonly string[]).includes(kind));
    if (types.length === 0 || unknown.length > 0) {
      throw new UsageError(
        `--events takes event kinds separated by commas, each one of ${EVENT_TYPES.join(', ')}` +
          (unknown.length > 0 ? ` (unknown: ${unknown.map((k) => `"${k}"`).join(', ')})` : ''),
      );
    }
  }
  return { applicationId: app, mode, forwardTo, types };
}

type Target = { url: string; allowlist: string[]; httpsOnly: boolean };

function isLoopbackHost(hostname: string): boolean {
  if (hostname === 'localhost') return true;
  return parseHostAddress(hostname) !== undefined && classifyAddress(hostname).range === 'loopback';
}

/**
 * The URL as the SSRF guard judges a subscription's, with loopback let through; plain http
 * beyond this machine only in Test Mode, as for subscriptions.
 */
async function checkTarget(url: string, mode: Mode, allowlist: readonly string[]): Promise<Target> {
  let hostname: string;
  try {
    hostname = new URL(url).hostname;
  } catch {
    throw new UsageError('--forward-to must be a URL');
  }
  const target = {
    url,
    allowlist: [...LOOPBACK_RANGES, ...allowlist],
    httpsOnly: mode === 'live' && !isLoopbackHost(hostname),
  };
  try {
    await assertPublicUrl(url, target);
  } catch (error) {
    if (error instanceof ForbiddenAddressError) {
      throw new UsageError('--forward-to must point to a loopback or public address');
    }
    if (error instanceof InvalidWebhookUrlError)
      throw new UsageError(`--forward-to: ${error.message}`);
    throw error;
  }
  return target;
}

/**
 * The events of a scope that commit after `start`, each once: every read covers a window behind
 * the last one and answers only the ids it has not seen.
 */
class EventFeed {
  private readAt: string | null = null;
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly pool: DatabasePool,
    private readonly scope: FeedScope,
  ) {}

  /** What exists now is seen: only events that commit later are new. */
  async start(): Promise<void> {
    const read = await readEventWindow(this.pool, this.scope, null, LOOKBACK_SECONDS);
    this.remember(read.readAt, read.events);
  }

  async next(): Promise<readonly EventRow[]> {
    const read = await readEventWindow(this.pool, this.scope, this.readAt, LOOKBACK_SECONDS);
    const fresh = await findEvents(
      this.pool,
      read.events.filter((e) => !this.seen.has(e.id)).map((e) => e.id),
    );
    this.remember(read.readAt, read.events);
    return fresh;
  }

  private remember(readAt: string, events: { id: string; created_at: string }[]): void {
    for (const e of events) this.seen.set(e.id, Date.parse(e.created_at));
    this.readAt = readAt;
    const forgetBefore = Date.parse(readAt) - LOOKBACK_SECONDS * 1000 - FORGET_MARGIN_MS;
    for (const [id, at] of this.seen) if (at < forgetBefore) this.seen.delete(id);
  }
}

export type ListenDeps = {
  pool: DatabasePool;
  databaseUrl: string;
  /** `WEBHOOK_PRIVATE_ALLOWLIST`. */
  allowlist: readonly string[];
  /**
   * `WEBHOOKS_LISTEN_SAFETY_READ_SECONDS`: the read without a notification, a safety net, never
   * the way events are found; `WEBHOOKS_LISTEN_LEASE_SECONDS`: the registration's lifetime.
   */
  timing: { safetyReadSeconds: number; leaseSeconds: number };
  /** Aborted by SIGINT or SIGTERM: the command returns. */
  signal: AbortSignal;
  /** One line of standard output. */
  out: (line: string) => void;
  /** One line of standard error. */
  warn: (line: string) => void;
};

/** The line printed for one event: `error` only when the post failed (no 2xx answer). */
type ForwardLine = { id: string; type: string; status_code: number | null; error?: string };

async function forward(event: EventRow, secret: string, target: Target): Promise<ForwardLine> {
  const outcome = await postWebhook(
    target.url,
    signedDelivery(
      {
        id: event.id,
        type: event.type,
        created_at: event.created_at,
        mode: event.mode,
        data: event.data,
      },
      secret,
    ),
    {
      allowlist: target.allowlist,
      httpsOnly: target.httpsOnly,
      timeoutMs: POST_TIMEOUT_MS,
      maxBodyBytes: 64 * 1024,
    },
  );
  return {
    id: event.id,
    type: event.type,
    status_code: outcome.statusCode,
    ...(outcome.error === null ? {} : { error: outcome.error }),
  };
}

/** Resolves when `signal` aborts (never rejects). */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

const pause = (ms: number, signal: AbortSignal) =>
  sleep(ms, undefined, { signal }).catch(() => undefined);

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Prints the secret, then forwards each new event and prints its line, until `signal` aborts.
 * Bad arguments (an unknown application, a refused URL) throw UsageError before the secret.
 */
export async function listenForWebhooks(options: ListenOptions, deps: ListenDeps): Promise<void> {
  const { pool, signal, out, warn } = deps;
  if (!(await findApplication(pool, options.applicationId))) {
    throw new UsageError(`no application ${options.applicationId}`);
  }
  const target = await checkTarget(options.forwardTo, options.mode, deps.allowlist);
  const feed = new EventFeed(pool, {
    applicationId: options.applicationId,
    mode: options.mode,
    types: options.types,
  });
  const registration = {
    id: randomUUID(),
    applicationId: options.applicationId,
    mode: options.mode,
  };
  const { leaseSeconds, safetyReadSeconds } = deps.timing;
  await pruneEventListeners(pool);
  await renewEventListener(pool, registration, leaseSeconds);
  const heartbeat = new AbortController();
  const renewing = renewEvery(pool, registration, leaseSeconds, heartbeat.signal, warn);
  const listenUrl = new URL(deps.databaseUrl);
  listenUrl.searchParams.set('application_name', LISTEN_APPLICATION_NAME);
  const on = {
    channel: LISTENERS_CHANNEL,
    payload: listenersPayload(options.applicationId, options.mode),
  };
  const connect = () => listenForEvents(listenUrl.toString(), on);
  let listener: EventListener | undefined;
  try {
    listener = await connect();
    // Listening before the first read: an event committed in between is read, not missed.
    await feed.start();
    const secret = newWebhookSecret();
    out(secret);
    warn(
      `Forwarding new ${options.mode} events of application ${options.applicationId} to ` +
        `${options.forwardTo}; stop with Ctrl-C`,
    );
    const stop = aborted(signal);
    while (!signal.aborted) {
      if (!listener || listener.lost()) {
        await listener?.close();
        listener = await connect().catch((error: unknown) => {
          warn(`listen: cannot listen for events (${message(error)}); retrying`);
          return undefined;
        });
        if (!listener) {
          await pause(RETRY_MS, signal);
          continue;
        }
      }
      let events: readonly EventRow[];
      try {
        events = await feed.next();
      } catch (error) {
        warn(`listen: cannot read events (${message(error)}); retrying`);
        await pause(RETRY_MS, signal);
        continue;
      }
      for (const event of events) {
        const line = await Promise.race([forward(event, secret, target), stop]);
        if (!line) break;
        out(JSON.stringify(line));
      }
      await listener.wait(safetyReadSeconds * 1000, signal);
    }
  } finally {
    heartbeat.abort();
    await renewing;
    await listener?.close();
    await removeEventListener(pool, registration.id).catch((error: unknown) =>
      warn(`listen: cannot remove its registration (${message(error)}); it expires by itself`),
    );
  }
}

/**
 * Renews the registration every quarter of its lifetime until `signal` aborts: a few failed
 * renewals in a row (a database restart) still leave it live.
 */
async function renewEvery(
  pool: DatabasePool,
  registration: Parameters<typeof renewEventListener>[1],
  leaseSeconds: number,
  signal: AbortSignal,
  warn: (line: string) => void,
): Promise<void> {
  for (;;) {
    await pause((leaseSeconds * 1000) / 4, signal);
    if (signal.aborted) return;
    await renewEventListener(pool, registration, leaseSeconds).catch((error: unknown) =>
      warn(`listen: cannot renew its registration (${message(error)}); retrying`),
    );
  }
}
