import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import tls from 'node:tls';
import path from 'node:path';
import { isGrpcServiceError } from '@temporalio/client';
import { freePort } from '../../src/worker/ports';
import {
  checkTemporalAccepts,
  connectTemporal,
  temporalConnectionOptions,
} from '../../src/temporal/connection';
import { assertLedgerInvariant, balanceOf, eventsOf } from '../support/database';
import { createFundedWallet, createUserWithWallet, transfer } from '../support/http';
import { useTestApp, useTestEngine } from '../support/hooks';
import {
  makeCertificates,
  nginxPath,
  startTlsTerminator,
  type Certificates,
  type TlsTerminator,
} from '../support/tls-terminator';
import { waitFor, within } from '../support/wait';

const root = path.resolve(__dirname, '../..');
const nginx = nginxPath();
const API_KEY = 'test-api-key-8c1f';
/** gRPC PERMISSION_DENIED: what the terminator's 403 becomes. */
const PERMISSION_DENIED = 7;

if (!nginx) {
  process.stdout.write(
    'temporal-tls: skipped, nginx is not installed (tools/scripts/ensure-deps.sh --test installs it as root)\n',
  );
}
const describeWithNginx = nginx ? describe : describe.skip;

let dir = '';
let certs: Certificates;
let terminator: TlsTerminator;

type Exit = { code: number | null; stderr: string };

/**
 * `npm run worker` or `npm run api` as a child process with `env`; answers once it exits (or is
 * stopped after `until` appears in its output, for a process that must start).
 */
async function runProcess(
  entry: 'src/worker/main.ts' | 'src/api/main.ts',
  env: Record<string, string>,
  until?: string,
): Promise<Exit> {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATA_DIR: path.join(dir, 'data'),
      HOST: '127.0.0.1',
      PORT: '0',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:1/unused',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (until) {
    await waitFor(() => stderr.includes(until) || child.exitCode !== null, 60_000);
    child.kill('SIGTERM');
  }
  const code = await within(exited, 60_000, 'running' as const);
  if (code === 'running') {
    child.kill('SIGKILL');
    await exited;
    throw new Error(`${entry} did not exit:\n${stderr}`);
  }
  return { code, stderr };
}

/** The lines a process wrote to standard error. */
const linesOf = (exit: Exit) => exit.stderr.trim().split('\n');

describeWithNginx('Temporal behind a TLS terminator', () => {
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'temporal-tls-'));
    certs = await makeCertificates(path.join(dir, 'certs'));
    terminator = await startTlsTerminator({
      nginx: nginx!,
      dir,
      upstream: process.env.TEST_TEMPORAL_ADDRESS!,
      certificates: certs,
      apiKey: API_KEY,
    });
  });
  afterAll(async () => {
    await terminator?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  describe('with a client certificate (mutual TLS)', () => {
    const engine = useTestEngine(() => ({
      env: {
        TEMPORAL_ADDRESS: terminator.mtlsAddress,
        TEMPORAL_TLS_CERT: certs.clientCert,
        TEMPORAL_TLS_KEY: certs.clientKey,
        TEMPORAL_TLS_CA: certs.ca,
        TEMPORAL_TLS_SERVER_NAME: 'localhost',
      },
    }));
    const { api } = useTestApp(engine);
    const { api: usd } = useTestApp(engine, {
      currency: 'USD',
      settings: { feeBps: { card: 150 } },
    });

    it('runs a transfer through the terminator: one balanced ledger transaction', async () => {
      expect(engine.config.temporal.address).toBe(terminator.mtlsAddress);
      const sender = await createFundedWallet(api, engine.pool, 10_000n);
      const recipient = await createUserWithWallet(api);
      const payment = await transfer(api, sender.walletId, recipient.walletId, 40);
      expect(payment).toMatchObject({ status: 'completed', amount: 40 });
      expect(await balanceOf(engine.pool, sender.walletId)).toBe(6_000n);
      expect(await balanceOf(engine.pool, recipient.walletId)).toBe(4_000n);
      await assertLedgerInvariant(engine.pool);
    });

    it('holds in escrow and releases to the recipient through the terminator', async () => {
      const sender = await createFundedWallet(api, engine.pool, 10_000n);
      const recipient = await createUserWithWallet(api);
      const hold = await api.post('/api/v1/escrow/hold', {
        wallet_id: sender.walletId,
        amount: 25,
      });
      expect(hold.status).toBe(200);
      expect(hold.body).toMatchObject({ status: 'held', escrow_amount: 25 });
      expect(await balanceOf(engine.pool, sender.walletId)).toBe(7_500n);
      const release = await api.post(`/api/v1/escrow/${hold.body.id}/release`, {
        recipient_wallet_id: recipient.walletId,
      });
      expect(release.status).toBe(200);
      expect(release.body).toMatchObject({
        transaction_type: 'escrow_release',
        status: 'completed',
        escrow_amount: 0,
      });
      const paid = BigInt(Math.round(release.body.amount * 100));
      const fee = BigInt(Math.round(release.body.application_fee * 100));
      expect(paid + fee).toBe(2_500n);
      expect(await balanceOf(engine.pool, recipient.walletId)).toBe(paid);
      expect((await eventsOf(engine.pool, release.body.id)).map((e) => e.type)).toEqual([
        'escrow.released',
      ]);
      await assertLedgerInvariant(engine.pool);
    });

    it('charges a card deposit through the terminator and credits the wallet', async () => {
      const { walletId } = await createUserWithWallet(usd);
      const deposit = await usd.post('/api/v1/transactions/wallet/card-deposit', {
        wallet_id: walletId,
        amount: 100,
        payment_method_id: 'pm_card_visa',
      });
      expect(deposit.status).toBe(200);
      expect(deposit.body).toMatchObject({
        transaction_type: 'card_deposit',
        status: 'completed',
        amount: 100,
        application_fee: 1.5,
      });
      expect(await balanceOf(engine.pool, walletId)).toBe(10_000n);
      expect((await eventsOf(engine.pool, deposit.body.id)).map((e) => e.type)).toEqual([
        'deposit.completed',
      ]);
      await assertLedgerInvariant(engine.pool);
    });

    it('starts the API while a TLS Temporal does not answer at all, as without TLS', async () => {
      const exit = await runProcess(
        'src/api/main.ts',
        {
          DATABASE_URL: engine.config.database.url!,
          TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`,
          TEMPORAL_TLS_CERT: certs.clientCert,
          TEMPORAL_TLS_KEY: certs.clientKey,
          TEMPORAL_TLS_CA: certs.ca,
        },
        'api listening',
      );
      expect(exit.stderr).toContain('api listening');
      expect(exit.code).toBe(0);
    });
  });

  describe('refused at start with one line naming the setting', () => {
    // The server's name, not its address: Node warns on a TLS server name that is an address.
    const mtls = () => ({
      TEMPORAL_ADDRESS: terminator.mtlsAddress,
      TEMPORAL_TLS_CA: certs.ca,
      TEMPORAL_TLS_SERVER_NAME: 'localhost',
    });

    it('stops a worker without a client certificate', async () => {
      const exit = await runProcess('src/worker/main.ts', mtls());
      expect(exit.code).toBe(1);
      expect(linesOf(exit)).toEqual([
        expect.stringMatching(
          /^worker failed: Temporal refused the connection: check TEMPORAL_TLS_CERT and TEMPORAL_TLS_CA \(.+\)$/,
        ),
      ]);
    });

    it('stops a worker and the API with a client certificate of another CA', async () => {
      const other = {
        ...mtls(),
        TEMPORAL_TLS_CERT: certs.otherClientCert,
        TEMPORAL_TLS_KEY: certs.otherClientKey,
      };
      const [worker, api] = await Promise.all([
        runProcess('src/worker/main.ts', other),
        runProcess('src/api/main.ts', other),
      ]);
      expect(worker.code).toBe(1);
      expect(linesOf(worker)).toEqual([
        expect.stringMatching(
          /^worker failed: Temporal refused the connection: check TEMPORAL_TLS_CERT/,
        ),
      ]);
      expect(api.code).toBe(1);
      expect(linesOf(api)).toEqual([
        expect.stringMatching(
          /^api failed to start: Temporal refused the connection: check TEMPORAL_TLS_CERT/,
        ),
      ]);
    });

    it('stops a worker whose certificate file cannot be read, or whose CA did not sign the server', async () => {
      const missing = path.join(dir, 'no-such-cert.pem');
      const [unreadable, untrusted] = await Promise.all([
        runProcess('src/worker/main.ts', {
          ...mtls(),
          TEMPORAL_TLS_CERT: missing,
          TEMPORAL_TLS_KEY: certs.clientKey,
        }),
        runProcess('src/worker/main.ts', {
          ...mtls(),
          TEMPORAL_TLS_CERT: certs.clientCert,
          TEMPORAL_TLS_KEY: certs.clientKey,
          TEMPORAL_TLS_CA: certs.otherCa,
        }),
      ]);
      expect(unreadable.code).toBe(1);
      expect(linesOf(unreadable)).toEqual([
        `worker failed: Invalid configuration: TEMPORAL_TLS_CERT: cannot read ${missing}: ENOENT`,
      ]);
      expect(untrusted.code).toBe(1);
      expect(linesOf(untrusted)).toEqual([
        expect.stringMatching(
          /^worker failed: Temporal's certificate is not trusted: check TEMPORAL_TLS_CA and TEMPORAL_TLS_SERVER_NAME \(.+\)$/,
        ),
      ]);
    });
  });

  describe('with an API key', () => {
    const engine = useTestEngine(() => ({
      env: {
        TEMPORAL_ADDRESS: terminator.apiKeyAddress,
        TEMPORAL_TLS_CA: certs.ca,
        TEMPORAL_API_KEY: API_KEY,
      },
    }));
    const { api } = useTestApp(engine);

    it('sends authorization: Bearer <key> on every call, the worker and the API alike', async () => {
      const sender = await createFundedWallet(api, engine.pool, 10_000n);
      const recipient = await createUserWithWallet(api);
      await transfer(api, sender.walletId, recipient.walletId, 12);
      expect(await balanceOf(engine.pool, recipient.walletId)).toBe(1_200n);
      await assertLedgerInvariant(engine.pool);
      const calls = await terminator.apiKeyCalls();
      expect(calls.length).toBeGreaterThan(0);
      for (const call of calls) expect(call).toMatch(new RegExp(`^200 "Bearer ${API_KEY}" /`));
      const services = calls.map((call) => call.split(' ').at(-1));
      // The API starts the payment; the worker polls and completes its tasks.
      expect(services).toContain(
        '/temporal.api.workflowservice.v1.WorkflowService/PollWorkflowTaskQueue',
      );
      expect(services).toContain(
        '/temporal.api.workflowservice.v1.WorkflowService/RespondWorkflowTaskCompleted',
      );
    });

    it('refuses a call without the key, and stops a worker with a wrong one', async () => {
      const without = { ...temporalConnectionOptions(engine.config), apiKey: undefined };
      const refused = await connectTemporal(without).then(
        async (connection) => {
          await connection.close();
          return null;
        },
        (error: unknown) => error,
      );
      // The SDK wraps the terminator's answer (gRPC status) as the cause of its own error.
      const status = (refused as { cause?: unknown } | null)?.cause;
      expect(isGrpcServiceError(status) && Number(status.code)).toBe(PERMISSION_DENIED);
      expect((await terminator.apiKeyCalls()).at(-1)).toMatch(/^403 "-" \//);

      const exit = await runProcess('src/worker/main.ts', {
        TEMPORAL_ADDRESS: terminator.apiKeyAddress,
        TEMPORAL_TLS_CA: certs.ca,
        TEMPORAL_TLS_SERVER_NAME: 'localhost',
        TEMPORAL_API_KEY: 'not-the-key',
      });
      expect(exit.code).toBe(1);
      expect(linesOf(exit)).toEqual([
        expect.stringMatching(
          /^worker failed: Temporal refused the connection: check TEMPORAL_API_KEY and TEMPORAL_TLS_CA \(.+\)$/,
        ),
      ]);
    });
  });
});

describe('the check at start, against servers that refuse during the handshake', () => {
  let here = '';
  let own: Certificates;
  let server: tls.Server;
  let address = '';
  beforeAll(async () => {
    here = await mkdtemp(path.join(os.tmpdir(), 'temporal-tls-check-'));
    own = await makeCertificates(here);
    // As a Temporal frontend with mTLS: the handshake itself requires a certificate of its CA.
    server = tls.createServer(
      {
        cert: readFileSync(own.serverCert),
        key: readFileSync(own.serverKey),
        ca: readFileSync(own.ca),
        requestCert: true,
        rejectUnauthorized: true,
        ALPNProtocols: ['h2'],
      },
      (socket) => socket.end(),
    );
    // The accepted path is nginx's, above: this server only ever refuses.
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    if (here) await rm(here, { recursive: true, force: true });
  });
  const options = (address: string, pair?: [string, string]) => ({
    address,
    namespace: 'default',
    apiKey: undefined,
    tls: {
      serverRootCACertificate: readFileSync(own.ca),
      serverNameOverride: 'localhost',
      ...(pair
        ? { clientCertPair: { crt: readFileSync(pair[0]), key: readFileSync(pair[1]) } }
        : {}),
    },
  });
  const refusedHandshake =
    /^Temporal refused the TLS handshake: check TEMPORAL_TLS_CERT and TEMPORAL_TLS_CA \(.+\)$/;

  it('stops on an alert for a missing client certificate, or on a closed connection', async () => {
    await expect(checkTemporalAccepts(options(address))).rejects.toThrow(refusedHandshake);
    await expect(
      checkTemporalAccepts(options(address, [own.otherClientCert, own.otherClientKey])),
    ).rejects.toThrow(refusedHandshake);
  });

  it('stops on TLS to a plaintext Temporal, and lets a Temporal that is not there pass', async () => {
    await expect(checkTemporalAccepts(options(process.env.TEST_TEMPORAL_ADDRESS!))).rejects.toThrow(
      refusedHandshake,
    );
    const nobody = `127.0.0.1:${await freePort()}`;
    await expect(checkTemporalAccepts(options(nobody))).resolves.toBeUndefined();
  });
});
