import { z } from 'zod';

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
// Any RFC 3339 offset (real ones span -12:00 to +14:00); `filterInstant` turns it into UTC,
// since Postgres takes offsets only up to 15:59.
const DATE_TIME =
  /^(\d{4}-\d{2}-\d{2})T([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.(\d+))?)?(Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/i;

/** A calendar date that exists (2026-02-30 does not; Date would roll it into March). */
function realDate(date: string): boolean {
  const parsed = new Date(`${date}T00:00:00Z`);
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 10) === date;
}

/**
 * An ISO 8601 instant with its offset (`2026-01-31T12:00:00Z`), or a date as its midnight UTC, cut
 * (not rounded) to the millisecond like every API time, so it never moves past one that was shown.
 * Null when it is neither, or before 1970.
 */
export function parseInstant(text: string): Date | null {
  const parsed = parse(text);
  // No ledger holds anything before the Unix epoch, and Postgres has no year 0 to compare with.
  return parsed && parsed.getTime() >= 0 ? parsed : null;
}

/**
 * Whether `text` is an ISO 8601 instant or date of the format `parseInstant` reads, any year from
 * 1 on (Postgres has no year 0): the lists' filters take any such instant as written.
 */
export function isInstant(text: string): boolean {
  const parsed = parse(text);
  if (parsed === null) return false;
  const year = parsed.getUTCFullYear();
  return year >= 1 && year <= 9999;
}

/**
 * An instant `isInstant` accepts, as Postgres reads it: in UTC, with every digit of its fraction
 * (an offset is whole minutes, so moving to UTC leaves the digits past the millisecond as they
 * are); a date alone is its midnight UTC.
 */
export function filterInstant(text: string): string {
  const utc = parse(text)!.toISOString();
  const finer = DATE_TIME.exec(text)?.[5]?.slice(3) ?? '';
  return `${utc.slice(0, -1)}${finer}Z`;
}

function parse(text: string): Date | null {
  if (DATE.test(text)) return realDate(text) ? new Date(`${text}T00:00:00Z`) : null;
  const m = DATE_TIME.exec(text);
  if (!m || !realDate(m[1]!)) return null;
  const fraction = (m[5] ?? '').slice(0, 3).padEnd(3, '0');
  const normal = `${m[1]}T${m[2]}:${m[3]}:${m[4] ?? '00'}.${fraction}${m[6]!.toUpperCase()}`;
  const parsed = new Date(normal);
  return Number.isNaN(parsed.getTime()) ? null : parsed;
}

/** A query parameter holding an instant (`parseInstant`). */
export const InstantQuery = z
  .string()
  .transform((text, ctx) => {
    const at = parseInstant(text);
    if (at) return at;
    ctx.addIssue({
      code: 'custom',
      message:
        'must be an ISO 8601 time with an offset (2026-01-31T12:00:00Z) or a date (2026-01-31), from 1970 on',
    });
    return z.NEVER;
  })
  .meta({ type: 'string', format: 'date-time', example: '2026-01-31T12:00:00Z' });
