import { randomBytes, randomUUID, scrypt, timingSafeEqual } from 'node:crypto';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
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

const accountRow = z.object({
  id: z.string(),
  application_id: z.string(),
  email: z.string(),
  created_at: z.string(),
});
export type DashboardAccount = z.infer<typeof accountRow>;

/** Creates an account; null when the email is already taken (by any application). */
export async function createDashboardAccount(
  db: CommonQueryMethods,
  input: { applicationId: string; email: string; password: string },
): Promise<DashboardAccount | null> {
  const passwordHash = await hashPassword(input.password);
  try {
    return await db.one(sql.type(accountRow)`
      INSERT INTO dashboard_users (id, application_id, email, password_hash)
      VALUES (${randomUUID()}, ${input.applicationId}, ${input.email}, ${passwordHash})
      RETURNING id, application_id, email, created_at`);
  } catch (error) {
    if (uniqueViolation(error) === DASHBOARD_EMAIL_UNIQUE) return null;
    throw error;
  }
}

export async function listDashboardAccounts(db: CommonQueryMethods, applicationId: string) {
  return db.any(sql.type(accountRow)`
    SELECT id, application_id, email, created_at FROM dashboard_users
    WHERE application_id = ${applicationId} ORDER BY created_at, id`);
}

/** The account whose email and password match (constant work either way), or null. */
export async function checkDashboardPassword(
  db: CommonQueryMethods,
  email: string,
  password: string,
): Promise<DashboardAccount | null> {
  const row = await db.maybeOne(sql.type(accountRow.extend({ password_hash: z.string() }))`
    SELECT id, application_id, email, created_at, password_hash FROM dashboard_users
    WHERE lower(email) = lower(${email})`);
  const ok = await verifyPassword(password, row?.password_hash ?? DUMMY_HASH);
  if (!row || !ok) return null;
  const { password_hash: _hash, ...account } = row;
  return account;
}

export const SESSION_HOURS = 12;

/** Opens a session; the token goes in the cookie and is never stored in clear. */
export async function openDashboardSession(
  db: CommonQueryMethods,
  accountId: string,
): Promise<{ token: string; expiresAt: string }> {
  const token = randomBytes(32).toString('base64url');
  const row = await db.one(sql.type(z.object({ expires_at: z.string() }))`
    INSERT INTO dashboard_sessions (id, dashboard_user_id, token_hash, expires_at)
    VALUES (${randomUUID()}, ${accountId}, ${sql.binary(sha256(token))},
            now() + make_interval(hours => ${SESSION_HOURS}))
    RETURNING expires_at`);
  return { token, expiresAt: row.expires_at };
}

const sessionRow = z.object({
  session_id: z.string(),
  account_id: z.string(),
  email: z.string(),
  application_id: z.string(),
  application_name: z.string(),
  base_currency: z.string(),
});
export type DashboardSession = z.infer<typeof sessionRow>;

/** The live session of a token (not revoked, not expired), with its account and application. */
export async function findDashboardSession(
  db: CommonQueryMethods,
  token: string,
): Promise<DashboardSession | null> {
  return db.maybeOne(sql.type(sessionRow)`
    SELECT s.id AS session_id, u.id AS account_id, u.email, a.id AS application_id,
      a.name AS application_name, a.base_currency
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
    SELECT id, application_id, email, created_at FROM dashboard_users
    WHERE lower(email) = lower(${email})`);
}
