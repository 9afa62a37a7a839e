import { z } from 'zod';
import { MAX_BODY_BYTES } from './middleware/body';
import { OPENAPI_LINKS } from './openapi-links';
import type { Route } from './route';

type Json = Record<string, unknown>;

/** `:name` (Koa) to `{name}` (OpenAPI). */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z_]+)/g, '{$1}');
}

function operationId(route: Route): string {
  const path = openApiPath(route.path);
  return `${route.method}_${path.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '')}`;
}

function pathParams(route: Route): string[] {
  return (route.path.match(/:([A-Za-z_]+)/g) ?? []).map((name) => name.slice(1));
}

/** Path parameters that the pipeline requires to be UUIDs (anything else answers 404). */
function uuidParams(route: Route): string[] {
  return pathParams(route).filter(
    (name) => name.endsWith('id') && !route.opaqueParams?.includes(name),
  );
}

const COMPONENT = '#/components/schemas/';

/** Points every `#/$defs/X` at `#/components/schemas/X`, where the document keeps shared schemas. */
function toComponentRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toComponentRefs);
  if (!value || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [
      key,
      key === '$ref' && typeof item === 'string'
        ? item.replace(/^#\/\$defs\//, COMPONENT)
        : toComponentRefs(item),
    ]),
  );
}

/**
 * Converts many zod schemas in one pass, so that every schema with a `.meta({ id })` is emitted
 * once, as a component, and referenced from wherever it is used.
 */
function convertAll(
  schemas: Map<string, z.ZodType>,
  io: 'input' | 'output',
  components: Record<string, Json>,
): Map<string, Json> {
  const all = z.object(Object.fromEntries(schemas));
  const converted = z.toJSONSchema(all, {
    io,
    unrepresentable: 'any',
    target: 'draft-2020-12',
  }) as { properties?: Record<string, Json>; $defs?: Record<string, Json> };
  for (const [id, schema] of Object.entries(converted.$defs ?? {})) {
    const component = toComponentRefs(schema) as Json;
    const known = components[id];
    if (known && JSON.stringify(known) !== JSON.stringify(component)) {
      throw new Error(`schema ${id} differs between requests and responses: give each its own id`);
    }
    components[id] = component;
  }
  const result = new Map<string, Json>();
  for (const key of schemas.keys()) {
    result.set(key, toComponentRefs(converted.properties?.[key] ?? {}) as Json);
  }
  return result;
}

const ERROR_CONTENT = { 'application/json': { schema: { $ref: `${COMPONENT}Error` } } };

/** Statuses that the pipeline and the middleware answer, whatever the route's handler does. */
function edgeResponses(route: Route, readsBody: boolean): Record<number, string> {
  const edge: Record<number, string> = {};
  if (readsBody) {
    edge[400] = 'The body is not JSON';
    edge[413] = `The body is larger than ${MAX_BODY_BYTES / 1024 / 1024} MiB`;
  }
  if (route.auth !== null) {
    edge[401] = 'Missing or invalid credentials';
    edge[429] = 'Rate limit exceeded; Retry-After gives the seconds to wait';
    // Every authenticated request reads the database (its credentials) at least.
    edge[503] = 'Postgres or Temporal is not answering; retry after the seconds Retry-After gives';
  }
  if (route.throttle) {
    edge[429] = 'Too many requests from this address; Retry-After gives the seconds to wait';
  }
  if (route.auth !== null && !route.admin) {
    edge[403] = 'Admin credentials (application credentials only)';
  }
  if (route.admin) {
    edge[401] = 'Missing or invalid admin credentials (each failure counts towards the lockout)';
    edge[403] = 'Application credentials (admin credentials only)';
  }
  if (uuidParams(route).length) edge[404] = 'Not found (an id that is not a UUID names nothing)';
  // Path parameters that are not UUIDs reach the NUL check (a UUID one is a 404 before it).
  const freeText = pathParams(route).some((name) => !uuidParams(route).includes(name));
  const checked = readsBody || route.query || freeText;
  if (checked) edge[422] = 'A field is invalid or holds text the database cannot store (NUL)';
  if (route.idempotent) {
    edge[422] = `${edge[422] ?? 'Validation failure'}; or a malformed Idempotency-Key`;
    edge[504] =
      'The payment did not finish in time; it goes on: retry with the same Idempotency-Key';
  }
  return edge;
}

function responsesOf(
  route: Route,
  readsBody: boolean,
  schemaOf: (status: string) => Json | undefined,
): Json {
  const responses: Record<string, Json> = {};
  for (const [status, spec] of Object.entries(route.responses)) {
    const schema = schemaOf(status);
    const content = {
      ...(schema ? { 'application/json': { schema } } : {}),
      ...spec.otherContent,
    };
    responses[status] = {
      description: spec.description,
      ...(spec.headers ? { headers: spec.headers } : {}),
      ...(Object.keys(content).length ? { content } : {}),
    };
  }
  for (const [status, description] of Object.entries(edgeResponses(route, readsBody))) {
    const known = responses[status];
    if (!known) {
      responses[status] = { description, content: ERROR_CONTENT };
    } else if (
      status !== '401' &&
      status !== '404' &&
      !String(known.description).includes(description)
    ) {
      responses[status] = {
        ...known,
        description: `${String(known.description)}; or ${description.charAt(0).toLowerCase()}${description.slice(1)}`,
      };
    }
  }
  for (const [status, response] of Object.entries(responses)) {
    const headers = edgeHeaders(route, status);
    if (headers) response.headers = { ...(response.headers as Json | undefined), ...headers };
  }
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
}

const HEADERS = '#/components/headers/';

/** The headers the pipeline and the middleware set on an answer of `status`, by reference. */
function edgeHeaders(route: Route, status: string): Json | undefined {
  if (status === '429') return { 'Retry-After': { $ref: `${HEADERS}RetryAfter` } };
  if (status === '503') return { 'Retry-After': { $ref: `${HEADERS}RetryAfterUnavailable` } };
  if (route.idempotent && status.startsWith('2')) {
    return { 'Idempotent-Replayed': { $ref: `${HEADERS}IdempotentReplayed` } };
  }
  return undefined;
}

/** The shared response headers (`edgeHeaders`). */
const RESPONSE_HEADERS = {
  RetryAfter: {
    description: 'The seconds to wait before trying again',
    required: true,
    schema: { type: 'integer', minimum: 0 },
    example: 30,
  },
  RetryAfterUnavailable: {
    description:
      'When Postgres or Temporal is not answering: the seconds to wait before trying again ' +
      '(absent when a provider is not available)',
    schema: { type: 'integer', minimum: 0 },
    example: 2,
  },
  IdempotentReplayed: {
    description:
      '`true` on the stored answer of an earlier request with the same Idempotency-Key, and ' +
      'on the success of a retry (the key’s one payment; nothing moved again); absent on a ' +
      'first answer and on a decline decided for this request',
    schema: { type: 'string', enum: ['true'] },
  },
};

function parametersOf(route: Route, query: Json | undefined, params: Json | undefined): Json[] {
  const parameters: Json[] = [];
  const uuids = uuidParams(route);
  const pathSchemas = (params?.properties ?? {}) as Record<string, Json>;
  for (const name of pathParams(route)) {
    parameters.push({
      name,
      in: 'path',
      required: true,
      schema: uuids.includes(name)
        ? { type: 'string', format: 'uuid' }
        : (pathSchemas[name] ?? { type: 'string' }),
    });
  }
  const required = (query?.required ?? []) as string[];
  for (const [name, schema] of Object.entries((query?.properties ?? {}) as Record<string, Json>)) {
    // An object (the metadata filters) is sent as `name[KEY]=VALUE` (src/api/pipeline.ts).
    const deep = schema.type === 'object' ? { style: 'deepObject', explode: true } : {};
    parameters.push({ name, in: 'query', required: required.includes(name), schema, ...deep });
  }
  if (route.idempotent) parameters.push({ $ref: '#/components/parameters/IdempotencyKey' });
  parameters.push(...(HEADER_PARAMETERS[`${route.method} ${openApiPath(route.path)}`] ?? []));
  return parameters;
}

const WALLET_A = '0b6f3c2e-8d1a-4f5b-9c7e-2a4d6e8f1b3c';
const WALLET_B = '5e9a7c1b-3f2d-4e6a-8b0c-9d1e2f3a4b5c';

/**
 * What the reference page shows in each request body, and what try-it starts from. A schema's
 * own `.meta({ example })` takes precedence; the OpenAPI test checks each of these against both
 * the documented schema and the zod schema that validates the route.
 */
export const REQUEST_EXAMPLES: Record<string, Json> = {
  // A host under the reserved `.example` top-level domain (RFC 2606): the fuzzer's examples phase
  // sends it, and it must never resolve to anything, let alone be contacted.
  'post /api/v1/webhooks/subscriptions': {
    url: 'https://merchant.example/webhooks/wallet',
    events: ['escrow.held', 'escrow.released', 'deposit.completed'],
    is_active: true,
  },
  'patch /api/v1/webhooks/subscriptions/{subscription_id}': {
    events: ['escrow.held', 'escrow.released', 'escrow.refunded'],
    is_active: false,
  },
  'post /api/v1/webhooks/subscriptions/{subscription_id}/rotate-secret': {
    previous_secret_expires_in: 86400,
  },
  'post /api/v1/events/{event_id}/redeliver': {
    subscription_id: '7d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
  },
  'post /api/v1/users/create/': {
    app_user_id: 'customer-1042',
    name: 'Aminata Kamara',
    phone_number: '+23276123456',
    email: 'aminata@example.com',
    metadata: { crm_id: 'C-1042' },
  },
  'patch /api/v1/users/{user_id}/': { metadata: { tier: 'gold', crm_id: '' } },
  'post /api/v1/wallets/create/{user_id}/': { metadata: { purpose: 'savings' } },
  'patch /api/v1/wallets/{wallet_id}/': { metadata: { purpose: 'rent', note: null } },
  'post /api/v1/transactions/wallet/transfer': {
    from_wallet_id: WALLET_A,
    to_wallet_id: WALLET_B,
    amount: 12.5,
    description: 'Rent for March',
    metadata: { invoice_id: 'INV-0312' },
  },
  'post /api/v1/batches': {
    kind: 'transfer',
    items: [
      { from_wallet_id: WALLET_A, to_wallet_id: WALLET_B, amount: 120, reference: 'payroll-0601' },
      { from_wallet_id: WALLET_A, to_wallet_id: WALLET_B, amount: 80.5, reference: 'payroll-0602' },
    ],
    metadata: { run: 'payroll-june' },
  },
  'patch /api/v1/transactions/{transaction_id}': {
    metadata: { shipped: 'yes', coupon: null },
  },
  'post /api/v1/transactions/wallet/mobile-money-deposit': {
    wallet_id: WALLET_A,
    amount: 1000,
    metadata: { order_id: '6735' },
  },
  'post /api/v1/transactions/wallet/mobile-money-cashout': {
    wallet_id: WALLET_A,
    amount: 1000,
    phone_number: '+23276123456',
    metadata: { payout_batch: '2026-03' },
  },
  'post /api/v1/transactions/wallet/card-payout': {
    wallet_id: WALLET_A,
    amount: 25,
    metadata: { payout_batch: '2026-03' },
  },
  'post /api/v1/transactions/{transaction_id}/refund': {
    amount: 12.5,
    reason: 'requested_by_customer',
    metadata: { order_id: 'A-1042' },
  },
  'post /api/v1/testing/simulate-mobile-money-webhook': {
    transaction_id: '7c3e1a9b-2d4f-4a6b-8c0d-1e2f3a4b5c6d',
    status: 'successful',
  },
  'post /api/v1/escrow/hold': {
    wallet_id: WALLET_A,
    amount: 25,
    description: 'Order 1042, released on delivery',
    recipient_wallet_id: WALLET_B,
    expires_at: '2099-12-31T23:59:59Z',
    metadata: { order_id: '1042' },
  },
  'post /api/v1/escrow/{transaction_id}/release': { amount: 10, metadata: { delivery: 'D-7' } },
  'post /api/v1/escrow/{transaction_id}/refund': { metadata: { reason_code: 'cancelled' } },
  // A payload as the Temporal UI sends it: `"hello"` as json/plain, in protobuf JSON.
  'post /api/v1/temporal-codec/decode': {
    payloads: [{ metadata: { encoding: 'anNvbi9wbGFpbg==' }, data: 'ImhlbGxvIg==' }],
  },
  'post /api/v1/temporal-codec/encode': {
    payloads: [{ metadata: { encoding: 'anNvbi9wbGFpbg==' }, data: 'ImhlbGxvIg==' }],
  },
  'post /api/v1/fees/estimate/deposit': { amount: 12.5, payment_method: 'mobile_money' },
  'post /api/v1/transactions/wallet/card-deposit': {
    wallet_id: WALLET_A,
    amount: 25,
    payment_method_id: 'pm_card_visa',
    metadata: { order_id: '6735' },
  },
  'post /api/v1/fees/estimate/deposit/card-metadata': {
    amount: 25,
    payment_method_id: 'pm_card_amex',
  },
  'post /api/v1/admin/payments/{transaction_id}/resolve': {
    outcome: 'failed',
    reason: 'Provider support confirmed the payout never left (ticket 4711)',
    operator: 'Ada Lovelace',
  },
  'post /api/v1/disputes/{dispute_id}/evidence': {
    text: 'Delivered on 2026-03-02 to the cardholder’s address; signed receipt attached by email.',
  },
  'post /api/v1/reconciliation/runs': {
    provider: 'card',
    from: '2026-01-30T00:00:00Z',
    to: '2026-01-31T00:00:00Z',
  },
  'post /api/v1/reconciliation/exceptions/{exception_id}/resolve': {
    action: 'accept',
    note: 'The provider booked the fee twice; their support confirmed it (case 5521)',
  },
  'post /api/v1/reconciliation/exceptions/resolve': {
    ids: ['3f1c2b7a-8d4e-4f6a-9b0c-1d2e3f4a5b6c', '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d'],
    action: 'accept',
    note: 'Known sandbox differences of the January test batch',
  },
  'post /api/v1/testing/simulate-provider-discrepancy': {
    transaction_id: '7c3e1a9b-2d4f-4a6b-8c0d-1e2f3a4b5c6d',
    kind: 'amount',
  },
  'post /api/v1/testing/simulate-dispute': {
    transaction_id: '7c3e1a9b-2d4f-4a6b-8c0d-1e2f3a4b5c6d',
    amount: 25,
    metadata: { case_ref: 'CB-77' },
  },
  'post /api/v1/testing/simulate-dispute-outcome': {
    dispute_id: '3f2a9c7e-5b1d-4e8a-9c6f-0a1b2c3d4e5f',
    status: 'won',
  },
  'post /api/v1/testing/advance-time': {
    transaction_id: '7c3e1a9b-2d4f-4a6b-8c0d-1e2f3a4b5c6d',
    seconds: 86400,
  },
  'post /api/v1/testing/simulate-card-authentication': {
    transaction_id: '7c3e1a9b-2d4f-4a6b-8c0d-1e2f3a4b5c6d',
    status: 'successful',
  },
  'post /api/v1/transactions/wallet/complete-onboarding/': {
    wallet_id: WALLET_A,
    individual: {
      first_name: 'Aminata',
      last_name: 'Kamara',
      dob: { day: 14, month: 3, year: 1990 },
      address: { line1: '12 Siaka Stevens Street', city: 'Freetown', country: 'SL' },
      email: 'aminata@example.com',
      phone: '+23276123456',
      id_number: '000000000',
    },
    business_profile: { mcc: '5734', product_description: 'Handmade furniture, sold online' },
    card_token: 'tok_visa_debit',
  },
};

/** Request headers an operation reads besides the credentials and Idempotency-Key. */
const HEADER_PARAMETERS: Record<string, Json[]> = {
  'post /api/v1/transactions/wallet/complete-onboarding/': [
    {
      name: 'X-Forwarded-For',
      in: 'header',
      required: true,
      description:
        'The end customer’s IP address (the first one listed), recorded with the time as ' +
        'evidence of terms acceptance. Missing, not an address, or the calling server’s own: 400.',
      schema: { type: 'string', minLength: 1 },
      example: '203.0.113.7',
    },
  ],
};

/** Request bodies that are not JSON: their routes have no body schema and stream them. */
const STREAMED_BODIES: Record<string, Json> = {
  'post /api/v1/reconciliation/imports': {
    required: true,
    content: {
      'multipart/form-data': {
        schema: {
          type: 'object',
          required: ['file', 'provider'],
          properties: {
            file: {
              type: 'string',
              format: 'binary',
              description:
                'A CSV of at most 50 MiB and 200,000 rows; header row exactly ' +
                '`provider_reference,booked_at,amount,currency,fee,direction,status`',
            },
            provider: { type: 'string', enum: ['mobile_money', 'card'] },
          },
        },
        encoding: { file: { contentType: 'text/csv' } },
      },
    },
  },
  'post /api/v1/transactions/wallet/{wallet_id}/verification-document': {
    required: true,
    content: {
      'multipart/form-data': {
        schema: {
          type: 'object',
          required: ['file', 'purpose'],
          properties: {
            file: {
              type: 'string',
              format: 'binary',
              description:
                'A JPEG, PNG or PDF (by its content and its declared type), at most 10 MiB',
            },
            purpose: { type: 'string', enum: ['identity_document'] },
          },
        },
        encoding: { file: { contentType: 'image/jpeg, image/png, application/pdf' } },
      },
    },
  },
};

function requestBodyOf(route: Route, schema: Json | undefined): Json {
  const streamed = STREAMED_BODIES[`${route.method} ${openApiPath(route.path)}`];
  if (streamed) return { requestBody: streamed };
  if (!route.body || !schema) return {};
  const example =
    schema.example === undefined
      ? REQUEST_EXAMPLES[`${route.method} ${openApiPath(route.path)}`]
      : undefined;
  return {
    requestBody: {
      required: !route.body.safeParse(undefined).success,
      content: { 'application/json': { schema, ...(example ? { example } : {}) } },
    },
  };
}

type Operation = { operationId: string; parameters: Json[]; responses: Record<string, Json> };

/** The top-level properties of a response schema, its `$ref`s and unions followed. */
function topLevelFields(schema: unknown, components: Record<string, Json>): Set<string> {
  const fields = new Set<string>();
  const visit = (node: unknown) => {
    if (!node || typeof node !== 'object') return;
    const json = node as Json;
    if (typeof json.$ref === 'string') visit(components[json.$ref.slice(COMPONENT.length)]);
    for (const name of Object.keys((json.properties as Json | undefined) ?? {})) fields.add(name);
    for (const key of ['allOf', 'anyOf', 'oneOf']) {
      for (const part of (json[key] as unknown[] | undefined) ?? []) visit(part);
    }
  };
  visit(schema);
  return fields;
}

/** Adds OPENAPI_LINKS to the answers they start from; a link naming nothing real throws. */
function addLinks(
  paths: Record<string, Record<string, unknown>>,
  components: Record<string, Json>,
) {
  const operation = (name: string): Operation => {
    const [method, path] = name.split(' ') as [string, string];
    const found = paths[path]?.[method] as Operation | undefined;
    if (!found) throw new Error(`OpenAPI link: no operation ${name}`);
    return found;
  };
  for (const link of OPENAPI_LINKS) {
    const response = operation(link.from).responses[String(link.status)];
    const target = operation(link.to);
    const content = response?.content as Record<string, Json> | undefined;
    const fields = topLevelFields(content?.['application/json']?.schema, components);
    const inPath = new Set(target.parameters.filter((p) => p.in === 'path').map((p) => p.name));
    for (const [parameter, field] of Object.entries(link.parameters)) {
      if (!fields.has(field) || !inPath.has(parameter)) {
        throw new Error(`OpenAPI link ${link.from} -> ${link.to}: ${parameter} from ${field}`);
      }
    }
    if (inPath.size !== Object.keys(link.parameters).length) {
      throw new Error(`OpenAPI link ${link.from} -> ${link.to}: a path parameter has no value`);
    }
    response!.links = {
      ...(response!.links as Json | undefined),
      [target.operationId]: {
        operationId: target.operationId,
        parameters: Object.fromEntries(
          Object.entries(link.parameters).map(([name, field]) => [
            name,
            `$response.body#/${field}`,
          ]),
        ),
      },
    };
  }
}

/** Methods whose body the server reads (src/api/middleware/body.ts): 400 and 413 apply to them. */
const BODY_METHODS = new Set(['post', 'patch', 'delete']);

/**
 * The OpenAPI 3.1 document, generated from the zod schemas that validate the requests and
 * describe the responses. Shared schemas (those with a zod `id`) live in components/schemas.
 */
export function buildOpenApi(routes: readonly Route[], version: string): Json {
  const inputs = new Map<string, z.ZodType>();
  const outputs = new Map<string, z.ZodType>();
  for (const route of routes) {
    const id = operationId(route);
    if (route.body) inputs.set(`${id}.body`, route.body);
    if (route.query) inputs.set(`${id}.query`, route.query);
    if (route.params) inputs.set(`${id}.params`, route.params);
    for (const [status, spec] of Object.entries(route.responses)) {
      if (spec.schema) outputs.set(`${id}.${status}`, spec.schema);
    }
  }
  const components: Record<string, Json> = {
    Error: {
      type: 'object',
      properties: { detail: { type: 'string' } },
      required: ['detail'],
      additionalProperties: false,
    },
  };
  const requests = convertAll(inputs, 'input', components);
  const replies = convertAll(outputs, 'output', components);

  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const id = operationId(route);
    const path = openApiPath(route.path);
    paths[path] ??= {};
    paths[path][route.method] = {
      summary: route.summary,
      tags: [route.tag],
      operationId: id,
      ...(route.auth !== null
        ? { security: [{ ApiKey: [], SecretKey: [] }], 'x-rate-limit-category': route.auth }
        : { security: [] }),
      ...(route.testModeOnly ? { 'x-test-mode-only': true } : {}),
      ...(route.admin ? { 'x-admin-only': true } : {}),
      ...(route.adminToo ? { 'x-admin-allowed': true } : {}),
      parameters: parametersOf(route, requests.get(`${id}.query`), requests.get(`${id}.params`)),
      ...requestBodyOf(route, requests.get(`${id}.body`)),
      responses: responsesOf(route, BODY_METHODS.has(route.method), (status) =>
        replies.get(`${id}.${status}`),
      ),
    };
  }
  addLinks(paths, components);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Wallet and payments engine',
      version,
      description: [
        'Amounts in the base currency are JSON numbers in major units with at most 2 decimals,',
        'judged as written (12.50 is fine, 10.10000000000000001 is refused); mobile-money',
        'amounts are integer SLE cents. Errors are always {"detail": string}, including 404 for',
        'an unknown path and 405 (with Allow) for a method a path does not support.',
        'Money-moving POSTs accept Idempotency-Key; a replay carries Idempotent-Replayed: true.',
        'Authenticate with the api-key and secret-key headers of a Test Mode or Live Mode',
        'credential (both required). Admin endpoints (x-admin-only) take a platform admin’s',
        'credential (pk_admin_... and sk_admin_...) in the same headers, and only that;',
        'operations marked x-admin-allowed take either an application’s or an admin’s.',
      ].join(' '),
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      securitySchemes: {
        ApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'api-key',
          description:
            'The public half of a credential (pk_test_..., pk_live_... or an admin’s pk_admin_...); required',
        },
        SecretKey: {
          type: 'apiKey',
          in: 'header',
          name: 'secret-key',
          description:
            'The secret half of the same credential (sk_test_..., sk_live_... or sk_admin_...); required',
        },
      },
      headers: RESPONSE_HEADERS,
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'Any 1 to 255 printable ASCII characters; a retry with the same key and request ' +
            'returns the first answer and moves no money. Present but empty: 422.',
          schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$' },
          example: 'order-1234-transfer',
        },
      },
      schemas: Object.fromEntries(
        Object.entries(components).sort(([a], [b]) => a.localeCompare(b)),
      ),
    },
  };
}
