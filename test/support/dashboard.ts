import { Secret, TOTP } from 'otpauth';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDashboardAccount } from '../../src/db/dashboard-accounts';
import type { DatabasePool } from '../../src/db/pool';
import type { DashboardRole } from '../../src/domain/dashboard-access';
import { clientFor, type Reply } from './http';

/** Dashboard accounts and sessions over real HTTP (docs/dashboard.md), for the e2e tests. */
export const PASSWORD = 'correct horse battery staple';

let made = 0;
/** A fresh dashboard account of the application with `role`; its email. */
export async function dashboardAccount(
  pool: DatabasePool,
  applicationId: string,
  role: DashboardRole,
): Promise<string> {
  made += 1;
  const email = `${role}${made}-${Date.now()}@team.test`;
  const account = await createDashboardAccount(pool, {
    applicationId,
    email,
    password: PASSWORD,
    role,
  });
  if (!account) throw new Error('dashboard account not created');
  return email;
}

let addresses = 0;
/** A client address of its own (the engine must trust `X-Forwarded-For`). */
export function newAddress(): string {
  addresses += 1;
  return `198.51.${Math.floor(addresses / 250) + 100}.${(addresses % 250) + 1}`;
}

/** A browser's side of one session: its cookie, CSRF token and address on every request. */
export type Session = {
  headers: Record<string, string>;
  body: any;
  request: <T = any>(method: string, path: string, body?: unknown) => Promise<Reply<T>>;
};

function sessionOf(baseUrl: string, reply: Reply, address: string): Session {
  const cookie = (reply.headers.get('set-cookie') ?? '').split(';')[0]!;
  const headers = {
    cookie,
    'x-csrf-token': reply.body.csrf_token as string,
    'x-forwarded-for': address,
  };
  const client = clientFor(baseUrl, null);
  return {
    headers,
    body: reply.body,
    request: (method, path, body) =>
      client.request(method, path, body === undefined ? { headers } : { body, headers }),
  };
}

/** Signs in with the password: the session, whatever step it then waits for. */
export async function signIn(
  baseUrl: string,
  email: string,
  address = newAddress(),
  password = PASSWORD,
): Promise<Session> {
  const reply = await clientFor(baseUrl, null).post(
    '/dashboard/api/session',
    { email, password },
    { 'x-forwarded-for': address },
  );
  if (reply.status !== 200) throw new Error(`sign-in answered ${reply.status}`);
  return sessionOf(baseUrl, reply, address);
}

/** A session made of a reply that set the cookie (accepting an invitation). */
export function sessionFrom(baseUrl: string, reply: Reply, address: string): Session {
  return sessionOf(baseUrl, reply, address);
}

const lastStep = new Map<string, number>();

/**
 * A valid TOTP code of `secret` that no earlier call gave (the engine takes each time step once):
 * the current step's, or the next one's (the engine allows one step of drift), else it waits.
 */
export async function nextCode(secret: string): Promise<string> {
  const totp = new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30 });
  for (;;) {
    const now = Math.floor(Date.now() / 1000 / 30);
    const step = Math.max(now, (lastStep.get(secret) ?? now - 1) + 1);
    if (step <= now + 1) {
      lastStep.set(secret, step);
      return totp.generate({ timestamp: step * 30_000 });
    }
    await sleep(1000);
  }
}

/** A wrong code: the right one for a step far from now. */
export function wrongCode(secret: string): string {
  const totp = new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30 });
  return totp.generate({ timestamp: Date.now() - 3600_000 });
}
