import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { asDatabaseSettingError, pgConnection } from './connection';

const migrationsDir = path.join(__dirname, 'migrations');

export type MigrationResult = { applied: string[]; skipped: string[] };

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * A migration's checksum over its statements only, so that a comment may be reworded after the
 * file was applied; databases that recorded the whole file's checksum are accepted as well.
 */
export function statementsChecksum(text: string): string {
  const statements = text
    .split('\n')
    .filter((line) => !/^\s*--/.test(line))
    .map((line) => line.replace(/\s+--.*$/, '').trimEnd())
    .filter((line) => line !== '');
  return sha256(statements.join('\n'));
}

/**
 * Applies and records the SQL migrations in name order, each in its own transaction; an advisory
 * lock keeps two processes apart, and a recorded migration whose file changed is an error. A plain
 * `pg` client, because a migration file is many statements, which slonik rightly refuses.
 */
export async function migrate(databaseUrl: string): Promise<MigrationResult> {
  const files = (await readdir(migrationsDir)).filter((f) => f.endsWith('.sql')).sort();
  const client = new pg.Client(pgConnection(databaseUrl));
  await client.connect().catch((error: unknown) => {
    throw asDatabaseSettingError(error, databaseUrl);
  });
  try {
    await client.query('SELECT pg_advisory_lock(7233001)');
    await client.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        name text PRIMARY KEY,
        checksum text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const { rows } = await client.query<{ name: string; checksum: string }>(
      'SELECT name, checksum FROM schema_migrations',
    );
    const done = new Map(rows.map((r) => [r.name, r.checksum]));
    const result: MigrationResult = { applied: [], skipped: [] };
    for (const file of files) {
      const text = await readFile(path.join(migrationsDir, file), 'utf8');
      const checksum = statementsChecksum(text);
      const recorded = done.get(file);
      if (recorded !== undefined) {
        if (recorded !== checksum && recorded !== sha256(text))
          throw new Error(`Migration ${file} was changed after it was applied`);
        result.skipped.push(file);
        continue;
      }
      await client.query('BEGIN');
      try {
        await client.query(text);
        await client.query('INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)', [
          file,
          checksum,
        ]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`Migration ${file} failed`, { cause: error });
      }
      result.applied.push(file);
    }
    return result;
  } finally {
    await client.query('SELECT pg_advisory_unlock(7233001)').catch(() => undefined);
    await client.end();
  }
}
