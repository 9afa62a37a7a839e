import { sql } from 'slonik';
import { z } from 'zod';
import { createCredentialCache, type CredentialCache } from '../../src/cache/credential-cache';
import { authenticateAndCount } from '../../src/db/credentials';
import type { CommonQueryMethods, DatabasePool } from '../../src/db/pool';
import { createFixtureApplication, type Credentials } from '../../tools/harness/fixtures';
import { createTestDatabase } from '../support/database';

let pool: DatabasePool;
let cache: CredentialCache;
let applicationId: string;
let credentials: Credentials;
/** Credential reads that reached the database. */
let reads = 0;
/** Statements sent, of every kind. */
let statements = 0;
const counting = new Proxy({} as CommonQueryMethods, {
  get: (_, name: keyof CommonQueryMethods) => {
    const method = pool[name] as (...args: unknown[]) => unknown;
    return (...args: unknown[]) => {
      statements += 1;
      if (name === 'maybeOne' && /FROM credentials c JOIN/.test((args[0] as { sql: string }).sql))
        reads += 1;
      return method.apply(pool, args);
    };
  },
});

const auth = (secretKey = credentials.secretKey) =>
  authenticateAndCount(counting, credentials.apiKey, secretKey, 'transfers', cache);

/** `auth` that claims `key` within `limit` in the statement that counts the request. */
const authAndClaim = (key: string, limit = 10) =>
  authenticateAndCount(
    counting,
    credentials.apiKey,
    credentials.secretKey,
    'transfers',
    cache,
    () => ({
      key,
      requestHash: Buffer.from(key),
      limit,
    }),
  );

/** This minute's count of the fixture credential's transfers. */
const counted = () =>
  pool.oneFirst(sql.type(z.object({ count: z.number() }))`
    SELECT coalesce(sum(r.count), 0)::int AS count
    FROM rate_limit_counters r JOIN credentials c ON c.id = r.credential_id
    WHERE c.application_id = ${applicationId} AND r.category = 'transfers'`);

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
});
beforeEach(async () => {
  const app = await createFixtureApplication(pool, { modes: ['test'], rateLimits: null });
  applicationId = app.id;
  credentials = app.credentials.test;
  cache = createCredentialCache();
});
afterAll(async () => pool?.end());

describe('the credential cache', () => {
  it('reads a credential once, then answers from memory, its last_used write included', async () => {
    const before = reads;
    const first = await auth();
    expect(first).toMatchObject({ ok: true, applicationId, hit: { count: 1 } });
    // The first use wrote last_used, and the record knows the row version that write made.
    const lastUsed = await pool.oneFirst(
      sql.unsafe`SELECT last_used FROM credentials WHERE application_id = ${applicationId}`,
    );
    expect(lastUsed).not.toBeNull();
    for (let i = 2; i <= 6; i += 1)
      expect(await auth()).toMatchObject({ ok: true, hit: { count: i } });
    expect(reads - before).toBe(1);
    expect(await counted()).toBe(6);
  });

  it('never refuses from memory: a wrong secret is read from the database, and not counted', async () => {
    expect((await auth()).ok).toBe(true);
    const before = reads;
    expect(await auth('sk_test_wrong')).toEqual({ ok: false, reason: 'invalid' });
    expect(reads - before).toBe(1);
    expect(await counted()).toBe(1);
  });

  it.each([
    ['revoked', sql.fragment`revoked_at = now()`, { ok: false, reason: 'revoked' }],
    [
      'expired',
      sql.fragment`expires_at = now() - interval '1 second'`,
      { ok: false, reason: 'expired' },
    ],
    [
      'given a new secret',
      sql.fragment`secret_hash = sha256('another secret')`,
      { ok: false, reason: 'invalid' },
    ],
  ])(
    'refuses at the very next request a credential %s by another connection, and counts nothing',
    async (_, change, refusal) => {
      expect((await auth()).ok).toBe(true);
      await pool.query(
        sql.unsafe`UPDATE credentials SET ${change} WHERE application_id = ${applicationId}`,
      );
      const before = reads;
      expect(await auth()).toEqual(refusal);
      expect(reads - before).toBe(1);
      expect(await counted()).toBe(1);
    },
  );

  it('applies new rate limits at the very next request, and accepts a credential restored', async () => {
    expect((await auth()).ok).toBe(true);
    await pool.query(
      sql.unsafe`UPDATE applications SET rate_limits = '{"transfers": 7}' WHERE id = ${applicationId}`,
    );
    expect(await auth()).toMatchObject({
      ok: true,
      rateLimits: { transfers: 7 },
      hit: { count: 2 },
    });
    await pool.query(
      sql.unsafe`UPDATE credentials SET revoked_at = now() WHERE application_id = ${applicationId}`,
    );
    expect(await auth()).toEqual({ ok: false, reason: 'revoked' });
    await pool.query(
      sql.unsafe`UPDATE credentials SET revoked_at = NULL WHERE application_id = ${applicationId}`,
    );
    expect(await auth()).toMatchObject({ ok: true, hit: { count: 3 } });
  });

  it('refuses a credential whose application was deleted', async () => {
    expect((await auth()).ok).toBe(true);
    await pool.query(sql.unsafe`DELETE FROM applications WHERE id = ${applicationId}`);
    expect(await auth()).toEqual({ ok: false, reason: 'invalid' });
  });

  it('claims an idempotency key in the statement that counts the request, within the limit only', async () => {
    expect((await auth()).ok).toBe(true);
    const before = statements;
    const claimed = await authAndClaim('key-1', 3);
    expect(claimed).toMatchObject({ ok: true, hit: { count: 2 }, claim: { kind: 'claimed' } });
    expect(statements - before).toBe(1);
    expect(await authAndClaim('key-1', 3)).toMatchObject({
      hit: { count: 3 },
      claim: { kind: 'in_progress' },
    });
    // Past the limit: counted, and the key is not claimed.
    expect(await authAndClaim('key-2', 3)).toMatchObject({ hit: { count: 4 }, claim: null });
    const keys = await pool.anyFirst(sql.type(z.object({ key: z.string() }))`
      SELECT key FROM idempotency_keys WHERE application_id = ${applicationId}`);
    expect(keys).toEqual(['key-1']);
    expect(await counted()).toBe(4);
  });

  it('claims nothing when the credential changed since memory read it, then counts and claims it fresh', async () => {
    expect((await auth()).ok).toBe(true);
    await pool.query(
      sql.unsafe`UPDATE applications SET rate_limits = '{"transfers": 7}' WHERE id = ${applicationId}`,
    );
    const before = reads;
    expect(await authAndClaim('key-3')).toMatchObject({
      ok: true,
      rateLimits: { transfers: 7 },
      hit: { count: 2 },
      claim: { kind: 'claimed' },
    });
    expect(reads - before).toBe(1);
    expect(await counted()).toBe(2);
  });
});
