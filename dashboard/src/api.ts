import {
  createWalletClient,
  WalletApiError,
  type components,
  type WalletClient,
} from '../../clients/typescript/src/index';
import type { DashboardAction, DashboardRole } from '../../src/domain/dashboard-access';

/**
 * The dashboard's one way to the server: public routes go through the typed client (`api(mode)`)
 * under /dashboard/api/{mode}, with the session cookie instead of a key and the CSRF token; the
 * dashboard's own endpoints, absent from the OpenAPI document, go through `request`.
 */
export type Mode = 'test' | 'live';

/** The API's records, as the OpenAPI document describes them. */
export type Schemas = components['schemas'];
export type Transaction = Schemas['Transaction'];

/** `GET /dashboard/api/session`: dashboard-only, so typed here. */
export type Session = {
  email: string;
  role: DashboardRole;
  permissions: DashboardAction[];
  application: { id: string; name: string; base_currency: string };
  needs: 'code' | 'enrolment' | null;
  two_step: { enabled: boolean; required: boolean };
  fresh: boolean;
  csrf_token: string;
};

let csrf = '';
let permissions: readonly DashboardAction[] = [];

/** What the session's role may do, as the session said: pages hide the rest. */
export function rememberSession(session: Session): void {
  csrf = session.csrf_token;
  permissions = session.permissions;
}

export function can(action: DashboardAction): boolean {
  return permissions.includes(action);
}

/** The challenge of a 401 that asks for the password or a code again (a fresh sign-in). */
const CONFIRM_CHALLENGE = 'Dashboard-Confirm';
let reconfirm: (() => Promise<boolean>) | null = null;

/** Who asks the person to confirm it is them: true once confirmed, false when they gave up. */
export function onReconfirm(handler: () => Promise<boolean>): void {
  reconfirm = handler;
}

/** A request of the page; an action that wants a fresh sign-in asks for one, then goes again. */
async function send(url: URL | string, init: RequestInit): Promise<Response> {
  const response = await fetch(url, init);
  const asks = response.headers.get('WWW-Authenticate') === CONFIRM_CHALLENGE;
  if (response.status === 401 && asks && reconfirm && (await reconfirm())) {
    return fetch(url, init);
  }
  return response;
}

/** A refusal of the API or of a dashboard endpoint: `message` is the server's `detail`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    detail: string,
  ) {
    super(detail);
  }
}

/** What to show of a failure: the server's `detail`, without the client's status prefix. */
export function errorMessage(error: unknown): string {
  if (error instanceof WalletApiError) return error.detail;
  return error instanceof Error ? error.message : String(error);
}

const clients = new Map<Mode, WalletClient>();

/**
 * The typed client of the public API as the session sees it in one mode: `/api/v1/...` is served
 * at `/dashboard/api/{mode}/v1/...`, with the cookie (same origin) and the CSRF token.
 */
export function api(mode: Mode): WalletClient {
  let client = clients.get(mode);
  if (!client) {
    client = createWalletClient({
      baseUrl: location.origin,
      idempotencyKey,
      fetch: async (request) => {
        const url = new URL(request.url);
        url.pathname = url.pathname.replace(/^\/api\//, `/dashboard/api/${mode}/`);
        const headers = new Headers(request.headers);
        if (!headers.has('Accept')) headers.set('Accept', 'application/json');
        const reads = request.method === 'GET' || request.method === 'HEAD';
        if (!reads) headers.set('X-CSRF-Token', csrf);
        return send(url, {
          method: request.method,
          headers,
          credentials: 'same-origin',
          body: reads ? undefined : await request.arrayBuffer(),
          signal: request.signal,
        });
      },
    });
    clients.set(mode, client);
  }
  return client;
}

export async function request<T>(
  path: string,
  options: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<T> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = { ...options.headers, Accept: 'application/json' };
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET') headers['X-CSRF-Token'] = csrf;
  const response = await send(`/dashboard/api${path}`, {
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
 * Hands a file of the API (a CSV), read through the client as a blob, to the browser. A refusal
 * throws the API's `detail`, which the page shows.
 */
export async function download(
  answer: Promise<{ data?: unknown; error?: unknown; response: Response }>,
  fallbackName: string,
): Promise<void> {
  const { data, error, response } = await answer;
  if (!response.ok || !(data instanceof Blob)) {
    throw WalletApiError.fromResponse(response, error);
  }
  const named = /filename="([^"]+)"/.exec(response.headers.get('Content-Disposition') ?? '');
  const url = URL.createObjectURL(data);
  const link = document.createElement('a');
  link.href = url;
  link.download = named?.[1] ?? fallbackName;
  document.body.append(link);
  link.click();
  link.remove();
  // After the click has handed the file over; revoking at once can cancel it in some browsers.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/**
 * A list asked without a cursor answers the page envelope; the document's answer is a union
 * with the cursor page, which the pages here never ask for.
 */
export async function pageOf<A extends object>(
  answer: Promise<A>,
): Promise<Extract<A, { total_pages: number }>> {
  const value = await answer;
  if (!('total_pages' in value)) throw new Error('The API answered a cursor page');
  return value as Extract<A, { total_pages: number }>;
}

/** An answer that may be JSON or CSV (the Accept header chooses), asked as JSON. */
export async function jsonOf<A>(answer: Promise<A>): Promise<Exclude<A, string>> {
  const value = await answer;
  if (typeof value === 'string') throw new Error('The API answered text, not JSON');
  return value as Exclude<A, string>;
}

/**
 * A field some records carry and the Transaction schema does not declare (`provider_reference`,
 * sent on payout and refund records): read when the API sends it, absent otherwise.
 */
export function undeclared(record: object, name: string): unknown {
  return (record as Record<string, unknown>)[name];
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

export const REFUND_REASONS = ['requested_by_customer', 'duplicate', 'fraudulent'] as const;

export const DISPUTE_STATUSES = [
  'needs_response',
  'under_review',
  'won',
  'lost',
] as const satisfies readonly Schemas['Dispute']['status'][];
export type DisputeStatus = Schemas['Dispute']['status'];

export type ReconRun = Schemas['ReconciliationRun'];
export type ReconException = Schemas['ReconciliationException'];
export type ReconImport = Schemas['ReconciliationImport'];
export type ReconProvider = ReconRun['provider'];
export type ReconKind = ReconException['kind'];

export const RECON_PROVIDERS = ['mobile_money', 'card'] as const satisfies readonly ReconProvider[];
export const RECON_KINDS = [
  'missing_internal',
  'missing_external',
  'amount_mismatch',
  'status_mismatch',
  'duplicate',
] as const satisfies readonly ReconKind[];
export const RECON_EXCEPTION_STATUSES = [
  'open',
  'resolved',
] as const satisfies readonly ReconException['status'][];

/** A settlement file's upload: the import, or its refusal with the bad rows (422). */
export type UploadOutcome =
  | { imported: ReconImport; again: boolean }
  | { refused: string; errors: ReconImport['errors']; rows: number; rowsBad: number };

/**
 * Uploads a settlement file through the typed client as multipart/form-data (the browser sets
 * the boundary). Read raw, so that a 422 keeps its `errors`, row by row; any other refusal throws.
 */
export async function uploadSettlementFile(
  mode: Mode,
  provider: ReconProvider,
  file: File,
): Promise<UploadOutcome> {
  const form = new FormData();
  form.append('provider', provider);
  form.append('file', file, file.name);
  const { data, error, response } = await api(mode).raw.POST('/api/v1/reconciliation/imports', {
    // The document types the file part as a string; the serializer sends the form itself.
    body: { provider, file: file.name },
    bodySerializer: () => form,
  });
  if (data) return { imported: data, again: response.status === 200 };
  if (response.status === 422 && error && 'errors' in error) {
    return {
      refused: error.detail,
      errors: error.errors,
      rows: error.rows,
      rowsBad: error.rows_bad,
    };
  }
  throw WalletApiError.fromResponse(response, error);
}
