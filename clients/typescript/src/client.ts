import createClient from 'openapi-fetch';
import type {
  Client,
  ClientPathsWithMethod,
  FetchResponse,
  MaybeOptionalInit,
  Middleware,
} from 'openapi-fetch';
import { WalletApiError } from './errors.js';
import { IDEMPOTENT_OPERATIONS } from './operations.js';
import { retryingFetch, type RetryOptions } from './retry.js';
import type { components, paths } from './schema.js';

export type WalletClientOptions = {
  /** Where the API is, e.g. `https://payments.example.com` (no trailing `/api/v1`). */
  baseUrl: string;
  /** A credential's two halves (`pk_test_...`, `sk_test_...`); omit for health and the document. */
  apiKey?: string;
  secretKey?: string;
  /** Retries of transient failures; `{ maxAttempts: 1 }` turns them off. */
  retry?: RetryOptions;
  /** Makes an Idempotency-Key for a money-moving call that was given none (default a UUID v4). */
  idempotencyKey?: () => string;
  /** The fetch to use (default the global one). */
  fetch?: (request: Request) => Promise<Response>;
  /** Headers sent with every request besides the credentials. */
  headers?: Record<string, string>;
};

type Api = Client<paths>;
type Method = 'get' | 'post' | 'patch' | 'delete';
type PathOf<M extends Method> = ClientPathsWithMethod<Api, M>;
type InitOf<P extends keyof paths, M extends Method> = MaybeOptionalInit<paths[P], M>;
/** The init argument, optional when the operation requires nothing. */
type Args<I> = undefined extends I ? [init?: I] : [init: I];
/** What a successful call answers. */
export type Answer<P extends keyof paths, M extends keyof paths[P], I = object> = NonNullable<
  FetchResponse<paths[P][M] & Record<string, unknown>, I, `${string}/${string}`>['data']
>;

type Call<M extends Method> = <P extends PathOf<M>, I extends InitOf<P, M>>(
  path: P,
  ...init: Args<I>
) => Promise<Answer<P, M, I>>;

type QueryOf<P extends keyof paths> = paths[P] extends { get: { parameters: { query?: infer Q } } }
  ? NonNullable<Q>
  : never;
/**
 * GET paths paged by `page`: they answer the page envelope `{data, page, per_page, total,
 * total_pages}`, or a bare array with a `Link` header (`GET /api/v1/wallets/`).
 */
export type PagedPath = {
  [P in PathOf<'get'>]: 'page' extends keyof QueryOf<P> ? ListPath<P> : never;
}[PathOf<'get'>];
/** GET paths that page by cursor: `starting_after` answers `{data, per_page, has_more}`. */
export type CursorPath = {
  [P in PathOf<'get'>]: 'starting_after' extends keyof QueryOf<P> ? ListPath<P> : never;
}[PathOf<'get'>];
/** P, when its answer is a list of items (a statement's `entries` is not one). */
type ListPath<P extends PathOf<'get'>> = [ItemOf<P>] extends [never] ? never : P;
/** The item of a list answer, bare array or envelope (distributes over a union of answers). */
type ElementOf<A> = A extends readonly (infer T)[]
  ? T
  : A extends { data: readonly (infer T)[] }
    ? T
    : never;
type ItemOf<P extends PathOf<'get'>> = ElementOf<Answer<P, 'get'>>;

/** A list call's options; the client sets `page` and `starting_after` itself. */
type ListInit<P extends PathOf<'get'>> = NonNullable<InitOf<P, 'get'>>;

/** A bulk payment's request body (`POST /api/v1/batches`). */
export type BatchRequest = NonNullable<InitOf<'/api/v1/batches', 'post'>>['body'];
export type Batch = components['schemas']['Batch'];
export type BatchItem = components['schemas']['BatchItem'];

/** How `submitBatch` waits: its poll interval and how long at most (then it throws). */
export type BatchWait = {
  /** The batch's Idempotency-Key: give one to resume the wait after a crash (default: made). */
  idempotencyKey?: string;
  /** Between reads of the batch: each read counts in the `batches` rate limit, so not often. */
  pollMs?: number;
  /** How long to wait at most: a batch paced by its items' rate limit takes its time. */
  timeoutMs?: number;
};

export type ExportQuery = NonNullable<
  NonNullable<InitOf<'/api/v1/transactions/export', 'get'>>['params']
>['query'];

/**
 * The API's client: every operation of the OpenAPI document, typed from it (`schema.d.ts`),
 * through openapi-fetch, with the credentials, idempotency keys and retries added here.
 */
export type WalletClient = {
  /** The openapi-fetch client itself: `{data, error, response}`, nothing thrown for a status. */
  raw: Api;
  get: Call<'get'>;
  post: Call<'post'>;
  patch: Call<'patch'>;
  delete: Call<'delete'>;
  /** Every item of a page-envelope list, fetching page after page as it is iterated. */
  paginate<P extends PagedPath>(path: P, init?: ListInit<P>): AsyncIterable<ItemOf<P>>;
  /** Every item of a cursor list (`starting_after` the last item's id, until `has_more` is false). */
  paginateCursor<P extends CursorPath>(path: P, init?: ListInit<P>): AsyncIterable<ItemOf<P>>;
  /** The transactions CSV export, as the bytes arrive (`for await` over it in Node 20+). */
  exportTransactions(query?: ExportQuery): Promise<ReadableStream<Uint8Array>>;
  /**
   * Submits a bulk payment and waits until its last item has ended: the batch, no longer
   * `processing`. Sent again with the same key, it answers the same batch and pays nothing twice.
   */
  submitBatch(body: BatchRequest, wait?: BatchWait): Promise<Batch>;
  /** Every item of a batch in order, page after page by `starting_after`; `status` filters. */
  batchItems(batchId: string, filter?: { status?: BatchItem['status'] }): AsyncIterable<BatchItem>;
};

/** `post /api/v1/escrow/{transaction_id}/release` and so on: schema paths, as openapi-fetch names them. */
const IDEMPOTENT = new Set(IDEMPOTENT_OPERATIONS);

function newKey(): string {
  return globalThis.crypto.randomUUID();
}

/**
 * Every money-moving call carries an Idempotency-Key: the caller's, or one made here once per
 * call, so that the retries of that call (the request is copied, headers and all) reuse it.
 */
function idempotency(makeKey: () => string): Middleware {
  return {
    onRequest({ request, schemaPath }) {
      const operation = `${request.method.toLowerCase()} ${schemaPath}`;
      if (IDEMPOTENT.has(operation) && !request.headers.has('idempotency-key')) {
        request.headers.set('Idempotency-Key', makeKey());
      }
      return request;
    },
  };
}

export function createWalletClient(options: WalletClientOptions): WalletClient {
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey !== undefined) headers['api-key'] = options.apiKey;
  if (options.secretKey !== undefined) headers['secret-key'] = options.secretKey;
  const baseFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const raw = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers,
    fetch: retryingFetch(baseFetch, options.retry),
  });
  raw.use(idempotency(options.idempotencyKey ?? newKey));

  /** The 2xx answer's body and response; anything else thrown as a WalletApiError. */
  async function send(
    method: Method,
    path: string,
    init: unknown,
  ): Promise<{ data: unknown; response: Response }> {
    let result: { data?: unknown; error?: unknown; response: Response };
    try {
      result = await (raw.request as (m: string, p: string, i: unknown) => Promise<typeof result>)(
        method,
        path,
        init,
      );
    } catch (error) {
      throw error instanceof WalletApiError ? error : WalletApiError.fromNetwork(error);
    }
    if (!result.response.ok) throw WalletApiError.fromResponse(result.response, result.error);
    return { data: result.data, response: result.response };
  }
  const call = async (method: Method, path: string, init: unknown) =>
    (await send(method, path, init)).data;
  const method =
    <M extends Method>(name: M): Call<M> =>
    (path, ...init) =>
      call(name, path, init[0]) as never;

  type Page = { data: unknown[]; page?: number; total_pages?: number; has_more?: boolean };
  const withQuery = (init: { params?: { query?: object } } | undefined, extra: object) => ({
    ...init,
    params: { ...init?.params, query: { ...init?.params?.query, ...extra } },
  });

  return {
    raw,
    get: method('get'),
    post: method('post'),
    patch: method('patch'),
    delete: method('delete'),
    async *paginate(path, init) {
      for (let page = 1; ; page += 1) {
        const { data, response } = await send('get', path, withQuery(init, { page }));
        if (Array.isArray(data)) {
          // A bare array: the Link header names the next page while there is one.
          yield* data as never[];
          const link = response.headers.get('link') ?? '';
          if (!data.length || !/rel="?next"?/.test(link)) return;
          continue;
        }
        const answer = data as Page;
        yield* answer.data as never[];
        if (!answer.data.length || page >= (answer.total_pages ?? 0)) return;
      }
    },
    async *paginateCursor(path, init) {
      // The first page has no cursor: the list answers the page envelope, whose total_pages says
      // whether more follow; from then on, each page starts after the last item seen.
      let answer = (await call('get', path, init)) as Page;
      for (;;) {
        yield* answer.data as never[];
        const more = answer.has_more ?? (answer.page ?? 1) < (answer.total_pages ?? 0);
        const last = answer.data.at(-1) as { id?: string } | undefined;
        if (!more || last?.id === undefined) return;
        answer = (await call('get', path, withQuery(init, { starting_after: last.id }))) as Page;
      }
    },
    async submitBatch(body, wait = {}) {
      const key = wait.idempotencyKey ?? (options.idempotencyKey ?? newKey)();
      const started = (await call('post', '/api/v1/batches', {
        body,
        headers: { 'Idempotency-Key': key },
      })) as Batch;
      const timeoutMs = wait.timeoutMs ?? 60 * 60_000;
      const deadline = Date.now() + timeoutMs;
      for (let batch = started; ;) {
        if (batch.status !== 'processing') return batch;
        if (Date.now() > deadline) {
          throw new Error(`batch ${batch.id} still processing after ${timeoutMs} ms`);
        }
        await new Promise((resolve) => setTimeout(resolve, wait.pollMs ?? 7_000));
        batch = (await call('get', '/api/v1/batches/{batch_id}', {
          params: { path: { batch_id: started.id } },
        })) as Batch;
      }
    },
    async *batchItems(batchId, filter = {}) {
      for (let after: number | undefined; ;) {
        const page = (await call('get', '/api/v1/batches/{batch_id}/items', {
          params: {
            path: { batch_id: batchId },
            query: {
              per_page: 100,
              ...filter,
              ...(after === undefined ? {} : { starting_after: after }),
            },
          },
        })) as { data: BatchItem[]; has_more: boolean };
        yield* page.data;
        const last = page.data.at(-1);
        if (!page.has_more || last === undefined) return;
        after = last.index;
      }
    },
    async exportTransactions(query) {
      const body = await call('get', '/api/v1/transactions/export', {
        params: { query },
        parseAs: 'stream',
      });
      return body as ReadableStream<Uint8Array>;
    },
  };
}
