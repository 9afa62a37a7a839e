import { clear, lockedUntil, recordFailure } from '../../db/auth-lockout';
import type { DatabasePool } from '../../db/pool';

/**
 * The dashboard's sign-in lockout: db/auth-lockout.ts (the admin endpoints' rule, 5 failures
 * from one address within 15 minutes lock it out for 15 minutes, counted in Postgres), in a
 * scope of its own so that a locked-out dashboard does not lock out the admin API or back.
 */
export const SIGN_IN_LOCKOUT_SCOPE = 'dashboard_sign_in';

export type SignInLockout = {
  /** Seconds to wait before trying again, or null. */
  retryAfter: (address: string) => Promise<number | null>;
  /** Counts a failed sign-in; the lockout it started, in seconds, or null. */
  fail: (address: string) => Promise<number | null>;
  /** A successful sign-in forgets the address's failures. */
  succeed: (address: string) => Promise<void>;
};

export function signInLockout(pool: DatabasePool): SignInLockout {
  return {
    retryAfter: (address) => lockedUntil(pool, SIGN_IN_LOCKOUT_SCOPE, address),
    fail: (address) => recordFailure(pool, SIGN_IN_LOCKOUT_SCOPE, address),
    succeed: (address) => clear(pool, SIGN_IN_LOCKOUT_SCOPE, address),
  };
}
