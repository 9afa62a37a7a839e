import { randomBytes, randomUUID, scrypt, timingSafeEqual } from 'node:crypto';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { DASHBOARD_ROLES, FRESH_SECONDS, type DashboardRole } from '../domain/dashboard-access';
import { sha256 } from './credentials';
import { uniqueViolation } from './errors';

/**
 * Dashboard accounts and their sessions. A password hash keeps its scrypt parameters
 * (`scrypt$N$r$p$salt$hash`), so the cost can be raised without losing old hashes. A session token
 * is 256 random bits: one SHA-256 is enough at rest, as for API credentials.
 */
const SCRYPT = { N: 2 ** 15, r: 8, p: 1, keyLength: 32 } as const;

function scryptAsync(password: string, salt: Buffer, N: number, r: number, p: number) {
  return new Promise<Buffer>((resolve, reject) =>
    scrypt(password, salt, SCRYPT.keyLength, { N, r, p, maxmem: 256 * N * r }, (error, key) =>
      error ? reject(error) : resolve(key),
    ),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, SCRYPT.N, SCRYPT.r, SCRYPT.p);
  return [
    'scrypt',
    SCRYPT.N,
    SCRYPT.r,
    SCRYPT.p,
    salt.toString('base64'),
    key.toString('base64'),
  ].join('$');
}

// Compared against when the email is unknown, so that both paths cost one scrypt.
const DUMMY_HASH = `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(32).toString('base64')}`;

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const key = await scryptAsync(
    password,
    Buffer.from(salt, 'base64'),
    Number(n),
    Number(r),
    Number(p),
  );
  return key.length === expected.length && timingSafeEqual(key, expected);
}

export const DASHBOARD_EMAIL_UNIQUE = 'dashboard_users_email_unique';

export const accountRow = z.object({
  id: z.string(),
  application_id: z.string(),
  email: z.string(),
  role: z.enum(DASHBOARD_ROLES),
  created_at: z.string(),
});
export type DashboardAccount = z.infer<typeof accountRow>;

export const accountColumns = sql.fragment`id, application_id, email, role, created_at`;

/**
 * Creates an account (an owner unless told: the command line makes owners); null when the email
 * is already taken (by any application).
 */
export async function createDashboardAccount(
  db: CommonQueryMethods,
  input: { applicationId: string; email: string; password: string; role?: DashboardRole },
): Promise<DashboardAccount | null> {
  const passwordHash = await hashPassword(input.password);
  try {
    return await db.one(sql.type(accountRow)`
      INSERT INTO dashboard_users (id, application_id, email, password_hash, role)
      VALUES (${randomUUID()}, ${input.applicationId}, ${input.email}, ${passwordHash},
              ${input.role ?? 'owner'})
      RETURNING ${accountColumns}`);
  } catch (error) {
    if (uniqueViolation(error) === DASHBOARD_EMAIL_UNIQUE) return null;
    throw error;
  }
}

export async function listDashboardAccounts(db: CommonQueryMethods, applicationId: string) {
  return db.any(sql.type(accountRow)`
    SELECT ${accountColumns} FROM dashboard_users
    WHERE application_id = ${applicationId} ORDER BY created_at, id`);
}

/** The account whose email and password match (constant work either way), or null. */
export async function checkDashboardPassword(
  db: CommonQueryMethods,
  email: string,
  password: string,
): Promise<DashboardAccount | null> {
  const row = await db.maybeOne(sql.type(accountRow.extend({ password_hash: z.string() }))`
    SELECT ${accountColumns}, password_hash FROM dashboard_users
    WHERE lower(email) = lower(${email})`);
  const ok = await verifyPassword(password, row?.password_hash ?? DUMMY_HASH);
  if (!row || !ok) return null;
  const { password_hash: _hash, ...account } = row;
  return account;
}

/** Whether the password is the account's own (the fresh sign-in's confirmation). */
export async function checkAccountPassword(
  db: CommonQueryMethods,
  accountId: string,
  password: string,
): Promise<boolean> {
  const stored = await db.maybeOneFirst(sql.type(z.object({ password_hash: z.string() }))`
    SELECT password_hash FROM dashboard_users WHERE id = ${accountId}`);
  return verifyPassword(password, stored ?? DUMMY_HASH);
}

export const SESSION_HOURS = 12;

/** What a session waits for before it is fully signed in: a code, or enrolling in two-step. */
export const SESSION_NEEDS = ['code', 'enrolment'] as const;
export type SessionNeeds = (typeof SESSION_NEEDS)[number];

/**
 * A session still waiting for its second step lives as long as a sign-in stays fresh: the
 * password it was opened with is then fresh for every step it may take.
 */
export const SECOND_STEP_MINUTES = FRESH_SECONDS / 60;

const lifetime = (needs: SessionNeeds | null) =>
  needs === null
    ? sql.fragment`now() + make_interval(hours => ${SESSION_HOURS})`
    : sql.fragment`now() + make_interval(mins => ${SECOND_STEP_MINUTES})`;

/**
 * Opens a session, signed in or waiting for its second step (`needs`); the token goes in the
 * cookie and is never stored in clear.
 */
export async function openDashboardSession(
  db: CommonQueryMethods,
  accountId: string,
  needs: SessionNeeds | null = null,
): Promise<{ token: string; expiresAt: string }> {
  const token = randomBytes(32).toString('base64url');
  const row = await db.one(sql.type(z.object({ expires_at: z.string() }))`
    INSERT INTO dashboard_sessions (id, dashboard_user_id, token_hash, expires_at, needs)
    VALUES (${randomUUID()}, ${accountId}, ${sql.binary(sha256(token))}, ${lifetime(needs)},
            ${needs})
    RETURNING expires_at`);
  return { token, expiresAt: row.expires_at };
}

/**
 * The password or a code was given now: the session is fresh, and one that waited for its
 * second step is signed in for the full lifetime from here.
 */
export async function confirmDashboardSession(
  db: CommonQueryMethods,
  sessionId: string,
  needs: SessionNeeds | null = null,
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE dashboard_sessions
    SET confirmed_at = now(), needs = ${needs},
        expires_at = CASE WHEN needs IS NULL THEN expires_at ELSE ${lifetime(needs)} END
    WHERE id = ${sessionId} AND revoked_at IS NULL`);
}

const sessionRow = z.object({
  session_id: z.string(),
  account_id: z.string(),
  email: z.string(),
  role: z.enum(DASHBOARD_ROLES),
  application_id: z.string(),
  application_name: z.string(),
  base_currency: z.string(),
  needs: z.enum(SESSION_NEEDS).nullable(),
  /** The password or a code was given within FRESH_SECONDS: the one definition of fresh. */
  fresh: z.boolean(),
  two_step: z.boolean(),
  two_step_required: z.boolean(),
});
export type DashboardSession = z.infer<typeof sessionRow>;

/** The live session of a token (not revoked, not expired), with its account and application. */
export async function findDashboardSession(
  db: CommonQueryMethods,
  token: string,
): Promise<DashboardSession | null> {
  return db.maybeOne(sql.type(sessionRow)`
    SELECT s.id AS session_id, u.id AS account_id, u.email, u.role, a.id AS application_id,
      a.name AS application_name, a.base_currency, s.needs,
      s.confirmed_at > now() - make_interval(secs => ${FRESH_SECONDS}) AS fresh,
      u.totp_enabled_at IS NOT NULL AS two_step,
      a.dashboard_two_step_required AS two_step_required
    FROM dashboard_sessions s
    JOIN dashboard_users u ON u.id = s.dashboard_user_id
    JOIN applications a ON a.id = u.application_id
    WHERE s.token_hash = ${sql.binary(sha256(token))}
      AND s.revoked_at IS NULL AND s.expires_at > now()`);
}

export async function revokeDashboardSession(db: CommonQueryMethods, sessionId: string) {
  await db.query(sql.unsafe`
    UPDATE dashboard_sessions SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${sessionId}`);
}

/** Revokes every open session of an account (the CLI's `dashboard-users revoke-sessions`). */
export async function revokeDashboardSessionsByEmail(
  db: CommonQueryMethods,
  email: string,
): Promise<{ email: string; revoked_sessions: number } | null> {
  const account = await db.maybeOne(sql.type(z.object({ id: z.string(), email: z.string() }))`
    SELECT id, email FROM dashboard_users WHERE lower(email) = lower(${email})`);
  if (!account) return null;
  const result = await db.query(sql.unsafe`
    UPDATE dashboard_sessions SET revoked_at = now()
    WHERE dashboard_user_id = ${account.id} AND revoked_at IS NULL AND expires_at > now()`);
  return { email: account.email, revoked_sessions: result.rowCount };
}

/** An account by its email (any case), whatever its application; null when none has it. */
export async function findDashboardAccountByEmail(
  db: CommonQueryMethods,
  email: string,
): Promise<DashboardAccount | null> {
  return db.maybeOne(sql.type(accountRow)`
    SELECT ${accountColumns} FROM dashboard_users WHERE lower(email) = lower(${email})`);
}
