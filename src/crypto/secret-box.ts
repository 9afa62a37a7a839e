import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config';

/**
 * Webhook secrets must sign deliveries, so they are sealed (AES-256-GCM), not hashed: a dump alone
 * does not give them away, and tampering is refused. `v2` binds a value to its row (associated
 * data); `v1` still opens, and `isLegacySealed` says to re-seal it.
 */
const VERSION = 'v2';
const LEGACY_VERSION = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;

export class SecretBoxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretBoxError';
  }
}

/** A new subscription secret: `whsec_` and the base64 of 32 random bytes (Standard Webhooks). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * `v2.<iv>.<tag>.<ciphertext>`, each part base64url, bound to `boundTo` (the id of the row that
 * keeps it): `open` with any other value refuses it.
 */
export function seal(key: Buffer, plaintext: string, boundTo: string): string {
  assertKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(boundTo, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, iv, cipher.getAuthTag(), ciphertext]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
    .join('.');
}

/**
 * The plaintext of a sealed value; throws SecretBoxError when it was altered, the key is not the
 * one that sealed it, or (`v2`) it was sealed for another `boundTo`. A `v1` value has no binding.
 */
export function open(key: Buffer, sealed: string, boundTo: string): string {
  assertKey(key);
  const [version, ivText, tagText, ciphertextText, ...rest] = sealed.split('.');
  const known = version === VERSION || version === LEGACY_VERSION;
  if (!known || ciphertextText === undefined || rest.length > 0) {
    throw new SecretBoxError('Malformed sealed value');
  }
  const iv = Buffer.from(ivText ?? '', 'base64url');
  const tag = Buffer.from(tagText ?? '', 'base64url');
  const ciphertext = Buffer.from(ciphertextText, 'base64url');
  if (iv.length !== IV_BYTES || tag.length !== 16)
    throw new SecretBoxError('Malformed sealed value');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv);
    if (version === VERSION) decipher.setAAD(Buffer.from(boundTo, 'utf8'));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
  } catch (error) {
    throw new SecretBoxError(
      `Sealed value refused: wrong key, altered or sealed for another owner (${String(error)})`,
    );
  }
}

/** A value sealed before values were bound to their owner: re-seal it with `seal`. */
export function isLegacySealed(sealed: string): boolean {
  return sealed.startsWith(`${LEGACY_VERSION}.`);
}

function assertKey(key: Buffer): void {
  if (key.length !== KEY_BYTES) throw new SecretBoxError('The key must be 32 bytes');
}

/**
 * `WEBHOOK_SECRET_KEY` when set (production: keep it outside the database). Unset, a key is
 * generated once and kept in the data directory, so `npm start` and the tests work without
 * setup and secrets stay readable across restarts of the same data dir.
 */
export function webhookSecretKey(config: Config): Buffer {
  if (config.webhooks.secretKey) return config.webhooks.secretKey;
  const key = dataDirSecret(config.dataDir, 'webhook-secret.key', KEY_BYTES);
  assertKey(key);
  return key;
}

/**
 * `SANDBOX_WEBHOOK_SECRET` when set (required outside development and tests, src/config/index.ts).
 * Unset, one generated once per data directory, so that the API and the worker of one data dir
 * sign and verify the sandbox's notifications with the same value, and no repository string does.
 */
export function sandboxWebhookSecret(config: Config): string {
  return (
    config.sandbox.webhookSecret ??
    dataDirSecret(config.dataDir, 'sandbox-webhook-secret.key', KEY_BYTES).toString('base64url')
  );
}

/**
 * Random bytes generated once and kept in `<data dir>/<file>` (mode 0600): a secret that
 * development and tests need without setup, and that stays the same across restarts.
 */
export function dataDirSecret(dataDir: string, file: string, bytes: number): Buffer {
  const where = path.join(dataDir, file);
  mkdirSync(dataDir, { recursive: true });
  // Written aside and linked into place: a process starting at the same time (the API beside
  // the worker) finds either no file or the whole one, never a half-written secret.
  const aside = `${where}.${process.pid}.${randomBytes(6).toString('hex')}`;
  writeFileSync(aside, randomBytes(bytes).toString('base64'), { flag: 'wx', mode: 0o600 });
  try {
    linkSync(aside, where);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(aside);
  }
  return Buffer.from(readFileSync(where, 'utf8').trim(), 'base64');
}
