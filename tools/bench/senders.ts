/**
 * What the load generator sends (API calls, bare workflows), described by plain data
 * (`SenderSpec`) so that a job crosses the IPC channel to load-process.ts; nothing here starts or
 * imports the engine.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { parsePayloadKeys } from '../../src/config';
import { dataConverterOf } from '../../src/temporal/data-converter';
import type { Send } from './load';

// HTTP: a small keep-alive client (lighter than fetch: it shares the CPU with the server).

export type Reply = { status: number; body: unknown };

export type HttpClient = {
  post: (path: string, body?: unknown, headers?: Record<string, string>) => Promise<Reply>;
  get: (path: string) => Promise<Reply>;
  close: () => void;
};

export function httpClient(baseUrl: string, headers: Record<string, string>): HttpClient {
  const url = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4096 });
  const send = (method: string, route: string, payload: string, extra: Record<string, string>) =>
    new Promise<Reply>((resolve, reject) => {
      const request = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: route,
          method,
          agent,
          headers: {
            ...headers,
            ...extra,
            ...(method === 'GET'
              ? {}
              : {
                  'content-type': 'application/json',
                  'content-length': Buffer.byteLength(payload),
                }),
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('error', reject);
          response.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: unknown = text;
            try {
              parsed = text ? JSON.parse(text) : undefined;
            } catch {
              // Not JSON: keep the text.
            }
            resolve({ status: response.statusCode ?? 0, body: parsed });
          });
        },
      );
      request.on('error', reject);
      request.setTimeout(60_000, () => request.destroy(new Error('client timeout')));
      request.end(payload);
    });
  return {
    post: (route, body, extra = {}) =>
      send('POST', route, body === undefined ? '' : JSON.stringify(body), extra),
    get: (route) => send('GET', route, '', {}),
    close: () => agent.destroy(),
  };
}

export function failure(what: string, reply: Reply): Error {
  const detail =
    reply.body && typeof reply.body === 'object' && 'detail' in reply.body
      ? String(reply.body.detail)
      : '';
  // Ids in details would make every error its own kind.
  const kind = detail.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/gi, '<id>').slice(0, 80);
  return new Error(`${what}: HTTP ${reply.status}${kind ? ` ${kind}` : ''}`);
}

export const idOf = (body: unknown, what: string): string => {
  const id = (body as { id?: unknown } | undefined)?.id;
  if (typeof id !== 'string') throw new Error(`${what}: no id in ${JSON.stringify(body)}`);
  return id;
};

export function pickPair(wallets: readonly string[]): [string, string] {
  const i = Math.floor(Math.random() * wallets.length);
  let j = Math.floor(Math.random() * (wallets.length - 1));
  if (j >= i) j += 1;
  return [wallets[i]!, wallets[j]!];
}

const ok = (status: number) => status >= 200 && status < 300;

/**
 * One transfer of 0.01 through the API, throws unless 200: between two of `wallets` at random,
 * or, given `from`, out of that one wallet to one of `wallets` at random (the hot wallet).
 */
export function transferSender(api: HttpClient, wallets: readonly string[], from?: string): Send {
  return async () => {
    const [source, target] = from
      ? [from, wallets[Math.floor(Math.random() * wallets.length)]!]
      : pickPair(wallets);
    const reply = await api.post(
      '/api/v1/transactions/wallet/transfer',
      { from_wallet_id: source, to_wallet_id: target, amount: 0.01 },
      { 'idempotency-key': randomUUID() },
    );
    if (reply.status !== 200) throw failure('transfer', reply);
  };
}

/** An escrow hold of 0.01, then its release to the recipient. */
export function escrowSender(api: HttpClient, wallets: readonly string[]): Send {
  return async () => {
    const [from, to] = pickPair(wallets);
    const hold = await api.post(
      '/api/v1/escrow/hold',
      { wallet_id: from, amount: 0.01, recipient_wallet_id: to },
      { 'idempotency-key': randomUUID() },
    );
    if (!ok(hold.status)) throw failure('hold', hold);
    const release = await api.post(
      `/api/v1/escrow/${idOf(hold.body, 'hold')}/release`,
      { recipient_wallet_id: to },
      { 'idempotency-key': randomUUID() },
    );
    if (!ok(release.status)) throw failure('release', release);
  };
}

/** A card deposit the sandbox charges at once: the provider's step and the ledger's. */
export function cardDepositSender(api: HttpClient, wallets: readonly string[]): Send {
  return async () => {
    const [wallet] = pickPair(wallets);
    const deposit = await api.post(
      '/api/v1/transactions/wallet/card-deposit',
      { wallet_id: wallet, amount: 0.01, payment_method_id: 'pm_card_visa' },
      { 'idempotency-key': randomUUID() },
    );
    if (!ok(deposit.status)) throw failure('card deposit', deposit);
  };
}

/** How many card deposits the refund row refunds a cent at a time, one per wallet at most. */
const REFUNDED_DEPOSITS = 64;

/**
 * A refund of 0.01 of a card deposit: the saga's reserve, the sandbox's refund and the
 * settlement. The deposits (10.00 each, one per wallet) are made before the load starts, so
 * that refunds spread over many deposits as over many wallets.
 */
export async function refundSender(api: HttpClient, wallets: readonly string[]): Promise<Send> {
  const deposit = async (wallet: string) => {
    const reply = await api.post(
      '/api/v1/transactions/wallet/card-deposit',
      { wallet_id: wallet, amount: 10, payment_method_id: 'pm_card_visa' },
      { 'idempotency-key': randomUUID() },
    );
    if (!ok(reply.status)) throw failure('card deposit to refund', reply);
    return idOf(reply.body, 'card deposit');
  };
  const ids = await Promise.all(wallets.slice(0, REFUNDED_DEPOSITS).map(deposit));
  return async () => {
    const id = ids[Math.floor(Math.random() * ids.length)]!;
    const refund = await api.post(
      `/api/v1/transactions/${id}/refund`,
      { amount: 0.01, reason: 'requested_by_customer' },
      { 'idempotency-key': randomUUID() },
    );
    if (!ok(refund.status)) throw failure('refund', refund);
  };
}

/** The dashboard's analytics; throws unless they count at least `minimumCount` payments. */
export function dashboardSender(api: HttpClient, minimumCount: number): Send {
  return async () => {
    const reply = await api.get('/api/v1/analytics/dashboard');
    if (reply.status !== 200) throw failure('dashboard', reply);
    const count = (reply.body as { transaction_count?: number } | undefined)?.transaction_count;
    if ((count ?? 0) < minimumCount) {
      throw new Error('dashboard: the seeded payments are not counted');
    }
  };
}

/**
 * Row (8)'s reads: one of `paths` at random, GET, throws unless 200 and, given `rows`, unless
 * the answer's list (`data` or a statement's `entries`) holds that many (at least 1 for
 * `'some'`): a filter that is not applied would answer a full page instead.
 */
export function readSender(
  api: HttpClient,
  paths: readonly string[],
  rows?: number | 'some',
): Send {
  return async () => {
    const path = paths[Math.floor(Math.random() * paths.length)]!;
    const reply = await api.get(path);
    if (reply.status !== 200) throw failure(`GET ${path.split('?')[0]}`, reply);
    if (rows === undefined) return;
    const body = reply.body as { data?: unknown[]; entries?: unknown[] } | undefined;
    const n = (body?.data ?? body?.entries)?.length ?? 0;
    if (rows === 'some' ? n === 0 : n !== rows) {
      throw new Error(`GET ${path.split('?')[0]}: ${n} rows, not ${rows}`);
    }
  };
}

/**
 * The transactions export of `path`, streamed and counted without keeping it: throws unless
 * 200 with `rows` lines after the header.
 */
export function exportSender(target: ApiTarget, path: string, rows: number): Send {
  return () =>
    new Promise<void>((resolve, reject) => {
      const request = http.get(`${target.apiUrl}${path}`, { headers: target.headers }, (res) => {
        let lines = 0;
        res.on('data', (chunk: Buffer) => {
          for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
        });
        res.on('error', reject);
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`export: HTTP ${res.statusCode}`));
          else if (lines - 1 !== rows) reject(new Error(`export: ${lines - 1} rows, not ${rows}`));
          else resolve();
        });
      });
      request.on('error', reject);
    });
}

// ---------------------------------------------------------------------------------------------
// Senders as data, for the load generator's process.

export type ApiTarget = { apiUrl: string; headers: Record<string, string> };

export type SenderSpec =
  | (ApiTarget & { kind: 'transfer'; wallets: string[]; from?: string })
  | (ApiTarget & { kind: 'escrow' | 'card' | 'refund'; wallets: string[] })
  | (ApiTarget & { kind: 'dashboard'; minimumCount: number })
  | (ApiTarget & { kind: 'read'; paths: string[]; rows?: number | 'some' })
  | (ApiTarget & { kind: 'export'; path: string; rows: number })
  | {
      kind: 'workflow';
      address: string;
      namespace: string;
      /** The engine's payload keys as TEMPORAL_PAYLOAD_KEYS writes them. */
      payloadKeys: string;
      taskQueue: string;
      /** One of tools/bench/workflows.ts's, by name (the worker runs in the engine's process). */
      workflowType: string;
    };

export type Senders = { open: (spec: SenderSpec) => Promise<Send>; close: () => Promise<void> };

/**
 * Makes the senders of jobs, keeping one HTTP client per API and one Temporal connection per
 * server from one job to the next (a warm pool of sockets, as one long-lived client would have).
 */
export function senders(): Senders {
  const apis = new Map<string, HttpClient>();
  const temporals = new Map<string, Promise<Client>>();
  const api = (target: ApiTarget) => {
    const key = JSON.stringify([target.apiUrl, target.headers]);
    let client = apis.get(key);
    if (!client) {
      client = httpClient(target.apiUrl, target.headers);
      apis.set(key, client);
    }
    return client;
  };
  const temporal = (address: string, namespace: string, payloadKeys: string) => {
    const key = `${address}/${namespace}/${payloadKeys}`;
    let client = temporals.get(key);
    if (!client) {
      const keys = parsePayloadKeys(payloadKeys);
      if (typeof keys === 'string') throw new Error(keys);
      client = Connection.connect({ address }).then(
        (connection) => new Client({ connection, namespace, dataConverter: dataConverterOf(keys) }),
      );
      temporals.set(key, client);
    }
    return client;
  };
  return {
    open: async (spec) => {
      switch (spec.kind) {
        case 'transfer':
          return transferSender(api(spec), spec.wallets, spec.from);
        case 'escrow':
          return escrowSender(api(spec), spec.wallets);
        case 'card':
          return cardDepositSender(api(spec), spec.wallets);
        case 'refund':
          return refundSender(api(spec), spec.wallets);
        case 'dashboard':
          return dashboardSender(api(spec), spec.minimumCount);
        case 'read':
          return readSender(api(spec), spec.paths, spec.rows);
        case 'export':
          return exportSender(spec, spec.path, spec.rows);
        case 'workflow': {
          const client = await temporal(spec.address, spec.namespace, spec.payloadKeys);
          return async () => {
            await client.workflow.execute(spec.workflowType, {
              taskQueue: spec.taskQueue,
              workflowId: `bench-${randomUUID()}`,
            });
          };
        }
      }
    },
    close: async () => {
      for (const client of apis.values()) client.close();
      for (const client of temporals.values()) {
        await client.then((c) => c.connection.close()).catch(() => undefined);
      }
    },
  };
}
