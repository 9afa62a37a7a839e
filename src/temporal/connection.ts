import { checkServerIdentity, connect as tlsConnect } from 'node:tls';
import {
  Connection,
  type ConnectionOptions,
  defaultGrpcRetryOptions,
  type GrpcRetryOptions,
  isGrpcServiceError,
  makeGrpcRetryInterceptor,
  WorkflowNotFoundError,
} from '@temporalio/client';
import { ConfigurationError, temporalAddress, type Config, type TemporalTls } from '../config';

/** gRPC UNAVAILABLE: the server could not be reached. */
export const GRPC_UNAVAILABLE = 14;
/** gRPC DEADLINE_EXCEEDED: no answer in time, as from a server that is down. */
const GRPC_DEADLINE_EXCEEDED = 4;

/**
 * Where and how every process reaches Temporal (the API, the workers, the CLI, the schedules, the
 * harness): one value built from the configuration, so that no connection forgets TLS or the key.
 */
export type TemporalConnectionOptions = {
  address: string;
  namespace: string;
  tls: TemporalTls | undefined;
  apiKey: string | undefined;
};

export function temporalConnectionOptions(config: Config): TemporalConnectionOptions {
  return {
    address: temporalAddress(config),
    namespace: config.temporal.namespace,
    tls: config.temporal.tls,
    apiKey: config.temporal.apiKey,
  };
}

/** The SDK's connection options (the client's and the worker's `NativeConnection` alike). */
export function sdkConnectionOptions(options: TemporalConnectionOptions): {
  address: string;
  tls?: TemporalTls;
  apiKey?: string;
} {
  return {
    address: options.address,
    ...(options.tls ? { tls: options.tls } : {}),
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
  };
}

/** A client connection, connected now (the CLI, the harness). */
export function connectTemporal(
  options: TemporalConnectionOptions,
  extra: Omit<ConnectionOptions, 'address' | 'tls' | 'apiKey'> = {},
): Promise<Connection> {
  return Connection.connect({ ...sdkConnectionOptions(options), ...extra });
}

const PROBE_TIMEOUT_MS = 5_000;

/**
 * At start, with TLS on: stops the process (a `ConfigurationError`, one line naming the settings)
 * when Temporal refuses its certificate, its key or its CA, instead of a retry loop that looks
 * healthy. A Temporal that does not answer at all passes: the processes wait for it, by design.
 */
export async function checkTemporalAccepts(options: TemporalConnectionOptions): Promise<void> {
  if (!options.tls) return;
  const handshake = await probeHandshake(options, options.tls);
  if (handshake === 'unreachable') return;
  let connection: Connection | undefined;
  try {
    connection = await connectTemporal(options, { connectTimeout: PROBE_TIMEOUT_MS });
  } catch (error) {
    const grpc = grpcCause(error);
    const code = grpc ? Number(grpc.code) : undefined;
    if (code === GRPC_UNAVAILABLE || code === GRPC_DEADLINE_EXCEEDED) return;
    throw new ConfigurationError(
      `Temporal refused the connection: check ${credentialSettings(options)} ` +
        `(${oneLine(grpc ?? error)})`,
    );
  } finally {
    await connection?.close();
  }
}

/** The settings that prove who this process is, to name in a refusal. */
function credentialSettings(options: TemporalConnectionOptions): string {
  const names = options.apiKey ? ['TEMPORAL_API_KEY'] : [];
  if (options.tls?.clientCertPair || !options.apiKey) names.push('TEMPORAL_TLS_CERT');
  names.push('TEMPORAL_TLS_CA');
  return `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
}

/** The gRPC status under the SDK's wrapping (`ServiceError`'s `cause`), if any. */
function grpcCause(error: unknown): { code: unknown; message: string } | undefined {
  for (let at = error, depth = 0; at && depth < 5; depth++) {
    if (isGrpcServiceError(at)) return at;
    at = (at as { cause?: unknown }).cause;
  }
  return undefined;
}

function oneLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim();
}

/**
 * The TLS handshake alone, then HTTP/2's first frames: a server that refuses the client's
 * certificate after the handshake (TLS 1.3) says so on the first read. Node names each failure
 * by its code, which tells a server that does not answer from one that refuses.
 */
function probeHandshake(
  options: TemporalConnectionOptions,
  tls: TemporalTls,
): Promise<'unreachable' | 'accepted'> {
  const { host, port } = splitAddress(options.address);
  const servername = tls.serverNameOverride ?? host;
  return new Promise((resolve, reject) => {
    let connected = false;
    let settled = false;
    const finish = (outcome: 'unreachable' | 'accepted' | ConfigurationError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (outcome instanceof ConfigurationError) reject(outcome);
      else resolve(outcome);
    };
    const socket = tlsConnect({
      host,
      port,
      ...(/^[\d.]+$|:/.test(servername) ? {} : { servername }),
      ca: tls.serverRootCACertificate,
      cert: tls.clientCertPair?.crt,
      key: tls.clientCertPair?.key,
      ALPNProtocols: ['h2'],
      // Checked below, so that the refusal names the settings to look at.
      rejectUnauthorized: false,
    });
    const timer = setTimeout(() => finish('unreachable'), PROBE_TIMEOUT_MS);
    socket.once('connect', () => (connected = true));
    socket.once('secureConnect', () => {
      const untrusted =
        socket.authorizationError ?? checkServerIdentity(servername, socket.getPeerCertificate());
      if (untrusted) {
        finish(
          new ConfigurationError(
            "Temporal's certificate is not trusted: check TEMPORAL_TLS_CA and " +
              `TEMPORAL_TLS_SERVER_NAME (${oneLine(untrusted)})`,
          ),
        );
        return;
      }
      socket.write(HTTP2_PREFACE);
    });
    socket.once('data', () => finish('accepted'));
    const refused = (why: string) =>
      new ConfigurationError(
        `Temporal refused the TLS handshake: check ${credentialSettings(options)} (${why})`,
      );
    socket.once('error', (error: NodeJS.ErrnoException) =>
      finish(connected ? refused(error.code ?? oneLine(error)) : 'unreachable'),
    );
    // Some servers refuse a client certificate by closing the connection, without an alert.
    socket.once('close', () =>
      finish(connected ? refused('the server closed the connection') : 'unreachable'),
    );
  });
}

/** HTTP/2's client preface and an empty SETTINGS frame: a server answers with its own. */
const HTTP2_PREFACE = Buffer.concat([
  Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
  Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]),
]);

function splitAddress(address: string): { host: string; port: number } {
  const match = /^\[?(.*?)\]?(?::(\d+))?$/.exec(address);
  return { host: match?.[1] ?? address, port: Number(match?.[2] ?? 7233) };
}

/** How gRPC details an UNAVAILABLE call that never left this process (no connection). */
export const NEVER_SENT = /^No connection established/;

/** An UNAVAILABLE call that did leave: lost on the way, it may have taken effect. */
const lostAfterSending = (status: { code: number; details?: string }) =>
  status.code === GRPC_UNAVAILABLE && !NEVER_SENT.test(status.details ?? '');

/**
 * A Temporal connection that fails fast while the server is down and recovers by itself: lazy,
 * UNAVAILABLE retried briefly (while nothing was sent) instead of the SDK's long retries, quick
 * reconnection. Other retryable failures (RESOURCE_EXHAUSTED) keep the SDK's retries.
 */
export function openTemporalConnection(options: TemporalConnectionOptions): Connection {
  const quick = defaultGrpcRetryOptions({
    maxAttempts: 3,
    factor: 2,
    initialIntervalMs: () => 100,
  });
  const usual = defaultGrpcRetryOptions();
  const pick = (code: number): GrpcRetryOptions => (code === GRPC_UNAVAILABLE ? quick : usual);
  return Connection.lazy({
    ...sdkConnectionOptions(options),
    connectTimeout: 1_000,
    interceptors: [
      makeGrpcRetryInterceptor({
        delayFunction: (attempt, status) => pick(status.code).delayFunction(attempt, status),
        // Not one lost after it was sent: a retry's failure would read as never sent, and the
        // API would answer "nothing started" (503) for a start that may have happened (504).
        retryableDecider: (attempt, status) =>
          !lostAfterSending(status) && pick(status.code).retryableDecider(attempt, status),
      }),
    ],
    channelArgs: {
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1_000,
    },
  });
}

/** gRPC NOT_FOUND: some calls (a history fetch, an update) are not wrapped by the SDK. */
const GRPC_NOT_FOUND = 5;

/** Whether Temporal answered that the workflow (or the running workflow) does not exist. */
export function isNotFound(error: unknown): boolean {
  if (error instanceof WorkflowNotFoundError) return true;
  if (isGrpcServiceError(error)) return Number(error.code) === GRPC_NOT_FOUND;
  const cause = (error as { cause?: unknown } | null)?.cause;
  return cause !== undefined && cause !== error && isNotFound(cause);
}
