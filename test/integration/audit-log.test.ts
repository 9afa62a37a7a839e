import { randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { listAuditLog, recordAudit, withAudit, type AuditSource } from '../../src/db/audit-log';
import { createCredential } from '../../src/db/credentials';
import { sqlState } from '../../src/db/errors';
import type { DatabasePool } from '../../src/db/pool';
import type { AuditEntry } from '../../src/domain/audit';
import { createCaller, createTestDatabase } from '../support/database';

/**
 * The audit log in Postgres (docs/security.md, Audit log): the table refuses to change or lose
 * an entry, and an entry commits or rolls back with the change it records.
 */

let pool: DatabasePool;
let appId: string;

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
  appId = (await createCaller(pool, 'audited')).applicationId;
});

afterAll(async () => pool?.end());

const source: AuditSource = {
  actor: { type: 'cli', id: 'ops', name: 'ops@host' },
  ip: null,
  applicationId: null,
  mode: null,
};

const entry = (action: string, details: AuditEntry['details'] = {}): AuditEntry => ({
  ...source,
  action,
  target: { type: 'application', id: appId },
  details,
  applicationId: appId,
});

const countOf = (action: string) =>
  pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM audit_log WHERE action = ${action}`);

const credentialsOf = (applicationId: string) =>
  pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM credentials WHERE application_id = ${applicationId}`);

/** The SQLSTATE a statement fails with, or null when it succeeds. */
async function failureOf(run: () => Promise<unknown>): Promise<string | null> {
  try {
    await run();
    return null;
  } catch (error) {
    return sqlState(error) ?? String(error);
  }
}

describe('the audit_log table', () => {
  it('refuses UPDATE, DELETE and TRUNCATE of an entry: it stays as written', async () => {
    const id = await recordAudit(pool, entry('application.updated', { name: 'before' }));
    const read = () =>
      pool.one(sql.type(z.object({ action: z.string(), details: z.unknown() }))`
        SELECT action, details FROM audit_log WHERE id = ${id}`);

    expect(
      await failureOf(() =>
        pool.query(
          sql.unsafe`UPDATE audit_log SET action = 'application.created' WHERE id = ${id}`,
        ),
      ),
    ).toBe('42501');
    expect(
      await failureOf(() =>
        pool.query(sql.unsafe`UPDATE audit_log SET details = '{}' WHERE id = ${id}`),
      ),
    ).toBe('42501');
    expect(
      await failureOf(() => pool.query(sql.unsafe`DELETE FROM audit_log WHERE id = ${id}`)),
    ).toBe('42501');
    expect(await failureOf(() => pool.query(sql.unsafe`TRUNCATE audit_log`))).toBe('42501');

    expect(await read()).toEqual({ action: 'application.updated', details: { name: 'before' } });
  });

  it('refuses an action that is not dotted, and an unknown actor type', async () => {
    expect(await failureOf(() => recordAudit(pool, entry('created')))).toBe('23514');
    expect(
      await failureOf(() =>
        recordAudit(pool, {
          ...entry('application.updated'),
          actor: { type: 'robot' as never, id: 'x', name: 'x' },
        }),
      ),
    ).toBe('23514');
  });
});

describe('recordAudit', () => {
  it('keeps no secret in details, at any depth, and keeps the rest', async () => {
    const id = await recordAudit(
      pool,
      entry('credential.created', {
        mode: 'test',
        secret_key: 'sk_test_abc',
        api_key: 'pk_test_abc',
        nested: { password: 'hunter2hunter2', totp_secret: 'JBSWY3DP', kept: 1 },
        list: ['plain', 'whsec_abc', { session_token: 't', ok: true }],
        hint: 'sk_live_leaked',
        recovery_codes: ['a', 'b'],
      }),
    );
    const details = await pool.oneFirst(sql.type(z.object({ details: z.unknown() }))`
      SELECT details FROM audit_log WHERE id = ${id}`);
    expect(details).toEqual({ mode: 'test', nested: { kept: 1 }, list: ['plain', { ok: true }] });
  });
});

describe('withAudit', () => {
  it('commits the change and its entry together', async () => {
    const before = await credentialsOf(appId);
    const made = await withAudit(
      pool,
      source,
      (trx) => createCredential(trx, { applicationId: appId, mode: 'test' }),
      (created) => ({
        action: 'credential.created',
        target: { type: 'credential', id: created.id },
        applicationId: appId,
        mode: 'test',
      }),
    );
    expect(await credentialsOf(appId)).toBe(before + 1);
    const page = await listAuditLog(pool, { applicationId: appId, actorId: 'ops' }, { limit: 5 });
    expect(page?.rows[0]).toMatchObject({
      action: 'credential.created',
      target_type: 'credential',
      target_id: made.id,
      actor_type: 'cli',
      actor_id: 'ops',
      actor_name: 'ops@host',
      application_id: appId,
      mode: 'test',
      details: {},
    });
  });

  it('rolls the entry back with a change that fails after it was made', async () => {
    const before = await credentialsOf(appId);
    const entries = await countOf('credential.rolled_back');
    await expect(
      withAudit(
        pool,
        source,
        async (trx) => {
          await createCredential(trx, { applicationId: appId, mode: 'test' });
          await recordAudit(trx, entry('credential.rolled_back'));
          throw new Error('the change fails after writing');
        },
        () => null,
      ),
    ).rejects.toThrow('the change fails after writing');
    expect(await credentialsOf(appId)).toBe(before);
    expect(await countOf('credential.rolled_back')).toBe(entries);
  });

  it('rolls the change back when its entry cannot be written', async () => {
    const before = await credentialsOf(appId);
    const failure = await failureOf(() =>
      withAudit(
        pool,
        source,
        (trx) => createCredential(trx, { applicationId: appId, mode: 'test' }),
        () => ({ action: 'not dotted', target: { type: 'credential', id: randomUUID() } }),
      ),
    );
    expect(failure).toBe('23514');
    expect(await credentialsOf(appId)).toBe(before);
  });

  it('writes nothing when the note says nothing changed', async () => {
    const entries = await countOf('credential.revoked');
    const result = await withAudit(
      pool,
      source,
      () => Promise.resolve(null),
      (none) => none && { action: 'credential.revoked', target: { type: 'credential', id: null } },
    );
    expect(result).toBeNull();
    expect(await countOf('credential.revoked')).toBe(entries);
  });
});
