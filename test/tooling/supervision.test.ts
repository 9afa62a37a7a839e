import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'slonik';
import { z } from 'zod';
import { createDatabasePool, type DatabasePool } from '../../src/db/pool';
import { freePort } from '../../src/worker/ports';
import { commandLine, isAlive, readPidFile, waitFor } from '../../tools/harness/processes';
import { assertLedgerInvariant, balanceOf } from '../support/database';
import {
  clientFor,
  createFundedWallet,
  createUserWithWallet,
  postUntilDefinitive,
  TRANSFER,
  type ApiClient,
} from '../support/http';
import type { TestApp } from '../support/engine';

/**
 * Supervision (docs/operations.md "Supervision and outages"): `npm start` on ports and a
 * data folder of its own; killed servers come back with the API and the worker, a killed start's
 * Postgres is stopped by the next start, and SIGTERM stops every child.
 */
jest.setTimeout(180_000);

const root = path.resolve(__dirname, '..', '..');

type Start = { child: ChildProcess; output: () => string; url: string };

let dir: string;
let env: NodeJS.ProcessEnv;
let pgPort: number;
const started: ChildProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'wallet-start-'));
  await chmod(dir, 0o755);
  pgPort = await freePort();
  const { DATABASE_URL: _db, TEMPORAL_ADDRESS: _temporal, ...inherited } = process.env;
  env = {
    ...inherited,
    DATA_DIR: path.join(dir, 'data'),
    PORT: String(await freePort()),
    EMBEDDED_PG_PORT: String(pgPort),
    TEMPORAL_PORT: String(await freePort()),
    TEMPORAL_UI_PORT: String(await freePort()),
    TEMPORAL_WORKFLOW_BUNDLE: process.env.TEST_WORKFLOW_BUNDLE,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
  };
});

afterAll(async () => {
  for (const child of started) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  }
  await waitFor(() => started.every((c) => c.exitCode !== null || c.signalCode !== null), 10_000);
  // Left only by a failed test; a pid reused by another process is not this test's to kill.
  for (const pid of [postmasterPid(), temporalPid()]) {
    if (pid !== null && isAlive(pid) && commandLine(pid).includes(dir))
      process.kill(pid, 'SIGKILL');
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * Starts `tools/scripts/start.ts` and waits for its banner (the API's address). `ownGroup`: in a
 * process group of its own, as a shell runs it, so that the group can be signalled.
 */
async function start(ownGroup = false): Promise<Start> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'tools/scripts/start.ts'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: ownGroup,
  });
  started.push(child);
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const banner = /API {10}(http:\/\/\S+)/;
  const up = await waitFor(() => banner.test(output) || child.exitCode !== null, 120_000);
  if (!up || child.exitCode !== null) throw new Error(`npm start did not come up:\n${output}`);
  return { child, output: () => output, url: banner.exec(output)![1]! };
}

const databaseUrl = () => `postgres://postgres:postgres@127.0.0.1:${pgPort}/wallet`;
const dataFile = (...parts: string[]) => path.join(env.DATA_DIR!, ...parts);
const postmasterPid = () => (env ? readPidFile(dataFile('pg', 'postmaster.pid')) : null);
const temporalPid = () => (env ? readPidFile(dataFile('temporal.pid')) : null);

/** Waits until `read` names a live process other than `old`. */
async function replaced(read: () => number | null, old: number): Promise<number> {
  expect(await waitFor(() => read() !== old && isAlive(read() ?? 0), 60_000)).toBe(true);
  return read()!;
}

/** `start` and `children` all gone within a few seconds, and `start` exited with status 0. */
async function expectStopped(stopped: Start, children: number[]): Promise<void> {
  const { child } = stopped;
  const gone = await waitFor(() => child.exitCode !== null && !children.some(isAlive), 5_000);
  expect({ gone, code: child.exitCode, alive: children.filter(isAlive) }).toEqual({
    gone: true,
    code: 0,
    alive: [],
  });
}

async function demoClient(url: string): Promise<ApiClient> {
  const demo = JSON.parse(await readFile(dataFile('demo-credentials.json'), 'utf8')) as {
    api_key: string;
    secret_key: string;
  };
  const credentials = { apiKey: demo.api_key, secretKey: demo.secret_key };
  return clientFor(url, { credentials: { test: credentials, live: credentials } } as TestApp);
}

describe('npm start supervises what it started', () => {
  let first: Start;
  let api: ApiClient;
  let pool: DatabasePool;
  let from: string;
  let to: string;

  beforeAll(async () => {
    first = await start();
    api = await demoClient(first.url);
    pool = await createDatabasePool(databaseUrl(), { maximumPoolSize: 2 });
    from = (await createFundedWallet(api, pool, 10_000n)).walletId;
    to = (await createUserWithWallet(api)).walletId;
  });
  afterAll(async () => pool?.end());

  it('runs the dev server on a file in WAL mode (the CLI took the durable flags)', () => {
    expect(existsSync(dataFile('temporal.sqlite'))).toBe(true);
    expect(existsSync(dataFile('temporal.sqlite-wal'))).toBe(true);
    expect(commandLine(temporalPid()!)).toContain(
      'journal_mode=wal --sqlite-pragma synchronous=normal',
    );
  });

  it('the engine reaches its embedded Postgres through the Unix socket in the data folder', async () => {
    expect(existsSync(dataFile('pg', `.s.PGSQL.${pgPort}`))).toBe(true);
    // This test's own pool comes over TCP (127.0.0.1 stays open); the engine's sessions do not.
    const sessions = await pool.one(sql.type(z.object({ socket: z.number(), tcp: z.number() }))`
      SELECT count(*) FILTER (WHERE client_addr IS NULL)::int AS socket,
             count(*) FILTER (WHERE client_addr IS NOT NULL AND pid <> pg_backend_pid())::int AS tcp
      FROM pg_stat_activity WHERE datname = 'wallet' AND backend_type = 'client backend'`);
    expect(sessions.socket).toBeGreaterThan(0);
    expect(sessions.tcp).toBeLessThanOrEqual(1); // the pool's other connection, if it opened one
  });

  it('restarts a killed Temporal dev server; payments go through again', async () => {
    const old = temporalPid()!;
    process.kill(old, 'SIGKILL');
    await replaced(temporalPid, old);
    const reply = await postUntilDefinitive(
      api,
      TRANSFER,
      { from_wallet_id: from, to_wallet_id: to, amount: 1 },
      't1',
    );
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ status: 'completed', amount: 1 });
    expect(await balanceOf(pool, from)).toBe(9_900n);
    expect(first.output()).toMatch(/Temporal dev server exited unexpectedly/);
    // The supervisor says so once its own readiness check passes, which may follow the payment.
    await waitFor(() => /Temporal dev server restarted/.test(first.output()), 30_000);
    expect(first.output()).toMatch(/Temporal dev server restarted/);
  });

  it('restarts a killed Postgres; the API and the worker reconnect', async () => {
    const old = postmasterPid()!;
    process.kill(old, 'SIGKILL');
    await replaced(postmasterPid, old);
    const reply = await postUntilDefinitive(
      api,
      TRANSFER,
      { from_wallet_id: from, to_wallet_id: to, amount: 2 },
      't2',
    );
    expect(reply.status).toBe(200);
    expect(await balanceOf(pool, from)).toBe(9_700n);
    expect(await balanceOf(pool, to)).toBe(300n);
    await assertLedgerInvariant(pool);
    await waitFor(() => /embedded Postgres restarted/.test(first.output()), 30_000);
    expect(first.output()).toMatch(/embedded Postgres restarted/);
  });

  it('stops the Postgres a killed start left behind, then SIGTERM stops every child', async () => {
    await pool.end();
    const leftover = postmasterPid()!;
    const leftoverTemporal = temporalPid()!;
    first.child.kill('SIGKILL');
    await waitFor(() => first.child.signalCode !== null, 10_000);
    expect(isAlive(leftover)).toBe(true);

    const second = await start();
    expect(second.output()).toMatch(
      new RegExp(
        `stopping the embedded Postgres left running by an earlier start \\(pid ${leftover}\\)`,
      ),
    );
    expect(isAlive(leftover)).toBe(false);
    expect(isAlive(leftoverTemporal)).toBe(false);
    const children = [postmasterPid()!, temporalPid()!];
    expect(children.every(isAlive)).toBe(true);
    // The data is the same: the balance survived both kills and the new start.
    const reply = await postUntilDefinitive(
      await demoClient(second.url),
      TRANSFER,
      { from_wallet_id: from, to_wallet_id: to, amount: 3 },
      't3',
    );
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ status: 'completed', amount: 3 });
    const again = await createDatabasePool(databaseUrl(), { maximumPoolSize: 1 });
    try {
      expect(await balanceOf(again, from)).toBe(9_400n);
      expect(await balanceOf(again, to)).toBe(600n);
      await assertLedgerInvariant(again);
    } finally {
      await again.end();
    }

    second.child.kill('SIGTERM');
    await expectStopped(second, children);
  });

  it('SIGINT to the process group (Ctrl-C) stops every child, none restarted', async () => {
    const third = await start(true);
    const children = [postmasterPid()!, temporalPid()!];
    expect(children.every(isAlive)).toBe(true);
    // The servers get the signal too, and stop by themselves: that is not a death to restart.
    process.kill(-third.child.pid!, 'SIGINT');
    await expectStopped(third, children);
    expect(third.output()).not.toMatch(/restarting/);
    expect([postmasterPid(), temporalPid()].filter((pid) => pid !== null && isAlive(pid))).toEqual(
      [],
    );
  });
});
