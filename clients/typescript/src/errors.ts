/**
 * Every failure the client reports: an answer that is not 2xx (`status` and the API's `detail`),
 * or no answer at all (`status` 0, the network error as `cause`).
 */
export class WalletApiError extends Error {
  override readonly name = 'WalletApiError';
  /** The HTTP status, or 0 when no answer arrived. */
  readonly status: number;
  /** The API's `{"detail": ...}`, or what stands for it when the body held none. */
  readonly detail: string;
  /** The answer's headers (`Retry-After`, `Idempotent-Replayed`), when there was an answer. */
  readonly headers: Headers | undefined;

  constructor(
    status: number,
    detail: string,
    options: { headers?: Headers; cause?: unknown } = {},
  ) {
    super(status ? `${status}: ${detail}` : detail, { cause: options.cause });
    this.status = status;
    this.detail = detail;
    this.headers = options.headers;
  }

  /** The error an answer stands for; `body` is what openapi-fetch read of it. */
  static fromResponse(response: Response, body: unknown): WalletApiError {
    const detail =
      body && typeof body === 'object' && typeof (body as { detail?: unknown }).detail === 'string'
        ? (body as { detail: string }).detail
        : typeof body === 'string' && body
          ? body
          : response.statusText || `HTTP ${response.status}`;
    return new WalletApiError(response.status, detail, { headers: response.headers });
  }

  /** The error for a request that got no answer (after the client's own retries). */
  static fromNetwork(cause: unknown): WalletApiError {
    const reason = cause instanceof Error ? cause.message : String(cause);
    return new WalletApiError(0, `No answer from the API: ${reason}`, { cause });
  }
}
