import { randomBytes, randomUUID } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { newWebhookSecret, seal, SecretBoxError } from '../../src/crypto/secret-box';
import { signedDelivery } from '../../src/outbound/webhook-post';
import { webhookSigningSecrets } from '../../src/outbound/webhook-secrets';

const key = randomBytes(32);
const id = randomUUID();
const binding = `${id}:previous`;
const current = newWebhookSecret();
const previous = newWebhookSecret();
const now = new Date('2026-11-26T12:00:00Z');

const row = (previousSealed: string | null, expiresAt: string | null) => ({
  id,
  secret_sealed: seal(key, current, id),
  previous_secret_sealed: previousSealed,
  previous_secret_expires_at: expiresAt,
});

describe('webhookSigningSecrets', () => {
  it('signs with the current secret, then the previous one until it expires', () => {
    const during = webhookSigningSecrets(
      key,
      row(seal(key, previous, binding), '2026-11-26T12:00:01Z'),
      binding,
      now,
    );
    expect(during).toEqual({ secrets: [current, previous], legacy: false, previousExpired: false });
    const after = webhookSigningSecrets(
      key,
      row(seal(key, previous, binding), '2026-11-26T12:00:00Z'),
      binding,
      now,
    );
    expect(after).toEqual({ secrets: [current], legacy: false, previousExpired: true });
    expect(webhookSigningSecrets(key, row(null, null), binding, now)).toEqual({
      secrets: [current],
      legacy: false,
      previousExpired: false,
    });
  });

  it('leaves out a previous secret sealed for another binding (copied from the current column)', () => {
    const copied = row(null, '2026-11-27T00:00:00Z');
    copied.previous_secret_sealed = copied.secret_sealed;
    expect(webhookSigningSecrets(key, copied, binding, now).secrets).toEqual([current]);
  });

  it('throws SecretBoxError when the current secret cannot be opened', () => {
    expect(() => webhookSigningSecrets(randomBytes(32), row(null, null), binding, now)).toThrow(
      SecretBoxError,
    );
  });
});

describe('signedDelivery with two secrets', () => {
  it('carries both signatures, space-separated, and standardwebhooks accepts either secret', () => {
    const payload = {
      id: randomUUID(),
      type: 'webhook.test',
      created_at: now.toISOString(),
      mode: 'test' as const,
      data: {},
    };
    const { body, headers } = signedDelivery(payload, [current, previous], new Date());
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+ v1,[A-Za-z0-9+/=]+$/);
    for (const secret of [current, previous]) {
      expect(new Webhook(secret).verify(body, headers)).toMatchObject({ id: payload.id });
    }
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow(
      WebhookVerificationError,
    );
  });
});
