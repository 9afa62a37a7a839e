import { sql, type CommonQueryMethods, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';

/**
 * How many rows past the end of a page a list's `total` counts, at most: exact up to there, a
 * lower bound beyond. The page reads the rows before it anyway, so counting costs at most a fixed
 * amount more, and `total_pages` still shows a next page whenever there is one.
 */
export const TOTAL_COUNTED_AHEAD = 1_000;

/**
 * The `total` of a page of the rows of `from` that match `where` (`TOTAL_COUNTED_AHEAD`). Given
 * the list's `order`, the rows are counted in it: the planner may then walk the list's index and
 * stop, instead of collecting every match of a filter that most rows pass.
 */
export async function pageTotal(
  db: CommonQueryMethods,
  from: FragmentSqlToken,
  where: FragmentSqlToken,
  page: { limit: number; offset: number },
  order: FragmentSqlToken = sql.fragment``,
): Promise<number> {
  return db.oneFirst(sql.type(z.object({ count: z.number() }))`
    SELECT count(*)::int AS count FROM (
      SELECT FROM ${from} WHERE ${where} ${order}
      LIMIT ${page.offset + page.limit + TOTAL_COUNTED_AHEAD}) AS counted`);
}
