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
 * Downloads a file of the API (a CSV) through the session, as every other read: fetched, then
 * handed to the browser as a file. A refusal throws the API's `detail`, which the page shows.
 */
export async function download(path: string, accept: string, fallbackName: string) {
  const response = await fetch(`/dashboard/api${path}`, {
    headers: { Accept: accept },
    credentials: 'same-origin',
  });
  if (!response.ok) {
    const text = await response.text();
    let detail = `Request failed with status ${response.status}`;
    try {
      const data: unknown = JSON.parse(text);
      if (data && typeof data === 'object' && 'detail' in data && typeof data.detail === 'string')
        detail = data.detail;
    } catch {
      // Not the API's JSON: the status says enough.
    }
    throw new ApiError(response.status, detail);
  }
  const named = /filename="([^"]+)"/.exec(response.headers.get('Content-Disposition') ?? '');
  const url = URL.createObjectURL(await response.blob());
  const link = document.createElement('a');
  link.href = url;
  link.download = named?.[1] ?? fallbackName;
  document.body.append(link);
  link.click();
  link.remove();
  // After the click has handed the file over; revoking at once can cancel it in some browsers.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** The merchant's own key/value pairs on a record; `{}` when there are none. */
export type Metadata = Record<string, string>;

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
  metadata?: Metadata;
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

/** A wallet's statement over a window (`GET /api/v1/wallets/{wallet_id}/statement`). */
export type Statement = {
  wallet_id: string;
  currency: string;
  from: string;
  to: string;
  opening_balance: number;
  closing_balance: number;
  total_credits: number;
  total_debits: number;
  entries: {
    transaction_id: string | null;
    transaction_type: string | null;
    created_at: string;
    amount: number;
    balance_after: number;
    description: string;
  }[];
  page: number;
  per_page: number;
  total: number;
  total_pages: number;
};
