import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'slonik';
import { z } from 'zod';
import { createMaintenanceActivities } from '../../src/activities/maintenance';
import { LISTEN_APPLICATION_NAME } from '../../tools/cli/webhooks-listen';
import { LISTENERS_CHANNEL } from '../../src/db/event-listeners';
import { listenForEvents } from '../../src/db/webhook-listener';
import { EVENT_TYPES } from '../../src/domain/events';
import { createTestApp } from '../support/engine';
import { clientFor, createFundedWallet, createUserWithWallet, transfer } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import { startReceiver, verify, type Receiver, type Received } from '../support/webhook-receiver';

/**
 * `npm run --silent cli -- webhooks listen` run as a child process exactly as documented
 * in docs/cli.md; a loopback receiver verifies every request with `standardwebhooks` and the secret
 * the command printed. Only loopback addresses are ever contacted.
 */

jest.setTimeout(180_000);

const root = path.resolve(__dirname, '..', '..');
// The relay delivers to the subscription below too: its endpoint is on loopback.
const engine = useTestEngine({ env: { WEBHOOK_PRIVATE_ALLOWLIST: '127.0.0.1/32' } });
const { app, api, live } = useTestApp(engine);
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  // A subscription selecting every kind: the events table then NOTIFYs for this application.
  const res = await api.post('/api/v1/webhooks/subscriptions', {
    url: receiver.url('/subscription'),
    events: EVENT_TYPES,
  });
  expect(res.status).toBe(201);
});
afterAll(async () => receiver?.close());

type ListenLine = { id: string; type: string; status_code: number | null; error?: string };

type Listening = {
  secret: string;
  lines: ListenLine[];
  /** The line of the event `id`, waiting for it as long as `timeoutMs`. */
  lineOf: (id: string, timeoutMs?: number) => Promise<ListenLine>;
  /** Sends `signal` to the command's own process (npm, its parent, dies of a signal itself). */
  stop: (signal?: NodeJS.Signals) => Promise<{ code: number | null; stdout: string }>;
};

const running = new Set<ChildProcessWithoutNullStreams>();
afterEach(() => {
  for (const child of running) process.kill(-child.pid!, 'SIGKILL');
  running.clear();
});

function spawnCli(
  args: string[],
  env: Record<string, string> = {},
): ChildProcessWithoutNullStreams {
  const child = spawn('npm', ['run', '--silent', 'cli', '--', ...args], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: engine.config.database.url, LOG_LEVEL: 'info', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  running.add(child);
  child.once('close', () => running.delete(child));
  return child;
}

/** The node process npm started for the command, in npm's process group. */
function commandPid(group: number): number {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,pgid=,args='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((row) => row.trim().split(/\s+/));
  const node = rows.find(
    ([, pgid, command, ...args]) =>
      pgid === String(group) &&
      /(^|\/)node$/.test(command ?? '') &&
      args.includes('tools/cli/main.ts'),
  );
  if (!node) throw new Error(`no command process in group ${group}`);
  return Number(node[0]);
}

/** The command until it ends: its status and both outputs. */
function runToEnd(
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(args);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/** Starts the command and answers once it printed its secret (it then forwards what commits). */
async function listen(args: string[], env: Record<string, string> = {}): Promise<Listening> {
  const child = spawnCli(['webhooks', 'listen', ...args], env);
  let stdout = '';
  let stderr = '';
  const lines: ListenLine[] = [];
  let secret: string | undefined;
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
  await new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const complete = stdout.split('\n').slice(0, -1);
      if (secret === undefined && complete.length > 0) {
        secret = complete[0]!;
        resolve();
      }
      lines.length = 0;
      for (const line of complete.slice(1)) lines.push(JSON.parse(line) as ListenLine);
    });
    void closed.then((code) => reject(new Error(`listen ended (${code}) early: ${stderr}`)));
  });
  return {
    secret: secret!,
    lines,
    lineOf: async (id, timeoutMs = 30_000) => {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const found = lines.find((l) => l.id === id);
        if (found) return found;
        if (Date.now() > until) throw new Error(`no line for ${id}: ${stdout}\n${stderr}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    stop: async (signal = 'SIGINT') => {
      process.kill(commandPid(child.pid!), signal);
      return { code: await closed, stdout };
    },
  };
}

const funded = async (client = api) =>
  (await createFundedWallet(client, engine.pool, 100_000n)).walletId;

/** A completed transfer of `client`'s application and mode; answers its event. */
async function transferEvent(client = api): Promise<string> {
  const to = (await createUserWithWallet(client)).walletId;
  const payment = await transfer<{ id: string }>(client, await funded(client), to, 1.25);
  return eventOf(payment.id, 'transfer.completed');
}

/** An escrow hold; answers its `escrow.held` event. */
async function holdEvent(): Promise<string> {
  const hold = await api.post('/api/v1/escrow/hold', { wallet_id: await funded(), amount: 3 });
  expect(hold.status).toBe(200);
  return eventOf(hold.body.id as string, 'escrow.held');
}

function eventOf(transactionId: string, type: string): Promise<string> {
  return engine.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM events WHERE transaction_id = ${transactionId} AND type = ${type}`);
}

const at = (path: string) => (r: Received) => r.path === path;

/** The `webhooks listen` registrations of an application (migration 0022). */
const registrations = (applicationId: string) =>
  engine.pool.any(sql.type(
    z.object({ id: z.string(), mode: z.string(), expires_at: z.number(), live: z.boolean() }),
  )`
    SELECT id, mode, extract(epoch FROM expires_at)::float8 AS expires_at, expires_at > now() AS live
    FROM event_listeners WHERE application_id = ${applicationId}`);

/** The safety read far beyond any test: only a notification can bring an event in time. */
const NO_SAFETY_READ = { WEBHOOKS_LISTEN_SAFETY_READ_SECONDS: '3600' };

/** Whether `wait` ended before its timeout, i.e. a notification came. */
async function notified(wait: (timeoutMs: number) => Promise<void>): Promise<boolean> {
  const start = Date.now();
  await wait(1_000);
  return Date.now() - start < 900;
}

describe('npm run --silent cli -- webhooks listen', () => {
  it('forwards each new event once, signed with the secret it printed first, one line each', async () => {
    const before = await transferEvent();
    const session = await listen([
      '--app',
      app.id,
      '--mode',
      'test',
      '--forward-to',
      receiver.url('/listen'),
    ]);
    expect(session.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const other = await createTestApp(engine.pool);
    const foreign = [await transferEvent(clientFor(engine.url, other)), await transferEvent(live)];
    const ours = [await transferEvent(), await holdEvent(), await transferEvent()];
    const types = ['transfer.completed', 'escrow.held', 'transfer.completed'];

    for (const [i, id] of ours.entries()) {
      expect(await session.lineOf(id)).toEqual({ id, type: types[i], status_code: 200 });
      const request = await receiver.waitFor((r) => at('/listen')(r) && r.payload?.id === id);
      // Verified as a merchant does, with the printed secret: headers, timestamp and body.
      expect(verify(session.secret, request)).toMatchObject({ id, type: types[i], mode: 'test' });
      expect(request.headers['webhook-id']).toBe(id);
    }
    const { code, stdout } = await session.stop('SIGINT');
    expect(code).toBe(0);

    // Once each, nothing from before it started, from another application or from Live Mode.
    const forwarded = receiver.received.filter(at('/listen')).map((r) => r.payload?.id);
    expect(forwarded).toEqual(ours);
    expect(session.lines.map((l) => l.id)).toEqual(ours);
    expect(forwarded).not.toContain(before);
    for (const id of foreign) expect(forwarded).not.toContain(id);
    // Standard output: the secret alone, then exactly one JSON line per event.
    expect(stdout.split('\n')).toEqual([
      session.secret,
      ...ours.map((id, i) => JSON.stringify({ id, type: types[i], status_code: 200 })),
      '',
    ]);
  });

  it('forwards only the kinds --events names', async () => {
    const session = await listen([
      '--app',
      app.id,
      '--mode',
      'test',
      '--forward-to',
      receiver.url('/filtered'),
      '--events',
      'escrow.held,escrow.released',
    ]);
    const skipped = await transferEvent();
    const held = await holdEvent();
    expect(await session.lineOf(held)).toEqual({ id: held, type: 'escrow.held', status_code: 200 });
    // The transfer committed before the hold, so the read that found the hold saw it too.
    expect(session.lines.map((l) => l.id)).toEqual([held]);
    const requests = receiver.received.filter(at('/filtered'));
    expect(requests.map((r) => r.payload?.id)).toEqual([held]);
    expect(requests.map((r) => r.payload?.id)).not.toContain(skipped);
    expect(verify(session.secret, requests[0]!)).toMatchObject({ id: held });
    expect((await session.stop('SIGTERM')).code).toBe(0);
  });

  it('prints the status a failing receiver answered, with the error', async () => {
    receiver.answer((r) => (r.path === '/failing' ? 500 : 200));
    const session = await listen([
      '--app',
      app.id,
      '--mode',
      'test',
      '--forward-to',
      receiver.url('/failing'),
    ]);
    const id = await transferEvent();
    expect(await session.lineOf(id)).toEqual({
      id,
      type: 'transfer.completed',
      status_code: 500,
      error: 'http_status',
    });
    const request = await receiver.waitFor((r) => at('/failing')(r) && r.payload?.id === id);
    expect(verify(session.secret, request)).toMatchObject({ id });
    // One attempt: the command does not retry.
    expect(receiver.received.filter(at('/failing'))).toHaveLength(1);
    expect((await session.stop()).code).toBe(0);
  });

  it('prints null and the reason when nothing answers at the URL', async () => {
    const closed = await startReceiver();
    const url = closed.url('/gone');
    await closed.close();
    const session = await listen(['--app', app.id, '--mode', 'test', '--forward-to', url]);
    const id = await transferEvent();
    const line = await session.lineOf(id);
    expect(line).toEqual({
      id,
      type: 'transfer.completed',
      status_code: null,
      error: 'connection_refused',
    });
    expect((await session.stop()).code).toBe(0);
  });

  it('forwards Live Mode events to loopback over http, and only those', async () => {
    const session = await listen([
      '--app',
      app.id,
      '--mode',
      'live',
      '--forward-to',
      receiver.url('/live'),
    ]);
    const testEvent = await transferEvent(api);
    const id = await transferEvent(live);
    expect(await session.lineOf(id)).toEqual({ id, type: 'transfer.completed', status_code: 200 });
    const requests = receiver.received.filter(at('/live'));
    expect(requests.map((r) => r.payload?.id)).toEqual([id]);
    expect(requests.map((r) => r.payload?.id)).not.toContain(testEvent);
    expect(verify(session.secret, requests[0]!)).toMatchObject({ id, mode: 'live' });
    expect((await session.stop()).code).toBe(0);
  });

  it('forwards at once the events of an application without subscriptions, while registered', async () => {
    const quiet = await createTestApp(engine.pool);
    const client = clientFor(engine.url, quiet);
    const databaseUrl = engine.config.database.url!;
    const relay = await listenForEvents(databaseUrl);
    try {
      const session = await listen(
        ['--app', quiet.id, '--mode', 'test', '--forward-to', receiver.url('/quiet')],
        NO_SAFETY_READ,
      );
      const [registered] = await registrations(quiet.id);
      expect(registered).toMatchObject({ mode: 'test', live: true });
      await relay.wait(0); // forget what came before
      for (let i = 0; i < 2; i += 1) {
        const id = await transferEvent(client);
        // Well within the hour of the safety read: the registration's notification woke it.
        expect(await session.lineOf(id, 10_000)).toEqual({
          id,
          type: 'transfer.completed',
          status_code: 200,
        });
        const request = await receiver.waitFor((r) => at('/quiet')(r) && r.payload?.id === id);
        expect(verify(session.secret, request)).toMatchObject({ id });
      }
      // The listeners' channel is its own: the relay, with nothing to deliver, slept on.
      expect(await notified(relay.wait)).toBe(false);
      expect((await session.stop('SIGINT')).code).toBe(0);
      // A clean exit deletes the registration: the events notify no one again.
      expect(await registrations(quiet.id)).toEqual([]);
    } finally {
      await relay.close();
    }
  });

  it('renews its registration while it runs; killed, the registration expires and is pruned', async () => {
    const quiet = await createTestApp(engine.pool);
    const client = clientFor(engine.url, quiet, 'live');
    const session = await listen(
      ['--app', quiet.id, '--mode', 'live', '--forward-to', receiver.url('/killed')],
      { ...NO_SAFETY_READ, WEBHOOKS_LISTEN_LEASE_SECONDS: '2' },
    );
    const [first] = await registrations(quiet.id);
    expect(first).toMatchObject({ mode: 'live', live: true });
    await sleep(3_000);
    // Past its first lifetime, still live: renewed.
    const [renewed] = await registrations(quiet.id);
    expect(renewed).toMatchObject({ id: first!.id, live: true });
    expect(renewed!.expires_at).toBeGreaterThan(first!.expires_at);
    const id = await transferEvent(client);
    expect(await session.lineOf(id, 10_000)).toMatchObject({ id, status_code: 200 });

    await session.stop('SIGKILL');
    const listener = await listenForEvents(engine.config.database.url!, {
      channel: LISTENERS_CHANNEL,
    });
    try {
      await sleep(2_500);
      // Nothing deleted it, but it expired: an event of its scope notifies no one.
      expect(await registrations(quiet.id)).toEqual([
        expect.objectContaining({ id: first!.id, live: false }),
      ]);
      await listener.wait(0);
      await transferEvent(client);
      expect(await notified(listener.wait)).toBe(false);
    } finally {
      await listener.close();
    }
    const pruned = await createMaintenanceActivities(engine).pruneExpiredRows();
    expect(pruned.eventListeners).toBeGreaterThanOrEqual(1);
    expect(await registrations(quiet.id)).toEqual([]);
  });

  it('listens again after its connection is cut, and misses or repeats nothing', async () => {
    const session = await listen([
      '--app',
      app.id,
      '--mode',
      'test',
      '--forward-to',
      receiver.url('/cut'),
    ]);
    const first = await transferEvent();
    await session.lineOf(first);
    const listeners = () =>
      engine.pool.anyFirst(sql.type(z.object({ pid: z.number() }))`
        SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND query = 'LISTEN event_listeners'
          AND application_name = ${LISTEN_APPLICATION_NAME}`);
    const cut = await listeners();
    expect(cut).toHaveLength(1);
    await engine.pool.query(sql.unsafe`
      SELECT pg_terminate_backend(pid) FROM pg_stat_activity
      WHERE pid = ANY (${sql.array(cut, 'int4')})`);
    const second = await transferEvent();
    const third = await transferEvent();
    await session.lineOf(second);
    await session.lineOf(third);
    const renewed = await listeners();
    expect(renewed).toHaveLength(1);
    expect(renewed).not.toEqual(cut);
    expect((await session.stop()).code).toBe(0);
    const forwarded = receiver.received.filter(at('/cut')).map((r) => r.payload?.id);
    expect(forwarded).toEqual([first, second, third]);
    expect(session.lines.map((l) => l.id)).toEqual([first, second, third]);
  });

  describe('refuses bad arguments: status 2, a reason on standard error, nothing on standard output', () => {
    const base = (overrides: Record<string, string>) => {
      const args: Record<string, string> = {
        '--app': app.id,
        '--mode': 'test',
        '--forward-to': receiver.url('/never'),
        ...overrides,
      };
      return ['webhooks', 'listen', ...Object.entries(args).flat()];
    };
    it.each([
      ['an unknown kind in --events', { '--events': 'escrow.held,payment.made' }, '--events'],
      ['an empty --events', { '--events': '' }, '--events'],
      ['a bad --mode', { '--mode': 'prod' }, '--mode'],
      ['an --app that is no id', { '--app': 'acme' }, '--app'],
      [
        'an unknown application',
        { '--app': '00000000-0000-4000-8000-000000000000' },
        'no application',
      ],
      ['a scheme that is not http', { '--forward-to': 'ftp://127.0.0.1/hook' }, '--forward-to'],
    ])('%s', async (_name, overrides, reason) => {
      const run = await runToEnd(base(overrides));
      expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 2, stdout: '' });
      expect(run.stderr).toContain(reason);
    });
    it('no traffic reached the receiver', () => {
      expect(receiver.received.filter(at('/never'))).toEqual([]);
    });
  });
});
