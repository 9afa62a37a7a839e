import { createCipheriv, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import {
  isLegacySealed,
  newWebhookSecret,
  open,
  seal,
  sandboxWebhookSecret,
  SecretBoxError,
  webhookSecretKey,
} from '../../src/crypto/secret-box';

const key = randomBytes(32);
const owner = randomUUID();

describe('secret box', () => {
  it('round-trips, with a fresh IV each time', () => {
    const secret = newWebhookSecret();
    const a = seal(key, secret, owner);
    const b = seal(key, secret, owner);
    expect(a).not.toBe(b);
    expect(a).not.toContain(secret.slice(6));
    expect(open(key, a, owner)).toBe(secret);
    expect(open(key, b, owner)).toBe(secret);
  });

  it('detects tampering with any part', () => {
    const sealed = seal(key, newWebhookSecret(), owner);
    const parts = sealed.split('.');
    for (const index of [1, 2, 3]) {
      const bytes = Buffer.from(parts[index] ?? '', 'base64url');
      bytes.writeUInt8(bytes.readUInt8(0) ^ 1, 0);
      const altered = [...parts];
      altered[index] = bytes.toString('base64url');
      expect(() => open(key, altered.join('.'), owner)).toThrow(SecretBoxError);
    }
    expect(() => open(key, 'v1' + sealed.slice(2), owner)).toThrow(SecretBoxError);
    expect(() => open(key, 'v3' + sealed.slice(2), owner)).toThrow(SecretBoxError);
    expect(() => open(key, 'garbage', owner)).toThrow(SecretBoxError);
  });

  it('refuses the wrong key and keys of the wrong size', () => {
    const sealed = seal(key, newWebhookSecret(), owner);
    expect(() => open(randomBytes(32), sealed, owner)).toThrow(SecretBoxError);
    expect(() => seal(randomBytes(16), 'x', owner)).toThrow(SecretBoxError);
  });

  it('binds a sealed value to its owner: another owner cannot open it', () => {
    const secret = newWebhookSecret();
    const sealed = seal(key, secret, owner);
    expect(sealed).toMatch(/^v2\./);
    expect(isLegacySealed(sealed)).toBe(false);
    expect(() => open(key, sealed, randomUUID())).toThrow(SecretBoxError);
    expect(() => open(key, sealed, '')).toThrow(SecretBoxError);
    expect(open(key, sealed, owner)).toBe(secret);
  });

  it('opens a v1 value, sealed without associated data, for any owner, and marks it legacy', () => {
    const secret = newWebhookSecret();
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    const legacy = ['v1', iv, cipher.getAuthTag(), ciphertext]
      .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
      .join('.');
    expect(isLegacySealed(legacy)).toBe(true);
    expect(open(key, legacy, owner)).toBe(secret);
    expect(open(key, legacy, randomUUID())).toBe(secret);
  });

  it('makes Standard Webhooks secrets of 32 random bytes', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(newWebhookSecret()).not.toBe(secret);
  });
});

describe('webhookSecretKey', () => {
  it('uses WEBHOOK_SECRET_KEY when set', () => {
    const configured = randomBytes(32);
    const config = loadConfig({ WEBHOOK_SECRET_KEY: configured.toString('base64') });
    expect(webhookSecretKey(config).equals(configured)).toBe(true);
  });

  it('refuses a configured key that is not 32 bytes of base64', () => {
    expect(() => loadConfig({ WEBHOOK_SECRET_KEY: randomBytes(16).toString('base64') })).toThrow(
      /WEBHOOK_SECRET_KEY/,
    );
  });

  it('unset: generates a key once in the data dir and keeps it', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'secret-box-'));
    try {
      const config = loadConfig({ DATA_DIR: dir });
      const first = webhookSecretKey(config);
      expect(first).toHaveLength(32);
      expect(webhookSecretKey(config).equals(first)).toBe(true);
      const file = path.join(dir, 'webhook-secret.key');
      expect(Buffer.from(readFileSync(file, 'utf8'), 'base64').equals(first)).toBe(true);
      expect(statSync(file).mode & 0o077).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('sandboxWebhookSecret', () => {
  it('has no default in the repository: unset, one is generated per data dir and kept', () => {
    const dirs = [0, 1].map(() => mkdtempSync(path.join(tmpdir(), 'sandbox-secret-')));
    try {
      // The API and the worker of one data dir load their configuration apart.
      const api = sandboxWebhookSecret(loadConfig({ DATA_DIR: dirs[0], NODE_ENV: 'test' }));
      const worker = sandboxWebhookSecret(loadConfig({ DATA_DIR: dirs[0] }));
      expect(worker).toBe(api);
      expect(Buffer.from(api, 'base64url')).toHaveLength(32);
      const file = path.join(dirs[0]!, 'sandbox-webhook-secret.key');
      expect(statSync(file).mode & 0o077).toBe(0);
      expect(sandboxWebhookSecret(loadConfig({ DATA_DIR: dirs[1] }))).not.toBe(api);
    } finally {
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('uses SANDBOX_WEBHOOK_SECRET when set', () => {
    const secret = 'a-sandbox-secret-of-our-own';
    expect(sandboxWebhookSecret(loadConfig({ SANDBOX_WEBHOOK_SECRET: secret }))).toBe(secret);
  });

  it('is required outside development and test: the configuration does not load', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(
      /^Invalid configuration: SANDBOX_WEBHOOK_SECRET: required when NODE_ENV is production/,
    );
    expect(() => loadConfig({ NODE_ENV: 'staging', SANDBOX_WEBHOOK_SECRET: '' })).toThrow(
      /SANDBOX_WEBHOOK_SECRET: required/,
    );
    expect(() => loadConfig({ NODE_ENV: 'production', SANDBOX_WEBHOOK_SECRET: 'short' })).toThrow(
      /SANDBOX_WEBHOOK_SECRET must be at least 16 characters/,
    );
    const secret = 'x'.repeat(32);
    expect(
      loadConfig({ NODE_ENV: 'production', SANDBOX_WEBHOOK_SECRET: secret }).sandbox,
    ).toMatchObject({ webhookSecret: secret });
  });
});
