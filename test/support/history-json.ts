/**
 * Histories in Temporal's JSON form (`temporal workflow show --output json`) via @temporalio/proto:
 * the SDK's own JSON replay fails here ("type must be a Type": two protobufjs copies), and its
 * `fromObject`/`toObject` lack only the JSON form of timestamps and durations, converted here.
 */
import { temporal } from '@temporalio/proto';

export type History = temporal.api.history.v1.IHistory;

/**
 * The reflection each message type of @temporalio/proto carries: the package exports a protobufjs
 * reflection root (`json-module`), so a type knows its fields and their types.
 */
interface MessageType {
  fullName: string;
  fieldsArray: Field[];
}
interface Field {
  name: string;
  repeated: boolean;
  map: boolean;
  resolve(): { resolvedType: unknown };
}

const historyType = temporal.api.history.v1.History;
const reflected = historyType as unknown as MessageType;

const TIMESTAMP = '.google.protobuf.Timestamp';
const DURATION = '.google.protobuf.Duration';

const isMessage = (type: unknown): type is MessageType =>
  typeof type === 'object' && type !== null && 'fieldsArray' in type;

/** Applies `convert` to each field value of `value` (a message of `type`) whose type is a message. */
function mapMessages(
  type: MessageType,
  value: Record<string, unknown>,
  convert: (type: MessageType, value: unknown) => unknown,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    const v = value[field.name];
    if (v === undefined || v === null) continue;
    const fieldType = field.resolve().resolvedType;
    if (!isMessage(fieldType)) out[field.name] = v;
    else if (field.map) {
      out[field.name] = Object.fromEntries(
        Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, convert(fieldType, x)]),
      );
    } else if (field.repeated) out[field.name] = (v as unknown[]).map((x) => convert(fieldType, x));
    else out[field.name] = convert(fieldType, v);
  }
  return out;
}

/** "488" → 488000000: a fraction of a second, as nanoseconds. */
const nanosOf = (fraction: string | undefined) => Number((fraction ?? '').padEnd(9, '0'));

/** 488000000 → ".488": nanoseconds as ProtoJSON writes them, in 0, 3, 6 or 9 digits. */
function fractionOf(nanos: number): string {
  if (nanos === 0) return '';
  let digits = String(nanos).padStart(9, '0');
  while (digits.endsWith('000')) digits = digits.slice(0, -3);
  return `.${digits}`;
}

function fromJsonValue(type: MessageType, value: unknown): unknown {
  if (type.fullName === TIMESTAMP) {
    const match = /^(.+?)(?:\.(\d{1,9}))?Z$/.exec(String(value));
    const ms = match ? Date.parse(`${match[1]}Z`) : NaN;
    if (!match || Number.isNaN(ms)) throw new TypeError(`not a timestamp: ${String(value)}`);
    return { seconds: String(ms / 1000), nanos: nanosOf(match[2]) };
  }
  if (type.fullName === DURATION) {
    const match = /^(-)?(\d+)(?:\.(\d{1,9}))?s$/.exec(String(value));
    if (!match) throw new TypeError(`not a duration: ${String(value)}`);
    const sign = match[1] ? -1 : 1;
    return { seconds: `${match[1] ?? ''}${match[2]}`, nanos: sign * nanosOf(match[3]) };
  }
  return mapMessages(type, value as Record<string, unknown>, fromJsonValue);
}

function toJsonValue(type: MessageType, value: unknown): unknown {
  if (type.fullName === TIMESTAMP || type.fullName === DURATION) {
    const { seconds = '0', nanos = 0 } = value as { seconds?: string; nanos?: number };
    if (type.fullName === TIMESTAMP) {
      const date = new Date(Number(seconds) * 1000).toISOString().slice(0, 19);
      return `${date}${fractionOf(nanos)}Z`;
    }
    const negative = seconds.startsWith('-') || nanos < 0;
    return `${negative ? '-' : ''}${seconds.replace('-', '')}${fractionOf(Math.abs(nanos))}s`;
  }
  return mapMessages(type, value as Record<string, unknown>, toJsonValue);
}

/** A history from its JSON form (unknown fields ignored, as a newer server's may hold some). */
export function historyFromJSON(json: unknown): History {
  return historyType.fromObject(fromJsonValue(reflected, json) as Record<string, unknown>);
}

/** A history in its JSON form, as `temporal workflow show --output json` writes it. */
export function historyToJSON(history: History): string {
  const plain = historyType.toObject(historyType.fromObject(history), {
    longs: String,
    enums: String,
    bytes: String,
  });
  return JSON.stringify(toJsonValue(reflected, plain), null, 2);
}
