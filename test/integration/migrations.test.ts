import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { migrate, statementsChecksum } from '../../src/db/migrate';
import { createTestDatabase } from '../support/database';
import type { DatabasePool } from '../../src/db/pool';

/**
 * A migration's record outlives rewording its comments, never a change to its statements: a
 * deployed database must migrate on after the docs a comment cites move.
 */
describe('migrate', () => {
  let url: string;
  let pool: DatabasePool;
  let client: pg.Client;
  const first = '0001_platform.sql';

  beforeAll(async () => {
    ({ url, pool } = await createTestDatabase());
    client = new pg.Client({ connectionString: url });
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
    await pool.end();
  });

  const record = async (checksum: string) =>
    client.query('UPDATE schema_migrations SET checksum = $1 WHERE name = $2', [checksum, first]);

  it('accepts a database that recorded the whole file, and one that recorded its statements', async () => {
    const text = await readFile(path.join(__dirname, '../../src/db/migrations', first), 'utf8');
    await record(createHash('sha256').update(text).digest('hex'));
    const again = await migrate(url);
    expect(again.applied).toEqual([]);
    expect(again.skipped).toContain(first);

    await record(statementsChecksum(text));
    expect((await migrate(url)).applied).toEqual([]);
  });

  it('refuses a recorded migration whose statements changed', async () => {
    const text = await readFile(path.join(__dirname, '../../src/db/migrations', first), 'utf8');
    await record(statementsChecksum(`${text}\nSELECT 1;`));
    await expect(migrate(url)).rejects.toThrow(
      `Migration ${first} was changed after it was applied`,
    );
  });

  it('reads a reworded comment as the same migration, a changed statement as another', () => {
    const sql = '-- Why the table exists (docs/a.md).\nCREATE TABLE t (id int); -- the key\n';
    expect(statementsChecksum(sql)).toBe(
      statementsChecksum(
        '-- Why it exists (docs/b.md),\n-- on two lines.\nCREATE TABLE t (id int);\n',
      ),
    );
    expect(statementsChecksum(sql)).not.toBe(statementsChecksum('CREATE TABLE t (id bigint);'));
  });
});
