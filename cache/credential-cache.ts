import type { CredentialRecord } from '../db/credentials';
import { expiringMemory, type ExpiringMemory } from './bounded';

/** A record older than this is read again (it also bounds how long a row version is trusted). */
const TTL_MS = 60_000;
/** Past this many credentials the cache starts over (it never grows without bound). */
const MAX_ENTRIES = 10_000;

/** The records of API key hashes (hex), while fresh. */
export type CredentialCache = ExpiringMemory<CredentialRecord>;

/**
 * The credentials this API process has accepted, kept in memory so that a request needs no
 * lookup of its own (one database round trip less per request). A record is never trusted on
 * its own: it carries the row versions (`xmin`) of the credential and its application it was
 * read from, and the request's rate-limit count (db/rate-limit.ts) is taken only if both rows
 * are still those versions, in the same statement. A change committed by anyone (a revocation,
 * a new expiry or secret, new rate limits) therefore applies to the very next request: the
 * count finds a newer version, and the credential is read again (db/credentials.ts
 * `authenticateAndCount`). A refusal is never answered from memory. The secret is compared in
 * constant time on every request; the cache holds its hash, never the secret.
 */
export function createCredentialCache(): CredentialCache {
  return expiringMemory({ limit: MAX_ENTRIES, ttlMs: TTL_MS });
}
