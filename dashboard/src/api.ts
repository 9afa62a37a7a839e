/**
 * The dashboard's one way to the server: JSON to and from /dashboard/api, the session cookie
 * sent by the browser, the CSRF token in a header on every state-changing request, and a
 * failure turned into an Error carrying the server's `detail`.
 */
export type Mode = 'test' | 'live';

export type Session = {
  email: string;
  application: { id: string; name: string; base_currency: string };
  csrf_token: string;
};

export class ApiError extends Error {
  constructor(
    readonly status: number,
    detail: string,
  ) {
    super(detail);
  }
}

let csrf = '';

export function setCsrfToken(token: string): void {
  csrf = token;
}

export async function request<T>(
  path: string,
  options: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<T> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = { ...options.headers, Accept: 'application/json' };
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET') headers['X-CSRF-Token'] = csrf;
  const response = await fetch(`/dashboard/api${path}`, {
    method,
    headers,
    credentials: 'same-origin',
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  const data: unknown = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const detail =
      data && typeof data === 'object' && 'detail' in data && typeof data.detail === 'string'
        ? data.detail
        : `Request failed with status ${response.status}`;
    throw new ApiError(response.status, detail);
  }
  return data as T;
}

/**
 * A fresh Idempotency-Key for one submission of a form that moves money: a retry of that very
 * request is answered once. From getRandomValues, which plain-HTTP pages have too.
 */
export function idempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `dashboard-${Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/** A path of the public API's routes, as the dashboard serves them for one mode. */
export function modePath(mode: Mode, path: string): string {
  return `/${mode}${path}`;
}

export type Page<T> = {
  data: T[];
  page: number;
  per_page: number;
  total: number;
  total_pages: number;
};

export type Transaction = {
  id: string;
  wallet_id: string | null;
  recipient_wallet_id: string | null;
  escrow_wallet_id: string | null;
  application_wallet_id: string | null;
  amount: number;
  escrow_amount: number;
  application_fee: number | null;
  transaction_type: string;
  status: string;
  description: string | null;
  /** A card deposit's: what its pending and completed refunds took back. */
  amount_refunded?: number;
  /** A card refund's or dispute record's: the card deposit it belongs to. */
  source_transaction_id?: string | null;
  provider_reference?: string | null;
  created_at: string;
  updated_at: string;
};

export const REFUND_REASONS = ['requested_by_customer', 'duplicate', 'fraudulent'] as const;

export const DISPUTE_STATUSES = ['needs_response', 'under_review', 'won', 'lost'] as const;
export type DisputeStatus = (typeof DISPUTE_STATUSES)[number];

/** A contested card deposit; amounts in the application's base currency. */
export type Dispute = {
  id: string;
  transaction_id: string;
  wallet_id: string;
  amount: number;
  reserved_amount: number;
  uncovered_amount: number;
  reason: string;
  status: DisputeStatus;
  evidence_due_by: string;
  created_at: string;
  updated_at: string;
};
