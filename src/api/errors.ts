import { CapReachedError } from '../db/caps';
import { ERROR_CODES, type ErrorCode } from '../domain/errors';
import type { Declined } from '../workflows/shared';
import { ErrorBody } from './schemas';

/** Each code's HTTP status: a code of `src/domain/errors.ts` missing here does not compile. */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_json: 400,
  email_taken: 400,
  wallet_exists: 400,
  user_disabled: 400,
  insufficient_funds: 400,
  currency_mismatch: 400,
  same_wallet: 400,
  not_deletable: 400,
  escrow_not_held: 400,
  release_exceeds_hold: 400,
  provider_refused: 400,
  card_declined: 400,
  payment_method_not_found: 400,
  forbidden_address: 400,
  debit_card_required: 400,
  payouts_not_enabled: 400,
  refund_not_allowed: 400,
  refund_exceeds_refundable: 400,
  dispute_not_allowed: 400,
  dispute_exceeds_disputable: 400,
  dispute_closed: 400,
  unsupported_file_type: 400,
  unauthenticated: 401,
  forbidden: 403,
  wallet_forbidden: 403,
  wallet_disabled: 403,
  wrong_mode: 403,
  not_found: 404,
  wallet_not_found: 404,
  payload_too_large: 413,
  validation_failed: 422,
  idempotency_mismatch: 422,
  rate_limited: 429,
  internal: 500,
  provider_unavailable: 503,
  unavailable: 503,
  timeout: 504,
} as const satisfies Record<ErrorCode, number>;

/**
 * Each code's standard message, the one place it is written. A failure that says something more
 * specific (a validation message, which user cannot be deleted and why) carries its own detail;
 * a decline from an activity carries a detail only then, and the edge fills in this message.
 */
export const ERROR_MESSAGES = {
  invalid_request: 'Invalid request',
  invalid_json: 'Request body is not valid JSON',
  email_taken: 'A user with this email already exists',
  wallet_exists: 'A wallet already exists for this user',
  user_disabled: 'The user owning this wallet is disabled',
  insufficient_funds: 'Insufficient funds',
  currency_mismatch: 'Wallets hold different currencies',
  same_wallet: 'Cannot transfer to the same wallet',
  not_deletable: 'The user cannot be deleted yet',
  escrow_not_held: 'The escrow transaction is not in held status',
  release_exceeds_hold: 'Release amount exceeds the held amount',
  provider_refused: 'The provider refused the request',
  card_declined: 'Card declined',
  payment_method_not_found: 'No such payment method',
  forbidden_address: 'Webhook URL must not point to a private or internal address',
  debit_card_required: 'Payouts need a debit card',
  payouts_not_enabled: 'Payouts are not enabled for this wallet',
  refund_not_allowed: 'Only a completed card deposit can be refunded',
  refund_exceeds_refundable: 'Refund amount exceeds the refundable amount',
  dispute_not_allowed: 'Only a completed card deposit can be disputed',
  dispute_exceeds_disputable: 'Dispute amount exceeds the disputable amount',
  dispute_closed: 'The dispute is closed',
  unsupported_file_type: 'The file must be a JPEG, PNG or PDF',
  unauthenticated: 'Invalid application credentials',
  forbidden: 'You do not have permission to access this resource',
  wallet_forbidden: 'You do not have permission to access this wallet',
  wallet_disabled: 'Wallet is disabled',
  wrong_mode: 'This endpoint is available in Test Mode only',
  not_found: 'Not found',
  wallet_not_found: 'Wallet not found',
  payload_too_large: 'Request body is larger than 1 MiB',
  validation_failed: 'Validation failed',
  idempotency_mismatch: 'Idempotency-Key was already used with a different request',
  rate_limited: 'Rate limit exceeded',
  internal: 'Internal server error',
  provider_unavailable: 'The provider is not available',
  unavailable:
    'A service the engine needs (its database or Temporal) is not answering; retry after Retry-After seconds (a payment: with the same Idempotency-Key)',
  timeout: 'The payment is still processing; retry with the same Idempotency-Key to get its result',
} as const satisfies Record<ErrorCode, string>;

/** An expected failure: answered with its code's status and `{"detail"}`. */
export class AppError extends Error {
  readonly status: number;
  readonly detail: string;
  constructor(
    readonly code: ErrorCode,
    detail?: string | null,
    options?: { cause?: unknown },
  ) {
    const text = detail || ERROR_MESSAGES[code];
    super(text, options);
    this.name = 'AppError';
    this.detail = text;
    this.status = ERROR_STATUS[code];
  }
}

export const notFound = (what: string): AppError => new AppError('not_found', `${what} not found`);

/** A creation over its application's cap (src/db/caps.ts): 400 with the cap's detail. */
export async function refuseOverCap<T>(create: () => Promise<T>): Promise<T> {
  try {
    return await create();
  } catch (error) {
    if (error instanceof CapReachedError) {
      throw new AppError('invalid_request', error.message, { cause: error });
    }
    throw error;
  }
}

/**
 * The one crossing from a workflow's answer to HTTP: a decline becomes its code's status with
 * its detail (or the code's standard message); anything else is returned as it is.
 */
export function unlessDeclined<T extends { status: string }>(result: T | Declined): T {
  if (result.status === 'declined') {
    const declined = result as Declined;
    throw new AppError(declined.code, declined.detail);
  }
  return result as T;
}

/**
 * A decline kept as data (a bulk payment's item, src/db/batches.ts): the status and detail its own
 * request would have been answered with, as `unlessDeclined` answers it.
 */
export function declineAnswer(declined: { code: string; detail: string | null }): {
  status: number;
  detail: string;
} {
  const known = (ERROR_CODES as readonly string[]).includes(declined.code);
  const error = new AppError(known ? (declined.code as ErrorCode) : 'internal', declined.detail);
  return { status: error.status, detail: error.detail };
}

/** An error response of a route's documentation: its description, with the `{"detail"}` body. */
export const errorResponse = (description: string) => ({ description, schema: ErrorBody });

/**
 * Live Mode asked for a provider whose credentials the operator did not configure: 503 before
 * anything starts. `what` names the operation in the plural ("card deposits").
 */
export function assertLiveProvider(
  caller: { mode: 'test' | 'live' },
  configured: unknown,
  what: string,
  credentials = 'the provider credentials',
): void {
  if (caller.mode === 'live' && !configured) {
    throw new AppError(
      'provider_unavailable',
      `Live ${what} are not available: ${credentials} are not configured`,
    );
  }
}
