import { isLegacySealed, open } from '../crypto/secret-box';

/** The sealed secrets of one subscription, as its row holds them. */
export type SealedWebhookSecrets = {
  id: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: string | null;
};

/**
 * The secrets a delivery is signed with: the current one, then a rotated-out one while its overlap
 * lasts; `previousExpired` asks the caller to erase a lapsed one. A current secret that cannot be
 * opened throws SecretBoxError; a previous one is left out, as if expired.
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
