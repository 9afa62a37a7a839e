import { z } from 'zod';
import { findApplication } from '../../db/applications';
import { lockUser } from '../../db/users';
import {
  findWallet,
  findWalletByUser,
  insertWallet,
  listWallets,
  mergeWalletMetadata,
  setWalletActive,
} from '../../db/wallets';
import { assertOwned, ownedUser, ownedWallet } from '../access';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse } from '../errors';
import { defineRoute, type Route } from '../route';
import {
  BooleanQuery,
  Metadata,
  METADATA_TOO_MANY_KEYS,
  MetadataPatchBody,
  PageQuery,
  TOTAL_DESCRIPTION,
} from '../schemas';

/** The creation body is optional: an empty body is a wallet without metadata. */
const CreateWallet = z.object({ metadata: Metadata.optional() }).optional();
import { WalletBody, walletBody } from '../serializers';

export function walletRoutes(deps: ApiDeps): Route[] {
  const { pool } = deps;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/wallets/create/:user_id/',
      summary: 'Create the user’s wallet, in the application’s base currency',
      tag: 'Wallets',
      auth: 'default',
      params: z.object({ user_id: z.string() }),
      body: CreateWallet,
      responses: {
        200: { description: 'The wallet', schema: WalletBody },
        400: errorResponse('A wallet already exists for the user'),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The user belongs to another application or mode'),
        404: errorResponse('User not found'),
        422: errorResponse('Metadata breaking a limit'),
      },
      handler: async ({ caller, params, body }) => {
        const app = await findApplication(pool, caller.applicationId);
        if (!app) throw new Error('the caller’s application does not exist');
        const wallet = await pool.transaction(async (trx) => {
          const user = assertOwned(caller, await lockUser(trx, params.user_id), 'User');
          if (await findWalletByUser(trx, user.id)) {
            throw new AppError('wallet_exists');
          }
          return insertWallet(
            trx,
            caller,
            user.id,
            app.base_currency,
            user.is_active,
            body?.metadata ?? {},
          );
        });
        return { body: walletBody(wallet) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/wallets/',
      summary: 'List wallets: a bare array, paged, with X-Total-Count and Link headers',
      tag: 'Wallets',
      auth: 'default',
      query: PageQuery.extend({ is_active: BooleanQuery.optional() }),
      responses: {
        200: {
          description: 'Wallets, a page of them',
          schema: z.array(WalletBody),
          headers: {
            'X-Total-Count': {
              description: TOTAL_DESCRIPTION,
              required: true,
              schema: { type: 'integer', minimum: 0 },
            },
            Link: {
              description:
                'RFC 8288 links to the next and previous pages (`rel="next"`, `rel="prev"`); ' +
                'absent when there is neither',
              schema: { type: 'string' },
              example: '</api/v1/wallets/?page=2&per_page=20>; rel="next"',
            },
          },
        },
        401: errorResponse('Missing or invalid credentials'),
        422: errorResponse('Invalid paging or filter'),
      },
      handler: async ({ ctx, caller, query }) => {
        const { rows, total } = await listWallets(
          pool,
          caller,
          { is_active: query.is_active },
          { limit: query.per_page, offset: (query.page - 1) * query.per_page },
        );
        return {
          body: rows.map(walletBody),
          headers: {
            'X-Total-Count': String(total),
            ...linkHeader(ctx.path, ctx.querystring, query.page, query.per_page, total),
          },
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/wallets/:user_id/',
      summary: 'Get a user’s wallet (by the owner’s user id)',
      tag: 'Wallets',
      auth: 'default',
      params: z.object({ user_id: z.string() }),
      responses: {
        200: { description: 'The wallet', schema: WalletBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The user belongs to another application or mode'),
        404: errorResponse('The user has no wallet'),
      },
      handler: async ({ caller, params }) => {
        await ownedUser(pool, caller, params.user_id);
        const wallet = await findWalletByUser(pool, params.user_id);
        if (!wallet) throw new AppError('wallet_not_found');
        return { body: walletBody(wallet) };
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/api/v1/wallets/:wallet_id/',
      summary: 'Update a wallet’s metadata: merged into what is stored; "" or null removes a key',
      tag: 'Wallets',
      auth: 'default',
      params: z.object({ wallet_id: z.string() }),
      body: MetadataPatchBody,
      responses: {
        200: { description: 'The updated wallet', schema: WalletBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The wallet belongs to another application or mode'),
        404: errorResponse('Wallet not found'),
        422: errorResponse('Another field than metadata, or metadata breaking a limit'),
      },
      handler: async ({ caller, params, body }) => {
        await ownedWallet(pool, caller, params.wallet_id);
        const wallet = await mergeWalletMetadata(pool, params.wallet_id, body.metadata);
        if (wallet) return { body: walletBody(wallet) };
        // No row: deleted since, or the merged metadata broke the limit and nothing was written.
        assertOwned(caller, await findWallet(pool, params.wallet_id), 'Wallet');
        throw new AppError('validation_failed', METADATA_TOO_MANY_KEYS);
      },
    }),
    ...(['enable', 'disable'] as const).map((action) =>
      defineRoute({
        method: 'post',
        path: `/api/v1/wallets/:wallet_id/${action}`,
        summary: `${action === 'enable' ? 'Enable' : 'Disable'} a wallet`,
        tag: 'Wallets',
        auth: 'default',
        params: z.object({ wallet_id: z.string() }),
        responses: {
          200: { description: 'The wallet', schema: WalletBody },
          400: errorResponse(
            action === 'enable' ? 'The owning user is disabled' : 'Invalid request',
          ),
          401: errorResponse('Missing or invalid credentials'),
          403: errorResponse('The wallet belongs to another application or mode'),
          404: errorResponse('Wallet not found'),
        },
        handler: async ({ caller, params }) => {
          const wallet = await ownedWallet(pool, caller, params.wallet_id);
          if (action === 'enable' && !wallet.user_is_active) {
            throw new AppError('user_disabled');
          }
          const changed = await setWalletActive(pool, wallet.id, action === 'enable');
          // This process's payments read it again (src/cache/wallet-memory.ts); others' ledger steps
          // refuse it under their lock.
          if (action === 'disable') deps.wallets?.forgetAll();
          return { body: walletBody(changed) };
        },
      }),
    ),
  ];
}

/** RFC 8288 links to the neighbouring pages, keeping the other query parameters. */
function linkHeader(
  path: string,
  querystring: string,
  page: number,
  perPage: number,
  total: number,
): Record<string, string> {
  const pages = Math.ceil(total / perPage);
  const at = (p: number) => {
    const q = new URLSearchParams(querystring);
    q.set('page', String(p));
    q.set('per_page', String(perPage));
    return `<${path}?${q.toString()}>`;
  };
  const links: string[] = [];
  if (page < pages) links.push(`${at(page + 1)}; rel="next"`);
  if (page > 1) links.push(`${at(Math.min(page - 1, Math.max(pages, 1)))}; rel="prev"`);
  return links.length ? { Link: links.join(', ') } : {};
}
