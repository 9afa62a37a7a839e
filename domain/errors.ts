/**
 * The closed set of expected failures. Each code maps to exactly one HTTP status; a code added
 * here without a status does not compile. Messages are safe to show to the caller.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_json: 400,
  email_taken: 400,
  wallet_exists: 400,
  user_disabled: 400,
  insufficient_funds: 400,
  same_wallet: 400,
  not_deletable: 400,
  provider_refused: 400,
  unauthenticated: 401,
  forbidden: 403,
  wallet_disabled: 403,
  wrong_mode: 403,
  not_found: 404,
  payload_too_large: 413,
  validation_failed: 422,
  idempotency_mismatch: 422,
  rate_limited: 429,
  internal: 500,
  provider_unavailable: 503,
  timeout: 504,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super(detail, options);
    this.name = 'AppError';
    this.status = ERROR_STATUS[code];
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_STATUS, value);
}

export const notFound = (what: string): AppError => new AppError('not_found', `${what} not found`);
export const forbidden = (
  detail = 'You do not have permission to access this resource',
): AppError => new AppError('forbidden', detail);
