/**
 * The closed set of expected failures, by code. A code is all that crosses Temporal and the
 * layers below the API; its HTTP status and standard message live at the edge (`src/api/errors.ts`),
 * where a code added here without a status or a message does not compile.
 */
export const ERROR_CODES = [
  'invalid_request',
  'invalid_json',
  'email_taken',
  'wallet_exists',
  'user_disabled',
  'insufficient_funds',
  'currency_mismatch',
  'same_wallet',
  'not_deletable',
  'escrow_not_held',
  'release_exceeds_hold',
  'provider_refused',
  'card_declined',
  'payment_method_not_found',
  'forbidden_address',
  'debit_card_required',
  'payouts_not_enabled',
  'refund_not_allowed',
  'refund_exceeds_refundable',
  'dispute_not_allowed',
  'dispute_exceeds_disputable',
  'dispute_closed',
  'unsupported_file_type',
  'unauthenticated',
  'forbidden',
  'wallet_forbidden',
  'wallet_disabled',
  'wrong_mode',
  'not_found',
  'wallet_not_found',
  'payload_too_large',
  'validation_failed',
  'idempotency_mismatch',
  'rate_limited',
  'internal',
  'provider_unavailable',
  'unavailable',
  'timeout',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

const codes: ReadonlySet<string> = new Set(ERROR_CODES);

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && codes.has(value);
}
