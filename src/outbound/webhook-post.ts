import http from 'node:http';
import https from 'node:https';
import { Webhook } from 'standardwebhooks';
import { ForbiddenAddressError, guardedAgent } from './address-guard';

/** What a merchant receives: the body of every delivery (docs/api.md, Webhooks). */
export type WebhookPayload = {
  id: string;
  type: string;
  created_at: string;
  mode: 'test' | 'live';
  data: unknown;
};

/**
 * The body and Standard Webhooks headers of one attempt, signed with each of the subscription's
 * secrets: the current one first, then a rotated one still in its overlap, space-separated.
 */
export function signedDelivery(
  payload: WebhookPayload,
  secrets: string | readonly string[],
  now: Date = new Date(),
): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    id: payload.id,
    type: payload.type,
    created_at: payload.created_at,
    mode: payload.mode,
    data: payload.data,
  });
  // The timestamp is whole seconds; the signature covers exactly the seconds sent.
  const at = new Date(Math.floor(now.getTime() / 1000) * 1000);
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'wallet-payments-engine-webhooks/1',
      'webhook-id': payload.id,
      'webhook-timestamp': String(at.getTime() / 1000),
      'webhook-signature': (typeof secrets === 'string' ? [secrets] : secrets)
        .map((secret) => new Webhook(secret).sign(payload.id, at, body))
        .join(' '),
    },
  };
}

export type PostOutcome = { statusCode: number | null; error: string | null; durationMs: number };

/** How long a delivery or test send waits for its answer, connection to last byte read. */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** The most of an answer read; the rest is dropped with the connection. */
export const WEBHOOK_ANSWER_MAX_BYTES = 64 * 1024;

export type PostOptions = {
  /** `WEBHOOK_PRIVATE_ALLOWLIST`. */
  allowlist: readonly string[];
  /** Live Mode: https only. */
  httpsOnly: boolean;
  /** The whole exchange, connection to last byte read (docs/api.md, Webhooks). */
  timeoutMs: number;
  /** The most of a response body read; the rest is dropped with the connection. */
  maxBodyBytes: number;
};

/**
 * Why an attempt got no 2xx, as the merchant reads it (test send, delivery history): a category,
 * never the socket's or TLS library's own message, which would map the receiver's network.
 */
export const WEBHOOK_FAILURES = [
  'connection_refused',
  'connection_error',
  'timeout',
  'tls_error',
  'dns_error',
  'http_status',
] as const;
export type WebhookFailure = (typeof WEBHOOK_FAILURES)[number];

/** The `error` of an attempt, as the OpenAPI document describes it. */
export const WEBHOOK_ERROR_DOC =
  `Why it failed, null after a 2xx: ${WEBHOOK_FAILURES.map((f) => `\`${f}\``).join(', ')} ` +
  '(a non-2xx answer, whose status is `status_code`), or why nothing was sent (a refused ' +
  'address, an unusable URL)';

/** The resolver's failures: the host has no address, or no resolver answered. */
export const DNS_FAILURES: ReadonlySet<string> = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENODATA',
  'EAI_FAIL',
  'ESERVFAIL',
]);

/** The category of a request's network error: the one mapping for every attempt. */
export function failureCategory(error: NodeJS.ErrnoException): WebhookFailure {
  const code = error.code ?? '';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ETIMEDOUT') return 'timeout';
  if (DNS_FAILURES.has(code) || error.syscall === 'getaddrinfo') return 'dns_error';
  if (code === 'EPROTO' || /CERT|SSL|TLS/.test(code)) return 'tls_error';
  return 'connection_error';
}

/** The error text recorded for an attempt whose target the guard refused. */
export const REFUSED_ADDRESS_ERROR = 'Refused: the URL points to a private or internal address';

/**
 * One POST through the SSRF guard (on the address actually connected to), never following a
 * redirect, reading at most `maxBodyBytes` of the answer. Never throws: a 2xx is a success, any
 * other status, a refusal, a network error or no answer in time is an outcome with its reason.
 */
export async function postWebhook(
  url: string,
  delivery: { body: string; headers: Record<string, string> },
  options: PostOptions,
): Promise<PostOutcome> {
  const started = performance.now();
  const finish = (statusCode: number | null, error: string | null): PostOutcome => ({
    statusCode,
    error,
    durationMs: performance.now() - started,
  });
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return finish(null, 'Webhook URL is not a valid URL');
  }
  const allowed = options.httpsOnly ? ['https:'] : ['http:', 'https:'];
  if (!allowed.includes(target.protocol)) {
    return finish(null, `Webhook URL scheme ${target.protocol} is not allowed`);
  }
  const agents = guardedAgent({ allowlist: options.allowlist });
  const send = target.protocol === 'https:' ? https.request : http.request;
  return new Promise<PostOutcome>((resolve) => {
    let settled = false;
    const settle = (statusCode: number | null, error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve(finish(statusCode, error));
    };
    const request = send(
      target,
      {
        method: 'POST',
        agent: target.protocol === 'https:' ? agents.https : agents.http,
        headers: { ...delivery.headers, 'content-length': Buffer.byteLength(delivery.body) },
      },
      (response) => {
        const status = response.statusCode ?? 0;
        let read = 0;
        // A redirect is not followed: `status_code` says which status it was.
        const done = () => settle(status, status >= 200 && status < 300 ? null : 'http_status');
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read >= options.maxBodyBytes) done();
        });
        response.on('end', done);
        response.on('error', done);
      },
    );
    const timer = setTimeout(() => settle(null, 'timeout'), options.timeoutMs);
    request.on('error', (error) =>
      settle(
        null,
        error instanceof ForbiddenAddressError || error.name === 'ForbiddenAddressError'
          ? REFUSED_ADDRESS_ERROR
          : failureCategory(error),
      ),
    );
    request.end(delivery.body);
  });
}
