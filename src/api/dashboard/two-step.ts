import { randomBytes } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import QRCode from 'qrcode';
import { z } from 'zod';
import { sha256 } from '../../db/credentials';
import { confirmDashboardSession, type DashboardSession } from '../../db/dashboard-accounts';
import {
  disableTotp,
  enableTotp,
  readTotp,
  setPendingTotp,
  takeTotpStep,
  useRecoveryCode,
} from '../../db/dashboard-two-step';
import { open, seal, webhookSecretKey } from '../../crypto/secret-box';
import { auditedBySession } from '../audit';
import type { ApiDeps } from '../deps';
import { AppError, errorResponse } from '../errors';
import { clientAddress, underLockout } from '../pipeline';
import { defineRoute, type Route } from '../route';
import { MessageBody } from '../schemas';
import { anySession, guarded } from './guard';
import { SIGN_IN_LOCKOUT_SCOPE } from './lockout';

/**
 * Two-step sign-in with TOTP (RFC 6238: SHA-1, six digits, thirty-second steps), as every
 * authenticator app reads it. The secret must be read to check a code, so it is sealed with the
 * engine's secret box (src/crypto/secret-box.ts), bound to its account; recovery codes are hashed.
 */
export const TOTP_PERIOD = 30;
export const TOTP_DIGITS = 6;
export const RECOVERY_CODES = 10;

function totp(secretBase32: string, session: { email: string; application_name: string }) {
  return new TOTP({
    issuer: session.application_name,
    label: session.email,
    algorithm: 'SHA1',
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD,
    secret: Secret.fromBase32(secretBase32),
  });
}

const boundTo = (accountId: string) => `dashboard-totp:${accountId}`;

/** The time step a code matches (the one before and after too, for a clock a little off). */
function stepOf(secretBase32: string, session: DashboardSession, code: string): number | null {
  const delta = totp(secretBase32, session).validate({ token: code, window: 1 });
  return delta === null ? null : Math.floor(Date.now() / 1000 / TOTP_PERIOD) + delta;
}

const CODE = new RegExp(`^\\d{${TOTP_DIGITS}}$`);
const normalRecovery = (code: string) => code.toLowerCase().replace(/[\s-]/g, '');

/**
 * Whether `code` is the account's current TOTP code (each time step accepted once) or one of its
 * unused recovery codes (then used up).
 */
export async function checkSecondStep(
  deps: ApiDeps,
  session: DashboardSession,
  code: string,
): Promise<boolean> {
  const { pool, config } = deps;
  if (!CODE.test(code)) {
    return useRecoveryCode(pool, session.account_id, sha256(normalRecovery(code)));
  }
  const { secret_sealed: sealed } = await readTotp(pool, session.account_id);
  if (!sealed) return false;
  const step = stepOf(
    open(webhookSecretKey(config), sealed, boundTo(session.account_id)),
    session,
    code,
  );
  return step !== null && takeTotpStep(pool, session.account_id, step);
}

/** `xxxxx-xxxxx` from an alphabet without look-alikes: fifty random bits each. */
function recoveryCode(): string {
  const alphabet = 'abcdefghjkmnpqrstuvwxyz23456789';
  const bytes = randomBytes(10);
  const chars = Array.from(bytes, (b) => alphabet[b % alphabet.length]!).join('');
  return `${chars.slice(0, 5)}-${chars.slice(5)}`;
}

const Code = z.object({ code: z.string().min(1).max(64) });

const Enrolment = z.object({
  secret: z.string(),
  otpauth_uri: z.string(),
  qr_code: z.string(),
});

export function twoStepRoutes(deps: ApiDeps): Route[] {
  const { pool, config } = deps;
  const during = ['enrolment'] as const;
  return [
    guarded(
      { action: 'own_two_step', during },
      defineRoute({
        method: 'post',
        path: '/dashboard/api/two-step',
        summary: 'Starts turning on two-step sign-in: a new secret, its otpauth:// URI and QR code',
        tag: 'Dashboard',
        auth: null,
        responses: {
          200: { description: 'The secret to enter in an authenticator app', schema: Enrolment },
          400: errorResponse('Two-step sign-in is on already'),
        },
        handler: async ({ ctx }) => {
          const session = anySession(ctx);
          if (session.two_step) {
            throw new AppError('invalid_request', 'Two-step sign-in is on already');
          }
          const secret = new Secret({ size: 20 }).base32;
          const sealed = seal(webhookSecretKey(config), secret, boundTo(session.account_id));
          await setPendingTotp(pool, session.account_id, sealed);
          const uri = totp(secret, session).toString();
          ctx.set('Cache-Control', 'no-store');
          return {
            body: { secret, otpauth_uri: uri, qr_code: await QRCode.toDataURL(uri) },
          };
        },
      }),
    ),
    guarded(
      { action: 'own_two_step', during },
      defineRoute({
        method: 'post',
        path: '/dashboard/api/two-step/confirm',
        summary:
          'Turns two-step sign-in on with a first valid code; answers the recovery codes once',
        tag: 'Dashboard',
        auth: null,
        body: Code,
        responses: {
          200: {
            description: 'On, with the recovery codes (shown this once)',
            schema: z.object({ recovery_codes: z.array(z.string()) }),
          },
          400: errorResponse('No enrolment started, or the code does not match'),
          429: errorResponse('Too many failed sign-ins from this address'),
        },
        handler: async ({ ctx, body }) => {
          const session = anySession(ctx);
          const { pending_sealed: pending } = await readTotp(pool, session.account_id);
          if (!pending) {
            throw new AppError('invalid_request', 'Start turning on two-step sign-in first');
          }
          const secret = open(webhookSecretKey(config), pending, boundTo(session.account_id));
          // A wrong first code counts in the sign-in lockout, as every wrong code does.
          const step = await underLockout(pool, SIGN_IN_LOCKOUT_SCOPE, clientAddress(ctx), () => {
            const matched = CODE.test(body.code) ? stepOf(secret, session, body.code) : null;
            return Promise.resolve({ failed: matched === null, result: matched });
          });
          if (step === null) throw new AppError('invalid_request', 'Wrong code: try the next one');
          const codes = Array.from({ length: RECOVERY_CODES }, recoveryCode);
          const recoveryHashes = codes.map((code) => sha256(normalRecovery(code)));
          const on = await auditedBySession(
            pool,
            ctx,
            session,
            (trx) =>
              enableTotp(trx, { accountId: session.account_id, pending, step, recoveryHashes }),
            (done) =>
              done
                ? {
                    action: 'dashboard_account.two_step_enabled',
                    target: { type: 'dashboard_account', id: session.account_id },
                  }
                : null,
          );
          if (!on) throw new AppError('invalid_request', 'A newer enrolment was started: use it');
          await confirmDashboardSession(pool, session.session_id);
          ctx.set('Cache-Control', 'no-store');
          return { body: { recovery_codes: codes } };
        },
      }),
    ),
    guarded(
      { action: 'own_two_step' },
      defineRoute({
        method: 'delete',
        path: '/dashboard/api/two-step',
        summary: 'Turns two-step sign-in off, unless the team requires it',
        tag: 'Dashboard',
        auth: null,
        responses: {
          200: { description: 'Off', schema: MessageBody },
          400: errorResponse('It is off already, or the team requires it'),
        },
        handler: async ({ ctx }) => {
          const session = anySession(ctx);
          if (session.two_step_required) {
            throw new AppError('invalid_request', 'Your team requires two-step sign-in');
          }
          if (!session.two_step) throw new AppError('invalid_request', 'Two-step sign-in is off');
          await auditedBySession(
            pool,
            ctx,
            session,
            (trx) => disableTotp(trx, session.account_id),
            () => ({
              action: 'dashboard_account.two_step_disabled',
              target: { type: 'dashboard_account', id: session.account_id },
            }),
          );
          return { body: { message: 'Two-step sign-in is off' } };
        },
      }),
    ),
  ];
}
