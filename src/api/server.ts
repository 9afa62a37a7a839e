import { ServerResponse, STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { Config } from '../config';
import { createWalletMemory } from '../cache/wallet-memory';
import { createCredentialCache } from '../cache/credential-cache';
import { createDatabasePool } from '../db/pool';
import { createProviders } from '../providers';
import { createApp } from './app';
import { openTemporalConnection, temporalConnectionOptions } from '../temporal/connection';
import { temporalDataConverter } from '../temporal/data-converter';
import type { Logger } from '../observability/logger';
import { startMetricsServer } from '../observability/metrics';
import { acquireTracing, clientTracingOptions } from '../observability/tracing';

export type RunningApi = {
  url: string;
  server: Server;
  /** The metrics listener's `/metrics` (`API_METRICS_PORT`), or undefined when there is none. */
  metricsUrl: string | undefined;
  close: () => Promise<void>;
  /**
   * Stops as a deploy stops it: refuses new connections, answers readiness 503 and every
   * further request with `Connection: close`, lets the requests it started finish for at most
   * `graceMs`, then closes what is left and its pool and Temporal connection.
   */
  drain: (graceMs: number) => Promise<void>;
};

/**
 * Starts the API: its own pool and Temporal client; with tracing, a payment's trace starts at its
 * workflow start. `workerConnection` is an in-process worker's connection while it runs
 * (`npm start`, the benchmark): payments started through it are started eagerly.
 */
export async function startApi(
  config: Config,
  logger: Logger,
  databaseUrl: string,
  options: { workerConnection?: () => NativeConnection | null } = {},
): Promise<RunningApi> {
  const pool = await createDatabasePool(databaseUrl, {
    maximumPoolSize: config.database.poolSize,
    connectTimeoutMs: config.database.connectTimeoutMs,
    preparedStatements: config.database.preparedStatements,
  });
  const connection = openTemporalConnection(temporalConnectionOptions(config));
  const tracing = acquireTracing(config.tracing);
  const dataConverter = temporalDataConverter(config);
  const temporal = new Client({
    connection,
    namespace: config.temporal.namespace,
    dataConverter,
    ...clientTracingOptions(tracing),
  });
  const eagerClients = new WeakMap<NativeConnection, Client>();
  const eagerTemporal = options.workerConnection
    ? (): Client | null => {
        const native = options.workerConnection!();
        if (!native) return null;
        let client = eagerClients.get(native);
        if (!client) {
          client = new Client({
            connection: native,
            namespace: config.temporal.namespace,
            dataConverter,
            ...clientTracingOptions(tracing),
          });
          eagerClients.set(native, client);
        }
        return client;
      }
    : undefined;
  let draining = false;
  const credentials = createCredentialCache();
  const wallets = createWalletMemory();
  const providers = createProviders({ config, pool });
  const app = createApp({
    config,
    pool,
    temporal,
    eagerTemporal,
    credentials,
    wallets,
    logger,
    providers,
    draining: () => draining,
  });
  const server = app.listen(config.api.port, config.api.host);
  // First, before Koa: a keep-alive client must not send a stopping process another request.
  const answering = new Set<ServerResponse>();
  server.prependListener('request', (_request: IncomingMessage, response: ServerResponse) => {
    if (draining) response.setHeader('Connection', 'close');
    answering.add(response);
    response.once('close', () => {
      answering.delete(response);
      // One whose headers left before the drain keeps its socket: closed once it is idle.
      if (draining) setImmediate(() => server.closeIdleConnections());
    });
  });
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) =>
    answerClientError(error, socket, logger),
  );
  server.on('connect', (request: IncomingMessage, socket: Duplex) =>
    answerConnect(app, request, socket),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  const { port } = server.address() as AddressInfo;
  const host = config.api.host === '0.0.0.0' ? '127.0.0.1' : config.api.host;
  // Metrics are not for the internet: a listener of their own, never the API's public port.
  const metrics =
    config.metrics.enabled && config.metrics.apiPort !== undefined
      ? await startMetricsServer({ port: config.metrics.apiPort, host: config.api.host })
      : undefined;
  const release = async () => {
    await connection.close();
    await pool.end();
    await tracing?.release();
  };
  return {
    url: `http://${host}:${port}`,
    server,
    metricsUrl: metrics?.url,
    close: async () => {
      await metrics?.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await release();
    },
    drain: async (graceMs) => {
      draining = true;
      for (const response of answering) {
        if (!response.headersSent) response.setHeader('Connection', 'close');
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // A connection idle now would otherwise stay open for its keep-alive timeout.
      server.closeIdleConnections();
      const cut = setTimeout(() => server.closeAllConnections(), graceMs);
      await closed;
      clearTimeout(cut);
      await metrics?.close();
      await release();
    },
  };
}

/** Statuses for what node's HTTP parser refuses before a request reaches Koa. */
const CLIENT_ERRORS: Record<string, { status: number; detail: string }> = {
  HPE_HEADER_OVERFLOW: {
    status: 431,
    detail: 'Request line and headers are too large: at most 16 KiB together',
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { status: 413, detail: 'Chunk extensions are too large' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, detail: 'The request did not arrive in time' },
};

/**
 * Node answers a request it cannot parse (a URL over 16 KiB, bad header bytes) with an empty body;
 * here it gets `{"detail": ...}` like every other error, written only while no response on this
 * connection has begun, as Node's own handler checks (it reads the socket's `_httpMessage`).
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex, logger: Logger): void {
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const { status, detail } = CLIENT_ERRORS[error.code ?? ''] ?? {
    status: 400,
    detail: 'Malformed HTTP request',
  };
  logger.info({ code: error.code, status }, 'client error');
  const body = JSON.stringify({ detail });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
    () => socket.destroy(),
  );
}

/**
 * Node hands CONNECT to a 'connect' listener instead of the app, and closes the connection
 * when there is none. Run it through the app like any other method (a 405 or 404 with a
 * detail), then close the connection.
 */
function answerConnect(app: Koa, request: IncomingMessage, socket: Duplex): void {
  const response = new ServerResponse(request);
  response.shouldKeepAlive = false;
  response.assignSocket(socket as Socket);
  response.on('finish', () => {
    response.detachSocket(socket as Socket);
    socket.end(() => socket.destroy());
  });
  void app.callback()(request, response);
}
