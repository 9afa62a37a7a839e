import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { PayloadKey } from '../config';

/**
 * Payloads carry personal data that Temporal keeps for its whole retention, so each is encrypted
 * whole, metadata included (AES-256-GCM), before it leaves the process: only holders of a
 * configured key read them. See docs/temporal-codec.md.
 */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
export const KEY_ID_METADATA = 'encryption-key-id';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

/** Why a payload that is not encrypted is not read. */
export const PLAINTEXT_REFUSED =
  'The payload is not encrypted: refused, as anyone with access to Temporal could have written ' +
  'it (TEMPORAL_PAYLOAD_ALLOW_PLAINTEXT=true reads such payloads during a move to encryption)';

export class PayloadCodecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PayloadCodecError';
  }
}

const text = (bytes: Uint8Array | null | undefined) =>
  bytes ? Buffer.from(bytes).toString('utf8') : undefined;

/** A configured key as the ciphers take it: its key object, and its id as bytes. */
type SealingKey = { key: KeyObject; id: Buffer };

const sealingKey = ({ id, key }: PayloadKey): SealingKey => ({
  key: createSecretKey(key),
  id: Buffer.from(id),
});

/** What the codec does with a payload that is not encrypted (docs/temporal-codec.md). */
export type CodecOptions = { allowPlaintext?: boolean };

/**
 * AES-256-GCM by key id: the first key encrypts, every key decrypts, so a key is rotated by
 * putting a new one first and dropping the old one once nothing it encrypted is kept. A payload
 * that is not encrypted is refused, unless a rollout allows it: anyone could have written it.
 */
export class AesGcmPayloadCodec implements PayloadCodec {
  // Key objects made once: a raw key given to each cipher is imported again every time.
  private readonly keys: ReadonlyMap<string, SealingKey>;
  private readonly current: SealingKey;
  private readonly encoding = Buffer.from(ENCRYPTED_ENCODING);

  private readonly allowPlaintext: boolean;

  constructor(keys: readonly PayloadKey[], options: CodecOptions = {}) {
    this.allowPlaintext = options.allowPlaintext === true;
    const [first] = keys;
    if (!first) throw new PayloadCodecError('The payload codec needs at least one key');
    for (const { id, key } of keys) {
      if (key.length !== KEY_BYTES) throw new PayloadCodecError(`The key ${id} must be 32 bytes`);
    }
    this.keys = new Map(keys.map((key) => [key.id, sealingKey(key)]));
    this.current = sealingKey(first);
  }

  encode(payloads: Payload[]): Promise<Payload[]> {
    return new Promise((resolve) => resolve(payloads.map((payload) => this.encrypt(payload))));
  }

  decode(payloads: Payload[]): Promise<Payload[]> {
    return new Promise((resolve) => resolve(payloads.map((payload) => this.decrypt(payload))));
  }

  private encrypt(payload: Payload): Payload {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    // The key id is authenticated with the data: a payload cannot be passed off under another.
    cipher.setAAD(this.current.id);
    const plain = temporal.api.common.v1.Payload.encode(payload).finish();
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return {
      metadata: { encoding: this.encoding, [KEY_ID_METADATA]: this.current.id },
      data: sealed,
    };
  }

  private decrypt(payload: Payload): Payload {
    if (text(payload.metadata?.encoding) !== ENCRYPTED_ENCODING) {
      if (this.allowPlaintext) return payload;
      throw new PayloadCodecError(PLAINTEXT_REFUSED);
    }
    const id = text(payload.metadata?.[KEY_ID_METADATA]);
    const found = id === undefined ? undefined : this.keys.get(id);
    if (!found) {
      throw new PayloadCodecError(
        `The payload was encrypted with key ${JSON.stringify(id ?? null)}, which is not configured`,
      );
    }
    const data = Buffer.from(payload.data ?? new Uint8Array());
    if (data.length < IV_BYTES + TAG_BYTES) throw new PayloadCodecError('Malformed payload');
    try {
      const decipher = createDecipheriv('aes-256-gcm', found.key, data.subarray(0, IV_BYTES));
      decipher.setAAD(found.id);
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const plain = Buffer.concat([
        decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)),
        decipher.final(),
      ]);
      return temporal.api.common.v1.Payload.decode(plain);
    } catch (error) {
      throw new PayloadCodecError(
        `The payload was altered or is not of key ${id} (${String(error)})`,
      );
    }
  }
}
