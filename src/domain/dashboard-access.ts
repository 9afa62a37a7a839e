/**
 * Who may do what in the dashboard (docs/dashboard.md, Roles): the one table every dashboard
 * route is checked against (src/api/dashboard/guard.ts), and that the session hands the page so
 * that it hides what its account cannot do.
 */
export const DASHBOARD_ROLES = ['owner', 'developer', 'operator', 'viewer'] as const;
export type DashboardRole = (typeof DASHBOARD_ROLES)[number];

const EVERYONE = DASHBOARD_ROLES;

/**
 * Each action: the roles that may take it, and whether it wants a fresh sign-in (the password
 * or a code given within `FRESH_SECONDS`).
 */
export const DASHBOARD_ACTIONS = {
  /** Every read: figures, records, lists, exports, the team. */
  read: { roles: EVERYONE, fresh: false },
  /** One's own session and two-step sign-in. */
  own_account: { roles: EVERYONE, fresh: false },
  /** Turning one's own two-step sign-in on or off. */
  own_two_step: { roles: EVERYONE, fresh: true },
  credentials_create: { roles: ['owner', 'developer'], fresh: true },
  credentials_revoke: { roles: ['owner', 'developer'], fresh: false },
  /** Webhook subscriptions, their test sends and secrets, and redeliveries. */
  webhooks: { roles: ['owner', 'developer'], fresh: false },
  refunds: { roles: ['owner', 'operator'], fresh: true },
  dispute_evidence: { roles: ['owner', 'operator'], fresh: true },
  reconciliation_accept: { roles: ['owner', 'operator'], fresh: false },
  /** Bulk payments: a new batch moves money; cancelling one stops the rest of it. */
  batches: { roles: ['owner'], fresh: true },
  /** Uploading a settlement file and starting a reconciliation run. */
  reconciliation_runs: { roles: ['owner'], fresh: false },
  /** Invitations, roles, removals and the team's two-step switch. */
  team: { roles: ['owner'], fresh: true },
} as const satisfies Record<string, { roles: readonly DashboardRole[]; fresh: boolean }>;
export type DashboardAction = keyof typeof DASHBOARD_ACTIONS;

/** How long a sign-in stays fresh for the actions that want one. */
export const FRESH_SECONDS = 5 * 60;

export function roleMay(role: DashboardRole, action: DashboardAction): boolean {
  return (DASHBOARD_ACTIONS[action].roles as readonly DashboardRole[]).includes(role);
}

/** The actions a role may take, as the session tells the page. */
export function permissionsOf(role: DashboardRole): DashboardAction[] {
  return (Object.keys(DASHBOARD_ACTIONS) as DashboardAction[]).filter((a) => roleMay(role, a));
}

export const ROLE_FORBIDDEN = 'Your role does not allow this';
export const NOT_FRESH = `Confirm it is you: give your password or a two-step code again, the last was more than ${FRESH_SECONDS / 60} minutes ago`;

/** A dashboard account's password, the same rule wherever one is set. */
export const PASSWORD_LENGTH = { min: 12, max: 1024 } as const;
export const PASSWORD_RULE = `the password must be ${PASSWORD_LENGTH.min} to ${PASSWORD_LENGTH.max} characters`;

export function passwordAllowed(password: string): boolean {
  return password.length >= PASSWORD_LENGTH.min && password.length <= PASSWORD_LENGTH.max;
}

/** A dashboard account's email address, the same rule wherever one is given. */
export function emailAllowed(email: string): boolean {
  return /^[^\s@]+@[^\s@]+$/.test(email) && email.length <= 254;
}
