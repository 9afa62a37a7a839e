import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { components } from './schema.js';

export { WebhookVerificationError };

/** An event as the API delivers it (`POST` to a subscription's URL). */
export type WebhookEvent = Omit<components['schemas']['Event'], 'deliveries'>;

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function headerRecord(headers: HeaderSource): Record<string, string> {
  const pick = (name: string): string => {
    if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? '';
    const record = headers as Record<string, string | string[] | undefined>;
    const key = Object.keys(record).find((k) => k.toLowerCase() === name);
    const value = key === undefined ? undefined : record[key];
    return Array.isArray(value) ? value.join(' ') : (value ?? '');
  };
  return {
    'webhook-id': pick('webhook-id'),
    'webhook-timestamp': pick('webhook-timestamp'),
    'webhook-signature': pick('webhook-signature'),
  };
}

/**
 * Checks a delivery's Standard Webhooks signature against each secret, so that during a rotation
 * either secret is accepted. `body` must be the raw text received, not re-serialized JSON. Throws
 * WebhookVerificationError when no secret verifies it (or its timestamp is over 5 minutes off).
 */
export function verifyWebhook(
  body: string,
  headers: HeaderSource,
  secrets: string | readonly string[],
): WebhookEvent {
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  if (!list.length) throw new WebhookVerificationError('No webhook secret given');
  const received = headerRecord(headers);
  let failure: unknown;
  for (const secret of list) {
    try {
      return new Webhook(secret).verify(body, received) as WebhookEvent;
    } catch (error) {
      // A timestamp out of bounds fails for every secret alike: no point trying the others.
      if (!(error instanceof WebhookVerificationError)) throw error;
      failure = error;
    }
  }
  throw failure;
}
