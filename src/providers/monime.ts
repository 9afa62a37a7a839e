import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Config } from '../config';
import { fitsWireInteger, minorToDecimalString, minorToWireInteger } from '../domain/money';
import {
  ProviderRefusedError,
  type Payout,
  type PayoutNotification,
  type PayoutRequest,
  type PayoutStatus,
  type MobileMoneyNotification,
  type MobileMoneyProvider,
  type PaymentCode,
  type PaymentCodeRequest,
  type PaymentCodeStatus,
} from './mobile-money';

/**
 * Live Mode mobile money on a Monime-style API. Creation carries `Idempotency-Key`, so a retried
 * call gets what the first one made. A 4xx other than 408, 409, 429 is a ProviderRefusedError,
 * never retried; anything else failing is a plain Error with `cause`, for the activity to retry.
 */

export const MONIME_SIGNATURE_HEADER = 'monime-signature';
export const MONIME_SIGNATURE_TOLERANCE_SECONDS = 300;
export const MONIME_DEFAULT_TIMEOUT_MS = 10_000;

export type MonimeOptions = {
  baseUrl: string;
  accessToken: string;
  spaceId: string;
  webhookSecret: string;
  timeoutMs?: number;
  fetch?: typeof fetch;
};

/** Monime answered 2xx with a body that is not what its API documents. */
export class MonimeResponseError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MonimeResponseError';
  }
}

/** Wire statuses of a Monime payment code, mapped onto the engine's four. */
const STATUS_MAP: Record<string, PaymentCodeStatus> = {
  pending: 'pending',
  processing: 'pending',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'failed',
  expired: 'expired',
};

/** The notification events that settle a payment code. */
const EVENT_STATUS: Record<string, PaymentCodeStatus> = {
  'payment_code.completed': 'completed',
  'payment_code.failed': 'failed',
  'payment_code.expired': 'expired',
};

/** Minor units on the wire: a JSON integer, exactly representable. */
const minorUnits = z
  .number()
  .refine((v) => Number.isSafeInteger(v) && v >= 0, 'amount value must be a non-negative integer');

const paymentCodeResult = z.object({
  id: z.string().min(1),
  name: z.string().nullish(),
  ussdCode: z.string().min(1),
  amount: z.object({ currency: z.literal('SLE'), value: minorUnits }),
  status: z.string(),
  expireTime: z.string().refine((t) => !Number.isNaN(Date.parse(t)), 'expireTime must be a time'),
  metadata: z.record(z.string(), z.unknown()).nullish(),
});

const payoutResult = z.object({
  id: z.string().min(1),
  status: z.string(),
  amount: z.object({ currency: z.literal('SLE'), value: minorUnits }),
  destination: z.object({ type: z.string(), phoneNumber: z.string().nullish() }).nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
});

/** Wire statuses of a Monime payout, mapped onto the engine's three. */
const PAYOUT_STATUS_MAP: Record<string, PayoutStatus> = {
  pending: 'pending',
  processing: 'pending',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'failed',
};

/** The notification events that settle a payout. */
const PAYOUT_EVENT_STATUS: Record<string, PayoutStatus> = {
  'payout.completed': 'completed',
  'payout.failed': 'failed',
};

export const successEnvelope = <T extends z.ZodType>(result: T) =>
  z.object({ success: z.literal(true), result });

const errorEnvelope = z.object({
  success: z.literal(false).optional(),
  error: z.object({ code: z.string().optional(), message: z.string().optional() }),
});

const notificationBody = z.object({
  event: z.string(),
  data: z.object({
    id: z.string().min(1),
    status: z.string().optional(),
    metadata: z.record(z.string(), z.unknown()).nullish(),
  }),
});

/** A 4xx that is not a refusal: the request may succeed if sent again. */
const TRANSIENT_CLIENT_STATUSES = new Set([408, 409, 429]);

/** The `monime-signature` header value for `body` sent at `timestamp` (unix seconds). */
export function signMonimeNotification(
  secret: string,
  body: string,
  timestamp: number = Math.floor(Date.now() / 1000),
): string {
  return `t=${timestamp},v1=${hmacHex(secret, timestamp, body)}`;
}

/**
 * Whether `header` is a valid signature of `rawBody` with `secret`, made within `tolerance`
 * seconds of `nowSeconds`. Several `v1=` entries are allowed (a secret being rotated).
 */
export function verifyMonimeSignature(
  secret: string,
  rawBody: string,
  header: string | undefined,
  nowSeconds: number = Math.floor(Date.now() / 1000),
  toleranceSeconds: number = MONIME_SIGNATURE_TOLERANCE_SECONDS,
): boolean {
  if (!header) return false;
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && /^[0-9a-fA-F]{64}$/.test(value)) signatures.push(value);
  }
  if (timestamp === null || signatures.length === 0) return false;
  if (Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = Buffer.from(hmacHex(secret, timestamp, rawBody), 'hex');
  let matched = false;
  for (const signature of signatures) {
    // Both are 32 bytes (checked by the pattern above), as timingSafeEqual requires.
    if (timingSafeEqual(expected, Buffer.from(signature, 'hex'))) matched = true;
  }
  return matched;
}

function hmacHex(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex');
}

/** A header's value whatever its case (Node lower-cases them; callers may not). */
export function headerValue(
  headers: Record<string, string | undefined>,
  name: string,
): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return value;
  }
  return undefined;
}

/** The instructions shown to the payer: dial the code, approve, for this many SLE. */
export function monimeInstructions(ussdCode: string, amount: bigint, name: string): string {
  return (
    `Dial ${ussdCode} on your phone and approve the payment of SLE ` +
    `${minorToDecimalString(amount)} to ${name}.`
  );
}

export class MonimeMobileMoneyProvider implements MobileMoneyProvider {
  readonly name = 'monime';
  private readonly connection: MonimeConnection;
  private readonly webhookSecret: string;

  constructor(options: MonimeOptions) {
    this.connection = monimeConnection(options);
    this.webhookSecret = options.webhookSecret;
  }

  async createPaymentCode(request: PaymentCodeRequest): Promise<PaymentCode> {
    const value = wireAmount(request.amount, 'amount');
    wireAmount(request.depositAmount, 'depositAmount');
    if (!Number.isInteger(request.expiresInSeconds) || request.expiresInSeconds <= 0) {
      throw new ProviderRefusedError(
        'The payment code lifetime must be a positive whole number of seconds',
      );
    }
    const body = {
      name: request.name,
      mode: 'one_time',
      amount: { currency: 'SLE', value },
      duration: `${request.expiresInSeconds}s`,
      metadata: {
        reference: request.reference,
        // Metadata values are strings: the deposit in SLE cents, exact.
        deposit_amount: request.depositAmount.toString(),
        description: request.description,
      },
    };
    const result = await this.call(
      'POST',
      '/v1/payment-codes',
      paymentCodeResult,
      body,
      request.idempotencyKey,
    );
    if (BigInt(result.amount.value) !== request.amount) {
      throw new MonimeResponseError(
        `Monime created a payment code for ${result.amount.value} SLE cents, not ${request.amount}`,
      );
    }
    return this.toPaymentCode(result, request.name, request.reference);
  }

  async getPaymentCode(id: string): Promise<PaymentCode> {
    const result = await this.call(
      'GET',
      `/v1/payment-codes/${encodeURIComponent(id)}`,
      paymentCodeResult,
    );
    return this.toPaymentCode(result, null, null);
  }

  async createPayout(request: PayoutRequest): Promise<Payout> {
    const value = wireAmount(request.amount, 'amount');
    const body = {
      amount: { currency: 'SLE', value },
      destination: { type: 'momo', phoneNumber: request.phoneNumber },
      metadata: { reference: request.reference, description: request.description },
    };
    const result = await this.call(
      'POST',
      '/v1/payouts',
      payoutResult,
      body,
      request.idempotencyKey,
    );
    if (BigInt(result.amount.value) !== request.amount) {
      throw new MonimeResponseError(
        `Monime created a payout of ${result.amount.value} SLE cents, not ${request.amount}`,
      );
    }
    return toPayout(result, request.reference);
  }

  async getPayout(id: string): Promise<Payout> {
    const result = await this.call('GET', `/v1/payouts/${encodeURIComponent(id)}`, payoutResult);
    return toPayout(result, null);
  }

  /**
   * Monime's API offers no cancel of a payout: the payout as it stands, so that a pending one
   * reads as "will not cancel" and a resolution is refused unless forced.
   */
  async cancelPayout(id: string): Promise<Payout> {
    return this.getPayout(id);
  }

  /** No cancel of a payment code in Monime's API either: the code as it stands. */
  async cancelPaymentCode(id: string): Promise<PaymentCode> {
    return this.getPaymentCode(id);
  }

  parsePayoutNotification(
    rawBody: string,
    headers: Record<string, string | undefined>,
  ): PayoutNotification | null {
    return readMonimePayoutNotification(
      this.webhookSecret,
      rawBody,
      headerValue(headers, MONIME_SIGNATURE_HEADER),
    );
  }

  parseNotification(
    rawBody: string,
    headers: Record<string, string | undefined>,
  ): MobileMoneyNotification | null {
    return readMonimeNotification(
      this.webhookSecret,
      rawBody,
      headerValue(headers, MONIME_SIGNATURE_HEADER),
    );
  }

  private toPaymentCode(
    result: z.infer<typeof paymentCodeResult>,
    name: string | null,
    requestedReference: string | null,
  ): PaymentCode {
    const status = STATUS_MAP[result.status];
    if (!status) {
      throw new MonimeResponseError(
        `Monime answered an unknown payment code status "${result.status}"`,
      );
    }
    const amount = BigInt(result.amount.value);
    const metadataReference = result.metadata?.reference;
    const reference =
      typeof metadataReference === 'string' ? metadataReference : (requestedReference ?? '');
    const payee = result.name ?? name;
    return {
      id: result.id,
      code: result.ussdCode,
      amount,
      currency: 'SLE',
      instructions: payee
        ? monimeInstructions(result.ussdCode, amount, payee)
        : `Dial ${result.ussdCode} on your phone and approve the payment of SLE ${minorToDecimalString(amount)}.`,
      status,
      expiresAt: new Date(result.expireTime).toISOString(),
      reference,
    };
  }

  /** One HTTP exchange; answers the `result` of a success, throws as the header comment says. */
  private async call<T extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    result: T,
    body?: unknown,
    idempotencyKey?: string,
  ): Promise<z.infer<T>> {
    const envelope = await callMonime(this.connection, {
      method,
      path,
      envelope: successEnvelope(result),
      body,
      idempotencyKey,
    });
    return (envelope as { result: z.infer<T> }).result;
  }
}

/** Where and as whom the adapters call Monime. */
export type MonimeConnection = {
  baseUrl: string;
  accessToken: string;
  spaceId: string;
  timeoutMs: number;
  fetchImpl: typeof fetch;
};

/** The connection of the options: the base URL without its trailing slash, the defaults filled. */
export function monimeConnection(
  options: Pick<MonimeOptions, 'baseUrl' | 'accessToken' | 'spaceId' | 'timeoutMs' | 'fetch'>,
): MonimeConnection {
  return {
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    accessToken: options.accessToken,
    spaceId: options.spaceId,
    timeoutMs: options.timeoutMs ?? MONIME_DEFAULT_TIMEOUT_MS,
    fetchImpl: options.fetch ?? fetch,
  };
}

/**
 * One HTTP exchange with Monime; answers the success body read by `envelope`, throws as the
 * header comment says.
 */
export async function callMonime<E extends z.ZodType>(
  connection: MonimeConnection,
  request: {
    method: 'GET' | 'POST';
    path: string;
    envelope: E;
    body?: unknown;
    idempotencyKey?: string;
  },
): Promise<z.infer<E>> {
  const { method, path, body, idempotencyKey } = request;
  const { baseUrl, accessToken, spaceId, timeoutMs, fetchImpl } = connection;
  const what = `Monime ${method} ${path}`;
  const headers: Record<string, string> = {
    Authorization: `Bearer ${accessToken}`,
    'Monime-Space-Id': spaceId,
    Accept: 'application/json',
  };
  if (idempotencyKey !== undefined) headers['Idempotency-Key'] = idempotencyKey;
  if (body !== undefined) headers['Content-Type'] = 'application/json';

  let response: Response;
  let text: string;
  try {
    // The signal covers the whole exchange, the body included.
    response = await fetchImpl(`${baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await response.text();
  } catch (error) {
    // Checked by name: a DOMException is not always an `Error` of this realm.
    const { name, message, cause } = (error ?? {}) as {
      name?: unknown;
      message?: unknown;
      cause?: { code?: unknown };
    };
    // fetch says "fetch failed"; the reason (ECONNREFUSED, ...) is on its cause.
    const reason = typeof cause?.code === 'string' ? ` (${cause.code})` : '';
    throw new Error(
      name === 'TimeoutError'
        ? `${what} timed out after ${timeoutMs} ms`
        : `${what} failed: ${typeof message === 'string' ? message : String(error)}${reason}`,
      { cause: error },
    );
  }

  const json = parseJson(text);
  if (!response.ok) {
    const parsedError = errorEnvelope.safeParse(json);
    const providerMessage = parsedError.success ? parsedError.data.error.message : undefined;
    const providerCode = parsedError.success ? parsedError.data.error.code : undefined;
    const cause = { status: response.status, code: providerCode, body: text.slice(0, 1000) };
    if (
      response.status >= 400 &&
      response.status < 500 &&
      !TRANSIENT_CLIENT_STATUSES.has(response.status)
    ) {
      throw new ProviderRefusedError(
        providerMessage ?? `${what} was refused with HTTP ${response.status}`,
        { cause },
      );
    }
    throw new Error(
      `${what} answered HTTP ${response.status}${providerMessage ? `: ${providerMessage}` : ''}`,
      { cause },
    );
  }

  const parsed = request.envelope.safeParse(json);
  if (!parsed.success) {
    throw new MonimeResponseError(
      `${what} answered an unexpected body: ${z.prettifyError(parsed.error)}`,
      {
        cause: parsed.error,
      },
    );
  }
  return parsed.data;
}

function toPayout(result: z.infer<typeof payoutResult>, requestedReference: string | null): Payout {
  const status = PAYOUT_STATUS_MAP[result.status];
  if (!status) {
    throw new MonimeResponseError(`Monime answered an unknown payout status "${result.status}"`);
  }
  const metadataReference = result.metadata?.reference;
  return {
    id: result.id,
    amount: BigInt(result.amount.value),
    currency: 'SLE',
    status,
    reference:
      typeof metadataReference === 'string' ? metadataReference : (requestedReference ?? ''),
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A bigint of SLE cents as a JSON integer; refused before any request when it cannot be one. */
function wireAmount(amount: bigint, field: string): number {
  if (amount <= 0n || !fitsWireInteger(amount)) {
    throw new ProviderRefusedError(`${field} must be a positive integer number of SLE cents`);
  }
  return minorToWireInteger(amount);
}

/** The live adapter when its credentials are all configured; null otherwise (answered 503). */
export function monimeFromConfig(config: Config): MonimeMobileMoneyProvider | null {
  const { baseUrl, accessToken, spaceId, webhookSecret, timeoutMs } = config.providers.monime;
  if (!accessToken || !spaceId || !webhookSecret) return null;
  return new MonimeMobileMoneyProvider({ baseUrl, accessToken, spaceId, webhookSecret, timeoutMs });
}

/**
 * A Monime-format notification, verified and read; null when the signature or body is wrong.
 * The sandbox sends its simulated notifications in this format too (under its own header).
 */
export function readMonimeNotification(
  secret: string,
  rawBody: string,
  signature: string | undefined,
): MobileMoneyNotification | null {
  const parsed = verifiedNotification(secret, rawBody, signature);
  if (!parsed) return null;
  const { event, data } = parsed;
  // The three settling events name their outcome; other payment-code events (processing, ...)
  // are read through the code's status when it is one we know.
  const status =
    EVENT_STATUS[event] ??
    (event.startsWith('payment_code.') && data.status ? STATUS_MAP[data.status] : undefined);
  if (!status) return null;
  const reference = data.metadata?.reference;
  return {
    paymentCodeId: data.id,
    status,
    reference: typeof reference === 'string' ? reference : null,
  };
}

/** A Monime-format notification's body, when its signature is valid and its shape right. */
function verifiedNotification(
  secret: string,
  rawBody: string,
  signature: string | undefined,
): z.infer<typeof notificationBody> | null {
  if (!verifyMonimeSignature(secret, rawBody, signature)) return null;
  let json: unknown;
  try {
    json = JSON.parse(rawBody);
  } catch {
    return null;
  }
  const parsed = notificationBody.safeParse(json);
  return parsed.success ? parsed.data : null;
}

/**
 * A Monime-format payout notification (`payout.*`), verified and read; null when the signature
 * or body is wrong, or when it speaks of something else (a payment code).
 */
export function readMonimePayoutNotification(
  secret: string,
  rawBody: string,
  signature: string | undefined,
): PayoutNotification | null {
  const parsed = verifiedNotification(secret, rawBody, signature);
  if (!parsed) return null;
  const { event, data } = parsed;
  const status =
    PAYOUT_EVENT_STATUS[event] ??
    (event.startsWith('payout.') && data.status ? PAYOUT_STATUS_MAP[data.status] : undefined);
  if (!status) return null;
  const reference = data.metadata?.reference;
  return {
    payoutId: data.id,
    status,
    reference: typeof reference === 'string' ? reference : null,
  };
}
