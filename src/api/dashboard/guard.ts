import type Koa from 'koa';
import type { DashboardSession, SessionNeeds } from '../../db/dashboard-accounts';
import {
  DASHBOARD_ACTIONS,
  NOT_FRESH,
  ROLE_FORBIDDEN,
  roleMay,
  type DashboardAction,
} from '../../domain/dashboard-access';
import { AppError } from '../errors';
import type { Route } from '../route';

/**
 * The one guard of every dashboard route (docs/dashboard.md, Roles): a session that has finished
 * signing in, a role the action table allows (403), and a fresh sign-in where the action wants
 * one (401 with `WWW-Authenticate: Dashboard-Confirm`, which the page turns into a prompt).
 */
export type DashboardState = { dashboard?: { session: DashboardSession; token: string } };

/** What a route asks of its caller: nothing (signing in), or a session allowed the action. */
export type DashboardAccess =
  | { open: true }
  | {
      action: DashboardAction;
      /** Sessions still waiting for a step that may use the route (finishing sign-in). */
      during?: readonly SessionNeeds[];
    };

export const NOT_SIGNED_IN = 'Not signed in: sign in to the dashboard';

/** The challenge of a 401 that asks for the password or a code again, not a new sign-in. */
export const CONFIRM_CHALLENGE = 'Dashboard-Confirm';

const UNFINISHED: Record<SessionNeeds, string> = {
  code: 'Finish signing in: enter a code of your authenticator app or a recovery code',
  enrolment: 'Finish signing in: your team requires two-step sign-in, turn it on first',
};

/** The session of the request, whatever step it waits for, or 401. */
export function anySession(ctx: Koa.Context): DashboardSession {
  const state = (ctx.state as DashboardState).dashboard;
  if (!state) throw new AppError('unauthenticated', NOT_SIGNED_IN);
  return state.session;
}

/** The signed-in session of the request, or null (no session cookie, or not a dashboard path). */
export function sessionOf(ctx: Koa.Context): DashboardSession | null {
  return (ctx.state as DashboardState).dashboard?.session ?? null;
}

/** The signed-in session of the request (no step left), or 401. */
export function signedIn(ctx: Koa.Context): DashboardSession {
  const session = anySession(ctx);
  if (session.needs) throw new AppError('unauthenticated', UNFINISHED[session.needs]);
  return session;
}

export function checkAccess(ctx: Koa.Context, access: DashboardAccess): void {
  if ('open' in access) return;
  const session = anySession(ctx);
  if (session.needs && !access.during?.includes(session.needs)) signedIn(ctx);
  if (!roleMay(session.role, access.action)) throw new AppError('forbidden', ROLE_FORBIDDEN);
  if (DASHBOARD_ACTIONS[access.action].fresh && !session.fresh) {
    ctx.set('WWW-Authenticate', CONFIRM_CHALLENGE);
    throw new AppError('unauthenticated', NOT_FRESH);
  }
}

/** A dashboard route behind the guard: every dashboard route is made with this. */
export function guarded(access: DashboardAccess, route: Route): Route {
  return { ...route, guard: (ctx) => checkAccess(ctx, access) };
}
