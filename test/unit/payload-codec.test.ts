import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { formatPayloadKeys, loadConfig, parsePayloadKeys, type PayloadKey } from '../../src/config';
import {
  AesGcmPayloadCodec,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA,
  PayloadCodecError,
} from '../../src/temporal/payload-codec';
import { decodePayloadsIn, payloadKeys } from '../../src/temporal/data-converter';

const oldKey: PayloadKey = { id: 'k2025', key: randomBytes(32) };
const newKey: PayloadKey = { id: 'k2026', key: randomBytes(32) };
const identity = { name: 'Aminata Sesay', dateOfBirth: '1990-04-27', idNumber: 'SL-84519327' };
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');
const plain = (value: unknown): Payload => defaultPayloadConverter.toPayload(value);

describe('payload codec', () => {
  it('round-trips: the encoded payload hides the value and names its key', async () => {
    const codec = new AesGcmPayloadCodec([newKey]);
    const [encoded] = await codec.encode([plain(identity)]);
    expect(text(encoded!.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(text(encoded!.metadata![KEY_ID_METADATA])).toBe('k2026');
    const bytes = Buffer.from(encoded!.data!).toString('latin1');
    for (const secret of [identity.idNumber, identity.dateOfBirth, 'json/plain']) {
      expect(bytes).not.toContain(secret);
    }
    const [decoded] = await codec.decode([encoded!]);
    expect(defaultPayloadConverter.fromPayload(decoded!)).toEqual(identity);
  });

  it('rotation: new payloads use the first key, payloads of an older key still decode', async () => {
    const [before] = await new AesGcmPayloadCodec([oldKey]).encode([plain('+23276123456')]);
    const rotated = new AesGcmPayloadCodec([newKey, oldKey]);
    const [after] = await rotated.encode([plain('+23276123456')]);
    expect(text(after!.metadata![KEY_ID_METADATA])).toBe('k2026');
    const decoded = await rotated.decode([before!, after!]);
    expect(decoded.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([
      '+23276123456',
      '+23276123456',
    ]);
  });

  it('refuses a tampered ciphertext, and a key id swapped for another configured one', async () => {
    const codec = new AesGcmPayloadCodec([newKey, oldKey]);
    const [encoded] = await codec.encode([plain(identity)]);
    for (const at of [0, 20, encoded!.data!.length - 1]) {
      const data = Buffer.from(encoded!.data!);
      data[at] = data[at]! ^ 1;
      await expect(codec.decode([{ ...encoded!, data }])).rejects.toThrow(PayloadCodecError);
    }
    const relabelled = {
      ...encoded!,
      metadata: { ...encoded!.metadata, [KEY_ID_METADATA]: Buffer.from('k2025') },
    };
    await expect(codec.decode([relabelled])).rejects.toThrow(PayloadCodecError);
  });

  it('refuses a payload of a key id that is not configured', async () => {
    const [encoded] = await new AesGcmPayloadCodec([oldKey]).encode([plain(1)]);
    await expect(new AesGcmPayloadCodec([newKey]).decode([encoded!])).rejects.toThrow(
      /encrypted with key "k2025", which is not configured/,
    );
  });

  it('refuses a payload that is not encrypted, among encrypted ones too: anyone could write it', async () => {
    const codec = new AesGcmPayloadCodec([newKey]);
    const forged = plain({ status: 'successful', transactionId: 't-1' });
    await expect(codec.decode([forged])).rejects.toThrow(PayloadCodecError);
    await expect(codec.decode([forged])).rejects.toThrow(/^The payload is not encrypted/);
    const [sealed] = await codec.encode([plain(1)]);
    await expect(codec.decode([sealed!, forged])).rejects.toThrow(/not encrypted/);
    // The engine's converter refuses it by default, as the configuration sets it.
    const config = loadConfig({ ...process.env, TEMPORAL_PAYLOAD_ALLOW_PLAINTEXT: undefined });
    expect(config.temporal.allowPlaintextPayloads).toBe(false);
  });

  it('passes a plain payload (recorded before encryption) through while a rollout allows it', async () => {
    const payload = plain({ phoneNumber: '+23276123456' });
    const codec = new AesGcmPayloadCodec([newKey], { allowPlaintext: true });
    const [decoded] = await codec.decode([payload]);
    expect(decoded).toBe(payload);
    // Encrypted payloads are still checked, and new ones still encrypted.
    const [encoded] = await codec.encode([plain(1)]);
    expect(text(encoded!.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
    const config = loadConfig({ ...process.env, TEMPORAL_PAYLOAD_ALLOW_PLAINTEXT: 'true' });
    expect(config.temporal.allowPlaintextPayloads).toBe(true);
  });

  it('decodes payloads wherever they sit in a history read raw', async () => {
    const codec = new AesGcmPayloadCodec([newKey]);
    const [input, result] = await codec.encode([plain(identity), plain({ ok: true })]);
    const events = [
      { activityTaskScheduledEventAttributes: { input: { payloads: [input] } } },
      { markerRecordedEventAttributes: { details: { result: { payloads: [result] } } } },
    ];
    await decodePayloadsIn(events, [codec]);
    expect(
      defaultPayloadConverter.fromPayload(
        events[0]!.activityTaskScheduledEventAttributes!.input.payloads[0]!,
      ),
    ).toEqual(identity);
    expect(
      defaultPayloadConverter.fromPayload(
        events[1]!.markerRecordedEventAttributes!.details.result.payloads[0]!,
      ),
    ).toEqual({ ok: true });
  });
});

describe('payload keys configuration', () => {
  it('reads id:base64key pairs, first first, and writes them back alike', () => {
    const text = formatPayloadKeys([newKey, oldKey]);
    const keys = loadConfig({ TEMPORAL_PAYLOAD_KEYS: text }).temporal.payloadKeys;
    expect(keys).toEqual([newKey, oldKey]);
    expect(parsePayloadKeys(text)).toEqual([newKey, oldKey]);
  });

  it('refuses a malformed list with a clear message', () => {
    const short = randomBytes(16).toString('base64');
    const good = newKey.key.toString('base64');
    for (const [value, message] of [
      [`k1:${short}`, 'TEMPORAL_PAYLOAD_KEYS: the key k1 must be the base64 of 32 bytes'],
      [good, 'TEMPORAL_PAYLOAD_KEYS must be id:base64key pairs'],
      [`k1:${good},k1:${good}`, 'TEMPORAL_PAYLOAD_KEYS: the key id k1 is repeated'],
    ]) {
      expect(() => loadConfig({ TEMPORAL_PAYLOAD_KEYS: value })).toThrow(message);
    }
  });

  it('unset: a key kept in the data directory in development, refused in production', () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'payload-keys-'));
    try {
      const local = payloadKeys(loadConfig({ DATA_DIR: dataDir, NODE_ENV: 'development' }));
      expect(local).toEqual([{ id: 'local', key: expect.any(Buffer) }]);
      expect(local[0]!.key).toHaveLength(32);
      expect(payloadKeys(loadConfig({ DATA_DIR: dataDir, NODE_ENV: 'test' }))).toEqual(local);
      const production = {
        DATA_DIR: dataDir,
        NODE_ENV: 'production',
        SANDBOX_WEBHOOK_SECRET: 'x'.repeat(32),
      };
      expect(() => payloadKeys(loadConfig(production))).toThrow(/TEMPORAL_PAYLOAD_KEYS is not set/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
