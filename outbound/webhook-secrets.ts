import { isLegacySealed, open } from './secret-box';

/** The sealed secrets of one subscription, as its row holds them. */
export type SealedWebhookSecrets = {
  id: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: string | null;
};

/**
 * The secrets a delivery is signed with: the current one, then the one a rotation replaced while
 * its overlap lasts. `previousExpired`: the row still holds a previous secret past its expiry,
 * which the caller erases. Throws SecretBoxError when the current one cannot be opened; a
 * previous one that cannot be opened is left out, as if it had expired.
 */
export function webhookSigningSecrets(
  key: Buffer,
  row: SealedWebhookSecrets,
  previousBinding: string,
  now: Date = new Date(),
): { secrets: string[]; legacy: boolean; previousExpired: boolean } {
  const current = open(key, row.secret_sealed, row.id);
  const secrets = [current];
  const expires = row.previous_secret_expires_at && Date.parse(row.previous_secret_expires_at);
  const live = row.previous_secret_sealed !== null && !!expires && expires > now.getTime();
  if (live && row.previous_secret_sealed) {
    try {
      secrets.push(open(key, row.previous_secret_sealed, previousBinding));
    } catch {
      // Signing with the current secret alone is what the receiver gets after the overlap.
    }
  }
  return {
    secrets,
    legacy: isLegacySealed(row.secret_sealed),
    previousExpired: row.previous_secret_sealed !== null && !live,
  };
}
