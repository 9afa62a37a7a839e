import { sql, type FragmentSqlToken, type IdentifierSqlToken } from 'slonik';
import { METADATA_MAX_KEYS } from '../domain/metadata';

/**
 * A merge of merchant metadata (docs/api.md, Metadata) into a row's `metadata` or `column`: `set`
 * is the merged value, `fits` whether it keeps the key limit. Both read the row being updated, so
 * an UPDATE that sets one WHERE the other holds is atomic: a concurrent merge is re-read first.
 */
export function metadataMerge(
  patch: Readonly<Record<string, string | null>>,
  column: IdentifierSqlToken = sql.identifier(['metadata']),
): {
  set: FragmentSqlToken;
  fits: FragmentSqlToken;
} {
  const sets: Record<string, string> = {};
  const removed: string[] = [];
  for (const [key, value] of Object.entries(patch)) {
    if (value === null || value === '') removed.push(key);
    else sets[key] = value;
  }
  const merged = sql.fragment`((${column} || ${sql.jsonb(sets)}) - ${sql.array(removed, 'text')})`;
  return {
    set: merged,
    fits: sql.fragment`(SELECT count(*) FROM jsonb_object_keys(${merged})) <= ${METADATA_MAX_KEYS}`,
  };
}

/**
 * Rows whose metadata holds every pair of `filter` (`metadata[KEY]=VALUE`, exact): a
 * containment a GIN index (jsonb_path_ops) serves, and the test that most rows (none) fail at
 * once, so that an index kept only of rows with metadata serves it too.
 */
export function metadataContains(
  column: IdentifierSqlToken,
  filter: Readonly<Record<string, string>>,
): FragmentSqlToken {
  return sql.fragment`${column} @> ${sql.jsonb({ ...filter })} AND ${column} <> '{}'::jsonb`;
}
