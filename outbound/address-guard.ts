/**
 * The SSRF guard for outbound webhook requests (issue 10): a URL may name only a public address,
 * checked at subscription time and again on the address actually connected to at delivery.
 * This file fixes the interface; the implementation follows.
 */

/** The URL names, or resolves to, an address the service must never contact. */
export class ForbiddenAddressError extends Error {
  constructor(message = 'Webhook URL must not point to a private or internal address') {
    super(message);
    this.name = 'ForbiddenAddressError';
  }
}

export type AddressGuardOptions = {
  /** `WEBHOOK_PRIVATE_ALLOWLIST`: IPs or CIDR ranges exempted (local development, tests). */
  allowlist: readonly string[];
  /** Live Mode: `https` only. */
  httpsOnly: boolean;
};

/**
 * Refuses a URL that is not http(s) (https only when asked), or whose host is, or resolves to,
 * a loopback, private, link-local, carrier-grade NAT, multicast, unspecified or metadata address.
 */
export function assertPublicUrl(_url: string, _options: AddressGuardOptions): Promise<void> {
  return Promise.reject(new Error('assertPublicUrl is not implemented yet'));
}
