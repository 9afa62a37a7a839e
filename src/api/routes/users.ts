import { z } from 'zod';
import { uniqueViolation } from '../../db/errors';
import {
  blockerToDelete,
  deleteUser,
  findUser,
  insertUser,
  mergeUserMetadata,
  USERS_EMAIL_UNIQUE,
  listUsers,
  lockUser,
  setUserActive,
} from '../../db/users';
import { assertOwned, ownedUser } from '../access';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse } from '../errors';
import { defineRoute, type Route } from '../route';
import {
  BooleanQuery,
  MessageBody,
  Metadata,
  MetadataFilter,
  METADATA_TOO_MANY_KEYS,
  MetadataPatchBody,
  PageQuery,
  pageEnvelope,
  pageWindow,
  toPage,
} from '../schemas';
import { UserBody, UserDetailBody, userBody, userDetailBody } from '../serializers';

const CreateUser = z.object({
  app_user_id: z
    .union([z.string().min(1).max(255), z.number().finite()])
    .transform((v) => String(v))
    .meta({ description: 'The application’s own id; a number is stored and returned as a string' }),
  name: z.string().trim().min(1).max(200),
  phone_number: z.string().trim().min(3).max(32),
  email: z
    .email()
    .max(254)
    // RFC 5321: a local part of at most 64 octets (zod's pattern has no such limit).
    .refine((v) => Buffer.byteLength(v.slice(0, v.lastIndexOf('@'))) <= 64, {
      message: 'the part before @ must be at most 64 characters',
    })
    .nullish(),
  username: z.string().max(100).nullish(),
  is_active: z.boolean().default(true),
  metadata: Metadata.optional(),
});

/** A text filter: 1 to `max` characters. */
const TextQuery = (max: number, description: string) =>
  z
    .string({ error: `must be 1 to ${max} characters` })
    .min(1, `must be 1 to ${max} characters`)
    .max(max, `must be 1 to ${max} characters`)
    .optional()
    .meta({ description });

const UserListQuery = PageQuery.extend({
  is_active: BooleanQuery.optional(),
  email: TextQuery(254, 'The user with this email (case-insensitive)'),
  phone_number: TextQuery(32, 'Users with this phone number, exactly'),
  app_user_id: TextQuery(255, 'The user with this app_user_id, exactly'),
  q: TextQuery(
    200,
    'Users whose name, email, phone number or app_user_id contains this (case-insensitive)',
  ),
  metadata: MetadataFilter.optional(),
});

const UserParams = z.object({ user_id: z.string() });

export function userRoutes(deps: ApiDeps): Route[] {
  const { pool } = deps;
  return [
    defineRoute({
      method: 'post',
      path: '/api/v1/users/create/',
      summary: 'Create a user; create their wallet next',
      tag: 'Users',
      auth: 'default',
      body: CreateUser,
      responses: {
        200: { description: 'The user', schema: UserBody },
        400: errorResponse('Email already exists within the application'),
        401: errorResponse('Missing or invalid credentials'),
        422: errorResponse('Validation failure'),
      },
      handler: async ({ caller, body }) => {
        try {
          const user = await insertUser(pool, caller, {
            app_user_id: body.app_user_id,
            name: body.name,
            phone_number: body.phone_number,
            email: body.email ?? null,
            username: body.username ?? null,
            is_active: body.is_active,
            metadata: body.metadata ?? {},
          });
          return { body: userBody(user) };
        } catch (error) {
          if (uniqueViolation(error) === USERS_EMAIL_UNIQUE) {
            throw new AppError('email_taken', null, { cause: error });
          }
          throw error;
        }
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/users/',
      summary:
        'List users (page envelope); filters (all combinable): is_active, email, phone_number, ' +
        'app_user_id, q, metadata[KEY]=VALUE',
      tag: 'Users',
      auth: 'default',
      query: UserListQuery,
      responses: {
        200: { description: 'A page of users', schema: pageEnvelope(UserBody) },
        401: errorResponse('Missing or invalid credentials'),
        422: errorResponse('Invalid paging or filter'),
      },
      handler: async ({ caller, query }) => {
        const { rows, total } = await listUsers(
          pool,
          caller,
          {
            is_active: query.is_active,
            email: query.email,
            phone_number: query.phone_number,
            app_user_id: query.app_user_id,
            q: query.q,
            metadata: query.metadata,
          },
          pageWindow(query),
        );
        return { body: toPage(rows.map(userBody), total, query) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/users/:user_id/',
      summary: 'Get a user',
      tag: 'Users',
      auth: 'default',
      params: UserParams,
      responses: {
        200: { description: 'The user', schema: UserDetailBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The user belongs to another application or mode'),
        404: errorResponse('User not found'),
      },
      handler: async ({ caller, params }) => ({
        body: userDetailBody(await ownedUser(pool, caller, params.user_id)),
      }),
    }),
    defineRoute({
      method: 'patch',
      path: '/api/v1/users/:user_id/',
      summary: 'Update a user’s metadata: merged into what is stored; "" or null removes a key',
      tag: 'Users',
      auth: 'default',
      params: UserParams,
      body: MetadataPatchBody,
      responses: {
        200: { description: 'The updated user', schema: UserBody },
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The user belongs to another application or mode'),
        404: errorResponse('User not found'),
        422: errorResponse('Another field than metadata, or metadata breaking a limit'),
      },
      handler: async ({ caller, params, body }) => {
        await ownedUser(pool, caller, params.user_id);
        const user = await mergeUserMetadata(pool, params.user_id, body.metadata);
        if (user) return { body: userBody(user) };
        // No row: deleted since, or the merged metadata broke the limit and nothing was written.
        assertOwned(caller, await findUser(pool, params.user_id), 'User');
        throw new AppError('validation_failed', METADATA_TOO_MANY_KEYS);
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/api/v1/users/:user_id/',
      summary: 'Delete a user: personal data and wallet are purged; ledger entries stay',
      tag: 'Users',
      auth: 'default',
      params: UserParams,
      responses: {
        200: { description: 'Deleted', schema: MessageBody },
        400: errorResponse('The wallet holds money, or an escrow hold, payment or dispute is open'),
        401: errorResponse('Missing or invalid credentials'),
        403: errorResponse('The user belongs to another application or mode'),
        404: errorResponse('User not found'),
      },
      handler: async ({ caller, params }) => {
        await pool.transaction(async (trx) => {
          assertOwned(caller, await lockUser(trx, params.user_id), 'User');
          const blocker = await blockerToDelete(trx, params.user_id);
          if (blocker) throw new AppError('not_deletable', blocker);
          await deleteUser(trx, params.user_id);
        });
        return { body: { message: 'User deleted successfully' } };
      },
    }),
    ...(['enable', 'disable'] as const).map((action) =>
      defineRoute({
        method: 'post',
        path: `/api/v1/users/:user_id/${action}`,
        summary: `${action === 'enable' ? 'Enable' : 'Disable'} a user and their wallet`,
        tag: 'Users',
        auth: 'default',
        params: UserParams,
        responses: {
          200: { description: 'Done', schema: MessageBody },
          401: errorResponse('Missing or invalid credentials'),
          403: errorResponse('The user belongs to another application or mode'),
          404: errorResponse('User not found'),
        },
        handler: async ({ caller, params }) => {
          await pool.transaction(async (trx) => {
            assertOwned(caller, await lockUser(trx, params.user_id), 'User');
            await setUserActive(trx, params.user_id, action === 'enable');
          });
          if (action === 'disable') deps.wallets?.forgetAll();
          return { body: { message: `User ${action}d successfully` } };
        },
      }),
    ),
  ];
}
