/**
 * OpenAPI `links`: from an answer to the operations that take the id it carries, so that a
 * reader (and a stateful fuzzer) can follow a user to its wallet, a wallet to its statement, a
 * card deposit to its refund. `buildOpenApi` refuses a link whose ends or fields do not exist.
 */
export type OpenApiLink = {
  /** The operation answering, as `method /path` of the OpenAPI document. */
  from: string;
  status: number;
  /** The operation that takes the id. */
  to: string;
  /** Each path parameter of `to`, by the top-level field of `from`'s answer that holds it. */
  parameters: Record<string, string>;
};

const USER = 'post /api/v1/users/create/';
const WALLET = 'post /api/v1/wallets/create/{user_id}/';
const PAYMENTS = [
  'post /api/v1/transactions/wallet/transfer',
  'post /api/v1/transactions/wallet/card-deposit',
  'post /api/v1/transactions/wallet/mobile-money-cashout',
  'post /api/v1/transactions/wallet/card-payout',
  'post /api/v1/transactions/{transaction_id}/refund',
  'post /api/v1/escrow/hold',
  'post /api/v1/escrow/{transaction_id}/release',
  'post /api/v1/escrow/{transaction_id}/refund',
];
const BATCH = 'post /api/v1/batches';
const SUBSCRIPTION = 'post /api/v1/webhooks/subscriptions';
const DISPUTE = 'post /api/v1/testing/simulate-dispute';

const each = (
  from: string,
  status: number,
  targets: readonly string[],
  parameters: Record<string, string>,
): OpenApiLink[] => targets.map((to) => ({ from, status, to, parameters }));

export const OPENAPI_LINKS: readonly OpenApiLink[] = [
  ...each(
    USER,
    200,
    [
      'get /api/v1/users/{user_id}/',
      'patch /api/v1/users/{user_id}/',
      'delete /api/v1/users/{user_id}/',
      'post /api/v1/users/{user_id}/enable',
      'post /api/v1/users/{user_id}/disable',
      'post /api/v1/wallets/create/{user_id}/',
      'get /api/v1/wallets/{user_id}/',
    ],
    { user_id: 'id' },
  ),
  ...each(
    WALLET,
    200,
    [
      'patch /api/v1/wallets/{wallet_id}/',
      'post /api/v1/wallets/{wallet_id}/enable',
      'post /api/v1/wallets/{wallet_id}/disable',
      'get /api/v1/wallets/{wallet_id}/statement',
      'get /api/v1/wallets/{wallet_id}/balance',
    ],
    { wallet_id: 'id' },
  ),
  ...PAYMENTS.flatMap((from) =>
    each(
      from,
      200,
      [
        'get /api/v1/transactions/{transaction_id}',
        'patch /api/v1/transactions/{transaction_id}',
        'get /api/v1/transactions/{transaction_id}/timeline',
      ],
      { transaction_id: 'id' },
    ),
  ),
  ...each(
    'post /api/v1/transactions/wallet/mobile-money-deposit',
    200,
    [
      'get /api/v1/transactions/{transaction_id}',
      'get /api/v1/transactions/{transaction_id}/timeline',
    ],
    { transaction_id: 'transaction_id' },
  ),
  ...each(
    'post /api/v1/transactions/wallet/card-deposit',
    200,
    ['post /api/v1/transactions/{transaction_id}/refund'],
    { transaction_id: 'id' },
  ),
  ...each(
    'post /api/v1/escrow/hold',
    200,
    [
      'get /api/v1/escrow/{transaction_id}',
      'post /api/v1/escrow/{transaction_id}/release',
      'post /api/v1/escrow/{transaction_id}/refund',
    ],
    { transaction_id: 'id' },
  ),
  ...each(
    BATCH,
    202,
    [
      'get /api/v1/batches/{batch_id}',
      'get /api/v1/batches/{batch_id}/items',
      'post /api/v1/batches/{batch_id}/cancel',
    ],
    { batch_id: 'id' },
  ),
  ...each('post /api/v1/reconciliation/runs', 202, ['get /api/v1/reconciliation/runs/{run_id}'], {
    run_id: 'id',
  }),
  ...each(
    SUBSCRIPTION,
    201,
    [
      'get /api/v1/webhooks/subscriptions/{subscription_id}',
      'patch /api/v1/webhooks/subscriptions/{subscription_id}',
      'delete /api/v1/webhooks/subscriptions/{subscription_id}',
      'post /api/v1/webhooks/subscriptions/{subscription_id}/test',
      'post /api/v1/webhooks/subscriptions/{subscription_id}/rotate-secret',
    ],
    { subscription_id: 'id' },
  ),
  ...each(
    DISPUTE,
    200,
    ['get /api/v1/disputes/{dispute_id}', 'post /api/v1/disputes/{dispute_id}/evidence'],
    { dispute_id: 'id' },
  ),
  ...each('get /api/v1/events/{event_id}', 200, ['post /api/v1/events/{event_id}/redeliver'], {
    event_id: 'id',
  }),
  ...each(
    'get /api/v1/reconciliation/exceptions/{exception_id}',
    200,
    ['post /api/v1/reconciliation/exceptions/{exception_id}/resolve'],
    { exception_id: 'id' },
  ),
];
