/**
 * Decoding what history events carry: protobuf 64-bit integers, timestamps and durations,
 * payloads, failures, and the local-activity marker's protobuf JSON times.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { AppError } from '../api/errors';
import { isErrorCode } from '../domain/errors';
import type { Duration, Failure, Int64, Payloads, Timestamp } from './types';

const NANOS_PER_SECOND = 1_000_000_000n;

export function int64(value: Int64): bigint {
  if (value === null || value === undefined) return 0n;
  return BigInt(typeof value === 'number' ? Math.trunc(value) : value.toString());
}

/**
 * A protobuf Timestamp as ISO 8601 UTC, exact: all nine digits of the nanoseconds, so the text
 * sorts as the times do. Seconds arrive as a 64-bit `Long`; they are converted through bigint.
 */
export function timestampToIso(ts: Timestamp | null | undefined): string | null {
  if (!ts) return null;
  const total = int64(ts.seconds) * NANOS_PER_SECOND + BigInt(ts.nanos ?? 0);
  let seconds = total / NANOS_PER_SECOND;
  let nanos = total % NANOS_PER_SECOND;
  if (nanos < 0n) {
    seconds -= 1n;
    nanos += NANOS_PER_SECOND;
  }
  const date = new Date(Number(seconds) * 1000);
  if (Number.isNaN(date.getTime())) return null;
  return `${date.toISOString().slice(0, -5)}.${nanos.toString().padStart(9, '0')}Z`;
}

/** A protobuf Duration as ISO 8601 (`PT30M5.25S`), in hours at most: days are not all 24 hours. */
export function durationToIso(d: Duration | null | undefined): string {
  const total = d ? int64(d.seconds) * NANOS_PER_SECOND + BigInt(d.nanos ?? 0) : 0n;
  if (total <= 0n) return 'PT0S';
  const wholeSeconds = total / NANOS_PER_SECOND;
  const nanos = total % NANOS_PER_SECOND;
  const hours = wholeSeconds / 3600n;
  const minutes = (wholeSeconds % 3600n) / 60n;
  const seconds = wholeSeconds % 60n;
  let text = 'PT';
  if (hours) text += `${hours}H`;
  if (minutes) text += `${minutes}M`;
  if (seconds || nanos) {
    const fraction = nanos ? `.${nanos.toString().padStart(9, '0').replace(/0+$/, '')}` : '';
    text += `${seconds}${fraction}S`;
  }
  return text;
}

/** Marker times arrive as protobuf JSON: an RFC 3339 string, or seconds and nanos. */
export type MarkerTime = { seconds?: number | string; nanos?: number } | string | null | undefined;

export function markerTimeToIso(value: MarkerTime): string | null {
  if (!value) return null;
  if (typeof value === 'string') {
    const ms = Date.parse(value);
    if (Number.isNaN(ms)) return null;
    return timestampToIso({
      seconds: Math.floor(ms / 1000),
      nanos: (ms % 1000) * 1_000_000,
    } as unknown as Timestamp);
  }
  if (value.seconds === undefined) return null;
  return timestampToIso({
    seconds: String(value.seconds),
    nanos: value.nanos ?? 0,
  } as unknown as Timestamp);
}

/** The first payload (an activity's first argument, a result), decoded; null when it cannot be. */
export function firstValue(payloads: Payloads | null | undefined): unknown {
  const payload = payloads?.payloads?.[0];
  if (!payload) return null;
  try {
    return defaultPayloadConverter.fromPayload(payload);
  } catch {
    return null;
  }
}

/**
 * A provider reference in a value: `paymentCode.id` (a deposit opened), `paymentCodeId`, or a
 * card payment's `paymentId` (a card deposit opened, a card payment checked).
 */
export function referenceIn(value: unknown): string | null {
  if (!value || typeof value !== 'object') return null;
  const record = value as {
    paymentCode?: { id?: unknown };
    paymentCodeId?: unknown;
    paymentId?: unknown;
  };
  if (typeof record.paymentId === 'string' && record.paymentId) return record.paymentId;
  if (typeof record.paymentCode?.id === 'string' && record.paymentCode.id) {
    return record.paymentCode.id;
  }
  if (typeof record.paymentCodeId === 'string' && record.paymentCodeId) {
    return record.paymentCodeId;
  }
  return null;
}

/** What a merchant reads of a failure that is not a decline: its own message is internal. */
export const INTERNAL_FAILURE = 'Internal error';

/**
 * A failure as the API would show it: a decline (a non-retryable failure typed with an error
 * code) as its detail, anything else as `INTERNAL_FAILURE`, so no internal message leaks.
 */
export function failureMessage(failure: Failure | null | undefined): string | null {
  if (!failure) return null;
  for (let f: Failure | null | undefined = failure; f; f = f.cause) {
    const info = f.applicationFailureInfo;
    if (info?.nonRetryable && isErrorCode(info.type)) {
      // A message that is only the code means the code's standard detail (src/activities/declines.ts).
      return new AppError(info.type, f.message === info.type ? null : f.message).detail;
    }
  }
  return INTERNAL_FAILURE;
}
