import { lockedOutFor, recordSignInFailure, type LockoutPolicy } from '../../db/dashboard-lockout';
import type { DatabasePool } from '../../db/pool';

/** The admin endpoints' rule, applied to dashboard sign-in: 5 failures in 15 minutes. */
const POLICY: LockoutPolicy = { limit: 5, windowSeconds: 15 * 60 };

export type SignInLockout = {
  /** Seconds to wait before trying again, or null. */
  retryAfter: (address: string) => Promise<number | null>;
  /** Counts a failed sign-in; the wait that now applies, or null. */
  fail: (address: string) => Promise<number | null>;
};

export function signInLockout(pool: DatabasePool): SignInLockout {
  return {
    retryAfter: (address) => lockedOutFor(pool, address, POLICY),
    fail: (address) => recordSignInFailure(pool, address, POLICY),
  };
}
