/**
 * The SSRF guard for outbound webhooks, at subscription and again on the address connected to.
 * Default-deny: only what ipaddr.js calls plain `unicast` passes, so an unnamed special range is
 * refused; IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4, ...) are judged by it.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import ipaddr from 'ipaddr.js';

export const FORBIDDEN_ADDRESS_MESSAGE =
  'Webhook URL must not point to a private or internal address';

/** The URL names, or resolves to, an address the service must never contact. */
export class ForbiddenAddressError extends Error {
  constructor(message = FORBIDDEN_ADDRESS_MESSAGE) {
    super(message);
    this.name = 'ForbiddenAddressError';
  }
}

/** The URL is not one a webhook may use at all (not a URL, wrong scheme, credentials, no host). */
export class InvalidWebhookUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidWebhookUrlError';
  }
}

export type ResolvedAddress = { address: string; family: number };

/** Resolves every address of a host name; `dns.promises.lookup` unless a test swaps it. */
export type HostResolver = (host: string) => Promise<ResolvedAddress[]>;

export type AddressGuardOptions = {
  /** `WEBHOOK_PRIVATE_ALLOWLIST`: IPs or CIDR ranges exempted (local development, tests). */
  allowlist: readonly string[];
  /** Live Mode: `https` only. */
  httpsOnly: boolean;
  /** Used by `assertPublicUrl` only; the connection path always asks the system resolver. */
  resolve?: HostResolver;
};

export type AddressClassification = {
  /** The address as ipaddr.js prints it. */
  address: string;
  /** The ipaddr.js range (`unicast`, `loopback`, `private`, ...), or `metadata`. */
  range: string;
  /** The IPv4 address an IPv6 form carries, when the verdict was taken on it. */
  embeddedIPv4?: string;
  allowlisted: boolean;
  forbidden: boolean;
};

type Address = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [Address, number];

/**
 * Cloud instance metadata and host services. Azure's wireserver is public unicast, so only this
 * list refuses it; the others sit in ranges refused anyway and are named so the verdict says so.
 */
const METADATA_ADDRESSES = new Set([
  '169.254.169.254', // AWS, GCP, Azure IMDS, Oracle, DigitalOcean, OpenStack and most others
  '168.63.129.16', // Azure wireserver and DNS
  'fd00:ec2::254', // AWS IMDS over IPv6
  'fd20:ce::254', // GCP metadata over IPv6
  '169.254.170.2', // AWS ECS task metadata and credentials
  '169.254.170.23', // AWS EKS Pod Identity
  '100.100.100.200', // Alibaba Cloud
  '192.0.0.192', // Oracle Cloud (legacy)
  '169.254.0.23', // Tencent Cloud
]);

const defaultResolver: HostResolver = (host) =>
  dns.promises.lookup(host, { all: true, verbatim: true });

/** Parses `WEBHOOK_PRIVATE_ALLOWLIST` entries; a bad entry is a configuration error, not ignored. */
export function parseAllowlist(entries: readonly string[]): Cidr[] {
  return entries
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry): Cidr => {
      try {
        if (entry.includes('/')) return ipaddr.parseCIDR(entry);
        const address = ipaddr.parse(entry);
        return [address, address.kind() === 'ipv4' ? 32 : 128];
      } catch {
        throw new Error(`WEBHOOK_PRIVATE_ALLOWLIST: "${entry}" is not an IP address or CIDR range`);
      }
    });
}

function inAllowlist(address: Address, allowlist: readonly Cidr[]): boolean {
  return allowlist.some(
    ([range, bits]) => range.kind() === address.kind() && address.match(range, bits),
  );
}

function ipv4FromWords(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/** The IPv4 address a request to this IPv6 address may end up at, if any. */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const p = address.parts;
  const range = address.range();
  // :: and ::1 are themselves forbidden; leave them to their own range.
  if (range === 'unspecified' || range === 'loopback') return undefined;
  if (p.slice(0, 6).every((word) => word === 0)) return ipv4FromWords(p[6]!, p[7]!); // compatible
  if (range === 'ipv4Mapped' || range === 'rfc6145') return ipv4FromWords(p[6]!, p[7]!);
  if (p[0] === 0x64 && p[1] === 0xff9b && p.slice(2, 6).every((word) => word === 0)) {
    return ipv4FromWords(p[6]!, p[7]!); // NAT64 well-known prefix
  }
  if (range === '6to4') return ipv4FromWords(p[1]!, p[2]!);
  return undefined;
}

function classifyParsed(address: Address, allowlist: readonly Cidr[]): AddressClassification {
  const printed = address.toString();
  const inner = address.kind() === 'ipv6' ? embeddedIPv4(address as ipaddr.IPv6) : undefined;
  const judged: Address = inner ?? address;
  const judgedText = judged.toString();
  const range = METADATA_ADDRESSES.has(judgedText) ? 'metadata' : judged.range();
  const allowlisted = inAllowlist(address, allowlist) || (!!inner && inAllowlist(inner, allowlist));
  return {
    address: printed,
    range,
    ...(inner ? { embeddedIPv4: judgedText } : {}),
    allowlisted,
    forbidden: range !== 'unicast' && !allowlisted,
  };
}

/**
 * Classifies an IP address (IPv4 in any inet_aton notation, or IPv6, with or without brackets).
 * Throws InvalidWebhookUrlError when `ip` is not an address.
 */
export function classifyAddress(
  ip: string,
  allowlist: readonly string[] = [],
): AddressClassification {
  const address = parseHostAddress(ip);
  if (!address) throw new InvalidWebhookUrlError(`"${ip}" is not an IP address`);
  return classifyParsed(address, parseAllowlist(allowlist));
}

/**
 * The IP address a URL host names, or undefined for a domain name. Besides what `new URL()` gives,
 * accepts the inet_aton notations (`127.1`, `0x7f000001`) and a trailing dot, for hosts that did
 * not go through it.
 */
export function parseHostAddress(host: string): Address | undefined {
  let text = host.trim();
  if (text.startsWith('[') && text.endsWith(']')) {
    text = text.slice(1, -1);
    return ipaddr.IPv6.isValid(text) ? ipaddr.IPv6.parse(text) : undefined;
  }
  if (ipaddr.IPv6.isValid(text)) return ipaddr.IPv6.parse(text);
  if (text.endsWith('.')) text = text.slice(0, -1);
  if (ipaddr.IPv4.isValid(text)) return ipaddr.IPv4.parse(text);
  return undefined;
}

function parseWebhookUrl(url: string, options: AddressGuardOptions): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidWebhookUrlError('Webhook URL is not a valid URL');
  }
  const allowed = options.httpsOnly ? ['https:'] : ['http:', 'https:'];
  if (!allowed.includes(parsed.protocol)) {
    throw new InvalidWebhookUrlError(
      options.httpsOnly ? 'Webhook URL must use https' : 'Webhook URL must use http or https',
    );
  }
  // The URL is shown back in listings and logs; a password does not belong there, and the
  // signature is what authenticates a delivery.
  if (parsed.username !== '' || parsed.password !== '') {
    throw new InvalidWebhookUrlError('Webhook URL must not contain credentials');
  }
  if (parsed.hostname === '') throw new InvalidWebhookUrlError('Webhook URL must name a host');
  return parsed;
}

/**
 * Refuses a URL that is not http(s) (https only when asked), or whose host is, or resolves to,
 * a loopback, private, link-local, carrier-grade NAT, multicast, unspecified or metadata address.
 * Every address a host name resolves to must be public: the connection may use any of them.
 */
export async function assertPublicUrl(url: string, options: AddressGuardOptions): Promise<void> {
  const parsed = parseWebhookUrl(url, options);
  const allowlist = parseAllowlist(options.allowlist);
  const literal = parseHostAddress(parsed.hostname);
  if (literal) {
    if (classifyParsed(literal, allowlist).forbidden) throw new ForbiddenAddressError();
    return;
  }
  let resolved: ResolvedAddress[];
  try {
    resolved = await (options.resolve ?? defaultResolver)(parsed.hostname);
  } catch {
    throw new InvalidWebhookUrlError('Webhook URL host could not be resolved');
  }
  if (resolved.length === 0) {
    throw new InvalidWebhookUrlError('Webhook URL host could not be resolved');
  }
  for (const { address } of resolved) {
    const ip = parseHostAddress(address);
    if (!ip || classifyParsed(ip, allowlist).forbidden) throw new ForbiddenAddressError();
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for net/http/https: resolves once, refuses the host when any address is forbidden,
 * and hands exactly the checked addresses to the socket, so a DNS answer that changes between
 * the check and the connection cannot slip through.
 */
export function guardedLookup(options: Pick<AddressGuardOptions, 'allowlist'>) {
  const allowlist = parseAllowlist(options.allowlist);
  return function lookup(
    hostname: string,
    lookupOptions: dns.LookupOptions,
    callback: LookupCallback,
  ): void {
    dns.lookup(
      hostname,
      {
        family: lookupOptions.family,
        hints: lookupOptions.hints,
        all: true,
        verbatim: true,
      } as dns.LookupAllOptions,
      (error, addresses) => {
        if (error) return callback(error, '');
        const forbidden =
          addresses.length === 0 ||
          addresses.some(({ address }) => {
            const ip = parseHostAddress(address);
            return !ip || classifyParsed(ip, allowlist).forbidden;
          });
        if (forbidden) return callback(new ForbiddenAddressError(), '');
        if (lookupOptions.all) return callback(null, addresses);
        const first = addresses[0]!;
        return callback(null, first.address, first.family);
      },
    );
  };
}

type ConnectionOptions = {
  host?: string | null;
  hostname?: string | null;
  socketPath?: string;
  lookup?: unknown;
};
type CreateConnection = (
  options: ConnectionOptions,
  callback: (...args: never[]) => void,
) => unknown;

/**
 * Net skips `lookup` for an IP literal, so the agent checks literals itself (in every notation
 * the resolver might also accept); a Unix socket path is never a webhook target.
 */
function refuseBeforeConnecting(
  options: ConnectionOptions,
  allowlist: readonly Cidr[],
): Error | undefined {
  if (options.socketPath) return new ForbiddenAddressError();
  const host = options.host ?? options.hostname ?? 'localhost';
  const literal = parseHostAddress(host);
  if (literal && classifyParsed(literal, allowlist).forbidden) return new ForbiddenAddressError();
  return undefined;
}

function guard<T extends http.Agent>(agent: T, options: Pick<AddressGuardOptions, 'allowlist'>): T {
  const allowlist = parseAllowlist(options.allowlist);
  const lookup = guardedLookup(options);
  const original = (agent.createConnection as unknown as CreateConnection).bind(agent);
  const createConnection = (connection: ConnectionOptions, callback: (error: Error) => void) => {
    const refusal = refuseBeforeConnecting(connection, allowlist);
    if (refusal) {
      // The agent's own callback convention: the request emits 'error', no socket is opened.
      process.nextTick(() => callback(refusal));
      return undefined;
    }
    return original({ ...connection, lookup }, callback);
  };
  Object.assign(agent, { createConnection });
  return agent;
}

/** http and https agents whose every connection goes through the guard. No keep-alive reuse. */
export function guardedAgent(options: Pick<AddressGuardOptions, 'allowlist'>): {
  http: http.Agent;
  https: https.Agent;
} {
  return {
    http: guard(new http.Agent({ keepAlive: false }), options),
    https: guard(new https.Agent({ keepAlive: false }), options),
  };
}
