import { randomUUID } from 'node:crypto';
import { sql, type CommonQueryMethods, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { DASHBOARD_ROLES, type DashboardRole } from '../domain/dashboard-access';
import { accountColumns, accountRow, type DashboardAccount } from './dashboard-accounts';

/**
 * An application's dashboard team: its members, their roles and the invitations to join. Each
 * change is one database transaction (`db.transaction` here), so that whatever else a change
 * must record is written with it or not at all.
 */
const memberRow = z.object({
  id: z.string(),
  email: z.string(),
  role: z.enum(DASHBOARD_ROLES),
  two_step: z.boolean(),
  created_at: z.string(),
});
export type TeamMember = z.infer<typeof memberRow>;
const memberColumns = sql.fragment`id, email, role, totp_enabled_at IS NOT NULL AS two_step, created_at`;

export async function listTeam(
  db: CommonQueryMethods,
  applicationId: string,
): Promise<readonly TeamMember[]> {
  return db.any(sql.type(memberRow)`
    SELECT ${memberColumns}
    FROM dashboard_users WHERE application_id = ${applicationId} ORDER BY created_at, id`);
}

/** An invitation's lifetime: its link works this long, once. */
export const INVITATION_HOURS = 72;

const invitationRow = z.object({
  id: z.string(),
  email: z.string(),
  role: z.enum(DASHBOARD_ROLES),
  created_at: z.string(),
  expires_at: z.string(),
});
export type Invitation = z.infer<typeof invitationRow>;
const invitationColumns = sql.fragment`id, email, role, created_at, expires_at`;
const open = sql.fragment`accepted_at IS NULL AND revoked_at IS NULL AND expires_at > now()`;

export async function listInvitations(
  db: CommonQueryMethods,
  applicationId: string,
): Promise<readonly Invitation[]> {
  return db.any(sql.type(invitationRow)`
    SELECT ${invitationColumns} FROM dashboard_invitations
    WHERE application_id = ${applicationId} AND ${open} ORDER BY created_at DESC, id`);
}

/**
 * Invites an email to the team; an earlier open invitation of the same email is revoked, so only
 * the newest link works. `member` when the email is already an account of the application.
 */
export async function createInvitation(
  db: CommonQueryMethods,
  input: {
    applicationId: string;
    email: string;
    role: DashboardRole;
    invitedBy: string;
    tokenHash: Buffer;
  },
): Promise<Invitation | 'member'> {
  return db.transaction(async (trx) => {
    const member = await trx.exists(sql.unsafe`
      SELECT 1 FROM dashboard_users
      WHERE application_id = ${input.applicationId} AND lower(email) = lower(${input.email})`);
    if (member) return 'member';
    await trx.query(sql.unsafe`
      UPDATE dashboard_invitations SET revoked_at = now()
      WHERE application_id = ${input.applicationId} AND lower(email) = lower(${input.email})
        AND ${open}`);
    return trx.one(sql.type(invitationRow)`
      INSERT INTO dashboard_invitations
        (id, application_id, email, role, token_hash, invited_by, expires_at)
      VALUES (${randomUUID()}, ${input.applicationId}, ${input.email}, ${input.role},
              ${sql.binary(input.tokenHash)}, ${input.invitedBy},
              now() + make_interval(hours => ${INVITATION_HOURS}))
      RETURNING ${invitationColumns}`);
  });
}

/** Revokes an open invitation of the application; false when there is none with that id. */
export async function revokeInvitation(
  db: CommonQueryMethods,
  applicationId: string,
  id: string,
): Promise<boolean> {
  return db.transaction(async (trx) => {
    const result = await trx.query(sql.unsafe`
      UPDATE dashboard_invitations SET revoked_at = now()
      WHERE id = ${id} AND application_id = ${applicationId} AND ${open}`);
    return result.rowCount === 1;
  });
}

const openInvitationRow = invitationRow.extend({
  application_id: z.string(),
  application_name: z.string(),
});
export type OpenInvitation = z.infer<typeof openInvitationRow>;

/** The open invitation of a link's token, with its application, or null. */
export async function findInvitation(
  db: CommonQueryMethods,
  tokenHash: Buffer,
): Promise<OpenInvitation | null> {
  return db.maybeOne(sql.type(openInvitationRow)`
    SELECT i.id, i.email, i.role, i.created_at, i.expires_at, i.application_id,
      a.name AS application_name
    FROM dashboard_invitations i JOIN applications a ON a.id = i.application_id
    WHERE i.token_hash = ${sql.binary(tokenHash)}
      AND i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now()`);
}

/**
 * Accepts an invitation once: the new account with the invitation's email and role. `gone` when
 * the link is not open (used, revoked, expired), `taken` when the email has an account already.
 */
export async function acceptInvitation(
  db: CommonQueryMethods,
  tokenHash: Buffer,
  passwordHash: string,
): Promise<DashboardAccount | 'gone' | 'taken'> {
  return db.transaction(async (trx) => {
    const invitation = await trx.maybeOne(sql.type(
      z.object({ id: z.string(), application_id: z.string(), email: z.string(), role: z.string() }),
    )`
      SELECT id, application_id, email, role FROM dashboard_invitations
      WHERE token_hash = ${sql.binary(tokenHash)} AND ${open} FOR UPDATE`);
    if (!invitation) return 'gone';
    // Any unique conflict is the email's: no row back, and the transaction stays usable.
    const account = await trx.maybeOne(sql.type(accountRow)`
      INSERT INTO dashboard_users (id, application_id, email, password_hash, role)
      VALUES (${randomUUID()}, ${invitation.application_id}, ${invitation.email},
              ${passwordHash}, ${invitation.role})
      ON CONFLICT DO NOTHING
      RETURNING ${accountColumns}`);
    if (!account) return 'taken';
    await trx.query(sql.unsafe`
      UPDATE dashboard_invitations SET accepted_at = now() WHERE id = ${invitation.id}`);
    return account;
  });
}

/**
 * Locks the application's owners (in id order, so two changes queue rather than deadlock) and
 * says whether `accountId` is the only one left.
 */
async function lastOwner(
  trx: DatabaseTransactionConnection,
  applicationId: string,
  accountId: string,
): Promise<boolean> {
  const owners = await trx.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM dashboard_users
    WHERE application_id = ${applicationId} AND role = 'owner' ORDER BY id FOR UPDATE`);
  return owners.length === 1 && owners[0] === accountId;
}

export type TeamChange = TeamMember | 'not_found' | 'last_owner';

/** Changes a member's role; never the last owner's to another. */
export async function changeRole(
  db: CommonQueryMethods,
  applicationId: string,
  accountId: string,
  role: DashboardRole,
): Promise<TeamChange> {
  return db.transaction(async (trx) => {
    if (role !== 'owner' && (await lastOwner(trx, applicationId, accountId))) return 'last_owner';
    const member = await trx.maybeOne(sql.type(memberRow)`
      UPDATE dashboard_users SET role = ${role}
      WHERE id = ${accountId} AND application_id = ${applicationId}
      RETURNING ${memberColumns}`);
    return member ?? 'not_found';
  });
}

/** Removes a member (its sessions end with it); never the last owner. */
export async function removeMember(
  db: CommonQueryMethods,
  applicationId: string,
  accountId: string,
): Promise<TeamChange> {
  return db.transaction(async (trx) => {
    if (await lastOwner(trx, applicationId, accountId)) return 'last_owner';
    const member = await trx.maybeOne(sql.type(memberRow)`
      DELETE FROM dashboard_users
      WHERE id = ${accountId} AND application_id = ${applicationId}
      RETURNING ${memberColumns}`);
    return member ?? 'not_found';
  });
}

/** The team's switch: every member signs in with two steps. */
export async function setTwoStepRequired(
  db: CommonQueryMethods,
  applicationId: string,
  required: boolean,
): Promise<void> {
  await db.transaction(async (trx) => {
    await trx.query(sql.unsafe`
      UPDATE applications SET dashboard_two_step_required = ${required}
      WHERE id = ${applicationId}`);
  });
}
