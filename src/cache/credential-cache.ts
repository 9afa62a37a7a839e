import type { CredentialRecord } from '../db/credentials';
import { expiringMemory, type ExpiringMemory } from './bounded';

/** A record older than this is read again (it also bounds how long a row version is trusted). */
const TTL_MS = 60_000;
/** Past this many credentials the cache starts over (it never grows without bound). */
const MAX_ENTRIES = 10_000;

/** The records of API key hashes (hex), while fresh. */
export type CredentialCache = ExpiringMemory<CredentialRecord>;

/**
 * Accepted credentials, so a request needs no lookup of its own. A record holds only while the
 * rate-limit count finds its rows' versions (`xmin`) unchanged; a refusal is never answered from
 * memory, and only hashes are kept, never a secret. See docs/api.md, API conventions.
 */
export function createCredentialCache(): CredentialCache {
  return expiringMemory({ limit: MAX_ENTRIES, ttlMs: TTL_MS });
}
