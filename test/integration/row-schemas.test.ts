import { SchemaValidationError, sql } from 'slonik';
import { z } from 'zod';
import type { DatabasePool } from '../../src/db/pool';
import { createTestDatabase } from '../support/database';

let pool: DatabasePool;

beforeAll(async () => {
  ({ pool } = await createTestDatabase());
});
afterAll(async () => pool?.end());

/** The row schemas of `sql.type` (src/db/pool.ts, the result-parser interceptor). */
describe('row schemas', () => {
  it('answers each row as its schema parses it, and rows of an untyped query as they are', async () => {
    const rows = await pool.any(
      sql.type(
        z.object({ n: z.number(), label: z.string().transform((s) => s.toUpperCase()) }),
      )`SELECT n, 'row ' || n AS label FROM generate_series(1, 3) AS n`,
    );
    expect(rows).toEqual([
      { n: 1, label: 'ROW 1' },
      { n: 2, label: 'ROW 2' },
      { n: 3, label: 'ROW 3' },
    ]);
    expect(await pool.any(sql.unsafe`SELECT 'x' AS label WHERE false`)).toEqual([]);
    expect(await pool.one(sql.unsafe`SELECT 'x' AS label`)).toEqual({ label: 'x' });
  });

  it('refuses a row its schema does not accept', async () => {
    const query = pool.one(sql.type(z.object({ n: z.number() }))`SELECT 'one' AS n`);
    await expect(query).rejects.toBeInstanceOf(SchemaValidationError);
  });

  it('refuses a schema that validates asynchronously, at its first query', async () => {
    const asynchronous = z.object({ n: z.number() }).refine(() => Promise.resolve(true));
    await expect(pool.one(sql.type(asynchronous)`SELECT 1 AS n`)).rejects.toThrow(
      /must validate synchronously/,
    );
  });
});
