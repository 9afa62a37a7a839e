/**
 * The audit log's entry (docs/security.md, Audit log), as the API, the command line and the
 * activities that make a change hand it to `recordAudit` (src/db/audit-log.ts). Pure: a workflow
 * carries an entry in its input to the activity whose transaction writes the change.
 */
import type { Mode } from './types';

export const AUDIT_ACTOR_TYPES = ['dashboard_account', 'admin', 'cli', 'application'] as const;
export type AuditActorType = (typeof AUDIT_ACTOR_TYPES)[number];

/** Who made the change: a dashboard account, an admin, the command line's user, a credential. */
export type AuditActor = { type: AuditActorType; id: string; name: string };

/** A value JSON carries as it is. */
export type AuditValue =
  | string
  | number
  | boolean
  | null
  | readonly AuditValue[]
  | { [key: string]: AuditValue | undefined };

/** What was changed, by whom, from where: everything `recordAudit` writes but the id and time. */
export type AuditEntry = {
  actor: AuditActor;
  /** Dotted, the thing then what happened to it: `credential.created`, `payment.resolved`. */
  action: string;
  target: { type: string; id: string | null };
  /** The client's address; null from the command line. */
  ip: string | null;
  details?: Record<string, AuditValue | undefined>;
  /** The application the change belongs to; null for a platform-level change. */
  applicationId: string | null;
  mode?: Mode | null;
};

/**
 * The names of fields that carry a secret or part of one: a credential's keys, a password, a
 * session or sign-in token, a TOTP secret or code, a recovery code, a webhook secret or signature.
 */
const SECRET_NAME =
  /secret|passw|token|api[-_]?key|totp|otp|recovery|cookie|authori[sz]ation|signature|session|sealed/i;

/** Values shaped like a secret whatever their field is called (the engine's own formats). */
const SECRET_VALUE = /^(sk_|pk_|whsec_|otpauth:)/i;

const isList = (value: AuditValue): value is readonly AuditValue[] => Array.isArray(value);

/**
 * The one definition of what an audit entry may keep: every field whose name or value looks
 * like a secret is dropped, at any depth, and what is left is plain JSON.
 */
export function withoutSecrets(
  details: Record<string, AuditValue | undefined> | undefined,
): Record<string, AuditValue> {
  const clean = (value: AuditValue): AuditValue | undefined => {
    if (typeof value === 'string') return SECRET_VALUE.test(value) ? undefined : value;
    if (isList(value)) return value.map(clean).filter((v): v is AuditValue => v !== undefined);
    if (value !== null && typeof value === 'object') return keep(value);
    return value;
  };
  const keep = (object: Record<string, AuditValue | undefined>): Record<string, AuditValue> => {
    const out: Record<string, AuditValue> = {};
    for (const [name, value] of Object.entries(object)) {
      if (value === undefined || SECRET_NAME.test(name)) continue;
      const kept = clean(value);
      if (kept !== undefined) out[name] = kept;
    }
    return out;
  };
  return keep(details ?? {});
}
