import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { sha256 } from '../../db/credentials';
import { hashPassword } from '../../db/dashboard-accounts';
import {
  acceptInvitation,
  changeRole,
  createInvitation,
  findInvitation,
  listInvitations,
  listTeam,
  removeMember,
  revokeInvitation,
  setTwoStepRequired,
  type TeamChange,
} from '../../db/dashboard-team';
import {
  DASHBOARD_ROLES,
  emailAllowed,
  PASSWORD_LENGTH,
  PASSWORD_RULE,
} from '../../domain/dashboard-access';
import { auditedBySession, type AuditNote } from '../audit';
import { recordAudit } from '../../db/audit-log';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse } from '../errors';
import { defineRoute, type Route } from '../route';
import { MessageBody } from '../schemas';
import { guarded, signedIn } from './guard';
import { startSession } from './session';

/**
 * The team page's endpoints (docs/dashboard.md, Team): members and their roles, invitations by
 * one-time link (its token kept as SHA-256 only, shown once to the owner who made it), and the
 * switch that requires two-step sign-in of everyone. Every change is one database transaction.
 */
const Role = z.enum(DASHBOARD_ROLES);

const Member = z.object({
  id: z.string(),
  email: z.string(),
  role: Role,
  two_step: z.boolean(),
  created_at: z.string(),
});
const InvitationBody = z.object({
  id: z.string(),
  email: z.string(),
  role: Role,
  created_at: z.string(),
  expires_at: z.string(),
});

const Invite = z.object({
  email: z.string().trim().refine(emailAllowed, { error: 'must be an email address' }),
  role: Role,
});

const LAST_OWNER = 'The application must keep at least one owner';

/** A change's outcome as HTTP: the member, or 404, or 400 for the last owner. */
function changed(result: TeamChange) {
  if (result === 'not_found') throw new AppError('not_found', 'Team member not found');
  if (result === 'last_owner') throw new AppError('invalid_request', LAST_OWNER);
  return { body: result };
}

/** The audit note of a change to a member, or null when nothing changed. */
function memberNote(
  result: TeamChange,
  action: string,
  details: Record<string, string>,
): AuditNote | null {
  if (typeof result === 'string') return null;
  return {
    action,
    target: { type: 'dashboard_account', id: result.id },
    details: { email: result.email, ...details },
  };
}

const invitationPath = (token: string) => `/dashboard/invitations/${token}`;

export function teamRoutes(deps: ApiDeps): Route[] {
  const { pool } = deps;
  const MemberParams = z.object({ account_id: z.string() });
  return [
    guarded(
      { action: 'read' },
      defineRoute({
        method: 'get',
        path: '/dashboard/api/team',
        summary: 'The team: members with their roles, open invitations, the two-step switch',
        tag: 'Dashboard',
        auth: null,
        responses: {
          200: {
            description: 'The team',
            schema: z.object({
              members: z.array(Member),
              invitations: z.array(InvitationBody),
              two_step_required: z.boolean(),
            }),
          },
        },
        handler: async ({ ctx }) => {
          const session = signedIn(ctx);
          const [members, invitations] = await Promise.all([
            listTeam(pool, session.application_id),
            listInvitations(pool, session.application_id),
          ]);
          return {
            body: { members, invitations, two_step_required: session.two_step_required },
          };
        },
      }),
    ),
    guarded(
      { action: 'team' },
      defineRoute({
        method: 'post',
        path: '/dashboard/api/team/invitations',
        summary: 'Invites an email with a role: a one-time link, valid for its hours, shown once',
        tag: 'Dashboard',
        auth: null,
        body: Invite,
        responses: {
          201: {
            description: 'The invitation and its link',
            schema: z.object({ invitation: InvitationBody, path: z.string() }),
          },
          400: errorResponse('The email is a member already'),
        },
        handler: async ({ ctx, body }) => {
          const session = signedIn(ctx);
          const token = randomBytes(32).toString('base64url');
          const invitation = await auditedBySession(
            pool,
            ctx,
            session,
            (trx) =>
              createInvitation(trx, {
                applicationId: session.application_id,
                email: body.email,
                role: body.role,
                invitedBy: session.account_id,
                tokenHash: sha256(token),
              }),
            (made) =>
              made === 'member'
                ? null
                : {
                    action: 'team.invitation_created',
                    target: { type: 'invitation', id: made.id },
                    details: { email: made.email, role: made.role, expires_at: made.expires_at },
                  },
          );
          if (invitation === 'member') {
            throw new AppError('invalid_request', 'This email is a member of the team already');
          }
          ctx.set('Cache-Control', 'no-store');
          return { status: 201, body: { invitation, path: invitationPath(token) } };
        },
      }),
    ),
    guarded(
      { action: 'team' },
      defineRoute({
        method: 'delete',
        path: '/dashboard/api/team/invitations/:invitation_id',
        summary: 'Revokes an open invitation: its link no longer works',
        tag: 'Dashboard',
        auth: null,
        params: z.object({ invitation_id: z.string() }),
        responses: {
          200: { description: 'Revoked', schema: MessageBody },
          404: errorResponse('No open invitation with this id'),
        },
        handler: async ({ ctx, params }) => {
          const session = signedIn(ctx);
          const revoked = await auditedBySession(
            pool,
            ctx,
            session,
            (trx) => revokeInvitation(trx, session.application_id, params.invitation_id),
            (done) =>
              done
                ? {
                    action: 'team.invitation_revoked',
                    target: { type: 'invitation', id: params.invitation_id },
                  }
                : null,
          );
          if (!revoked) {
            throw new AppError('not_found', 'Invitation not found');
          }
          return { body: { message: 'Invitation revoked' } };
        },
      }),
    ),
    guarded(
      { action: 'team' },
      defineRoute({
        method: 'patch',
        path: '/dashboard/api/team/members/:account_id',
        summary: 'Changes a member’s role; the last owner stays an owner',
        tag: 'Dashboard',
        auth: null,
        params: MemberParams,
        body: z.object({ role: Role }),
        responses: {
          200: { description: 'The member', schema: Member },
          400: errorResponse('The last owner cannot be demoted'),
          404: errorResponse('No such member'),
        },
        handler: async ({ ctx, params, body }) => {
          const session = signedIn(ctx);
          return changed(
            await auditedBySession(
              pool,
              ctx,
              session,
              (trx) => changeRole(trx, session.application_id, params.account_id, body.role),
              (member) => memberNote(member, 'team.member_role_changed', { role: body.role }),
            ),
          );
        },
      }),
    ),
    guarded(
      { action: 'team' },
      defineRoute({
        method: 'delete',
        path: '/dashboard/api/team/members/:account_id',
        summary: 'Removes a member and ends its sessions; never the last owner',
        tag: 'Dashboard',
        auth: null,
        params: MemberParams,
        responses: {
          200: { description: 'The removed member', schema: Member },
          400: errorResponse('The last owner cannot be removed'),
          404: errorResponse('No such member'),
        },
        handler: async ({ ctx, params }) => {
          const session = signedIn(ctx);
          return changed(
            await auditedBySession(
              pool,
              ctx,
              session,
              (trx) => removeMember(trx, session.application_id, params.account_id),
              (member) => memberNote(member, 'team.member_removed', {}),
            ),
          );
        },
      }),
    ),
    guarded(
      { action: 'team' },
      defineRoute({
        method: 'patch',
        path: '/dashboard/api/team',
        summary: 'Requires two-step sign-in of every member, or not',
        tag: 'Dashboard',
        auth: null,
        body: z.object({ two_step_required: z.boolean() }),
        responses: {
          200: {
            description: 'The switch',
            schema: z.object({ two_step_required: z.boolean() }),
          },
        },
        handler: async ({ ctx, body }) => {
          const session = signedIn(ctx);
          await auditedBySession(
            pool,
            ctx,
            session,
            (trx) => setTwoStepRequired(trx, session.application_id, body.two_step_required),
            () => ({
              action: 'team.two_step_required_changed',
              target: { type: 'application', id: session.application_id },
              details: { two_step_required: body.two_step_required },
            }),
          );
          return { body: { two_step_required: body.two_step_required } };
        },
      }),
    ),
    ...invitationRoutes(deps),
  ];
}

/** The invitation's link, opened by someone not signed in: what it offers, and accepting it. */
function invitationRoutes(deps: ApiDeps): Route[] {
  const { pool } = deps;
  const TokenParams = z.object({ token: z.string().min(1).max(100) });
  const gone = () => new AppError('not_found', 'This invitation link is used, revoked or expired');
  return [
    guarded(
      { open: true },
      defineRoute({
        method: 'get',
        path: '/dashboard/api/invitations/:token',
        summary: 'An open invitation: the email, role and application it is for',
        tag: 'Dashboard',
        auth: null,
        params: TokenParams,
        responses: {
          200: {
            description: 'The invitation',
            schema: InvitationBody.extend({
              application: z.object({ id: z.string(), name: z.string() }),
            }),
          },
          404: errorResponse('Used, revoked or expired'),
        },
        handler: async ({ ctx, params }) => {
          const found = await findInvitation(pool, sha256(params.token));
          if (!found) throw gone();
          const { application_id: id, application_name: name, ...invitation } = found;
          ctx.set('Cache-Control', 'no-store');
          return { body: { ...invitation, application: { id, name } } };
        },
      }),
    ),
    guarded(
      { open: true },
      defineRoute({
        method: 'post',
        path: '/dashboard/api/invitations/:token/accept',
        summary: 'Accepts an invitation: the new account’s password; signs it in',
        tag: 'Dashboard',
        auth: null,
        params: TokenParams,
        body: z.object({
          password: z
            .string()
            .min(PASSWORD_LENGTH.min, { error: PASSWORD_RULE })
            .max(PASSWORD_LENGTH.max, { error: PASSWORD_RULE }),
        }),
        responses: {
          200: { description: 'The account, signed in' },
          400: errorResponse('The email has a dashboard account already'),
          404: errorResponse('Used, revoked or expired'),
        },
        handler: async ({ ctx, params, body }) => {
          const passwordHash = await hashPassword(body.password);
          // The new account is the actor: its entry is written with it, or not at all.
          const account = await pool.transaction(async (trx) => {
            const made = await acceptInvitation(trx, sha256(params.token), passwordHash);
            if (typeof made === 'string') return made;
            await recordAudit(trx, {
              actor: { type: 'dashboard_account', id: made.id, name: made.email },
              action: 'team.invitation_accepted',
              target: { type: 'dashboard_account', id: made.id },
              ip: ctx.ip || null,
              applicationId: made.application_id,
              details: { role: made.role },
            });
            return made;
          });
          if (account === 'gone') throw gone();
          if (account === 'taken') {
            throw new AppError(
              'email_taken',
              'This email has a dashboard account already: sign in with it instead',
            );
          }
          return startSession(deps, ctx, account.id);
        },
      }),
    ),
  ];
}
