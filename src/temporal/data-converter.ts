import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import { isLocalEnv, type Config, type PayloadKey } from '../config';
import { dataDirSecret } from '../crypto/secret-box';
import { AesGcmPayloadCodec, type CodecOptions } from './payload-codec';

/** The key id of the key generated in the data directory when none is configured. */
export const LOCAL_KEY_ID = 'local';

/**
 * The payload keys: `TEMPORAL_PAYLOAD_KEYS`; unset, in development and tests, one key generated
 * once per data directory. Elsewhere they are required: a key per process would leave each
 * process unable to read what the others wrote.
 */
export function payloadKeys(config: Config): PayloadKey[] {
  if (config.temporal.payloadKeys) return config.temporal.payloadKeys;
  if (!isLocalEnv(config.env)) {
    throw new Error(
      'TEMPORAL_PAYLOAD_KEYS is not set: Temporal payloads are encrypted, and every API and ' +
        'worker process needs the same keys (id:base64key[,id:base64key...], the first ' +
        'encrypts; make a key with `openssl rand -base64 32`)',
    );
  }
  return [{ id: LOCAL_KEY_ID, key: dataDirSecret(config.dataDir, 'temporal-payload.key', 32) }];
}

/** The codec of these keys (the codec endpoint, a history read by hand). */
export function payloadCodec(
  keys: readonly PayloadKey[],
  options: CodecOptions = {},
): PayloadCodec {
  return new AesGcmPayloadCodec(keys, options);
}

/**
 * The data converter of every Temporal client and worker the engine makes: the SDK's payload
 * converter, then encryption. A client without it could not read what a worker wrote.
 */
export function temporalDataConverter(config: Config): DataConverter {
  return dataConverterOf(payloadKeys(config), {
    allowPlaintext: config.temporal.allowPlaintextPayloads,
  });
}

/** The same, from keys handed over (a benchmark's load process has no configuration). */
export function dataConverterOf(
  keys: readonly PayloadKey[],
  options: CodecOptions = {},
): DataConverter {
  return { payloadCodecs: [payloadCodec(keys, options)] };
}

type Holder = Record<string | number, unknown>;

/** What the SDK never passes through a codec: search attributes (Temporal indexes them), headers. */
const NOT_ENCODED = new Set(['searchAttributes', 'header']);
/** A marker's own records, which the SDK's core writes itself: a local activity's, a patch's. */
const MARKER_RECORDS = new Set(['data', 'patch-data']);

const encodedByCodec = (parent: string | number | null, key: string) =>
  !NOT_ENCODED.has(key) && !(parent === 'details' && MARKER_RECORDS.has(key));

function isPayload(value: unknown): value is Payload {
  const metadata = (value as { metadata?: unknown } | null)?.metadata;
  return (
    typeof metadata === 'object' &&
    metadata !== null &&
    (metadata as { encoding?: unknown }).encoding instanceof Uint8Array
  );
}

/**
 * Decodes in place, with `codecs` (a client's, `client.options.loadedDataConverter`), every
 * payload found in `value` that a codec encoded: what a raw read of a workflow's history returns
 * is as Temporal keeps it, encrypted.
 */
export async function decodePayloadsIn<T>(value: T, codecs: readonly PayloadCodec[]): Promise<T> {
  const found: { holder: Holder; key: string | number }[] = [];
  const walk = (node: unknown, parent: string | number | null) => {
    if (typeof node !== 'object' || node === null || node instanceof Uint8Array) return;
    for (const [key, child] of Object.entries(node)) {
      if (!encodedByCodec(parent, key)) continue;
      if (isPayload(child)) found.push({ holder: node as Holder, key });
      else walk(child, key);
    }
  };
  walk(value, null);
  if (!found.length) return value;
  let payloads = found.map(({ holder, key }) => holder[key] as Payload);
  for (const codec of [...codecs].reverse()) payloads = await codec.decode(payloads);
  found.forEach(({ holder, key }, i) => (holder[key] = payloads[i]));
  return value;
}
