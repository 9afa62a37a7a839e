/**
 * The dashboard's sign-in lockout: src/db/auth-lockout.ts (the admin endpoints' rule, 5 failures
 * from one address within 15 minutes lock it out for 15 minutes, counted in Postgres), in a
 * scope of its own so that a locked-out dashboard does not lock out the admin API or back.
 */
export const SIGN_IN_LOCKOUT_SCOPE = 'dashboard_sign_in';
