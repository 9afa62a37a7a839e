import {
  assertPublicUrl,
  classifyAddress,
  FORBIDDEN_ADDRESS_MESSAGE,
  ForbiddenAddressError,
  InvalidWebhookUrlError,
  parseAllowlist,
  parseHostAddress,
  type HostResolver,
} from '../../src/outbound/address-guard';

/** No test here may reach a network: host names resolve through this table only. */
const names: Record<string, string[]> = {
  'public.test': ['93.184.216.34', '2606:2800:220:1::1'],
  'rebind.test': ['93.184.216.34', '10.0.0.5'],
  'mapped.test': ['::ffff:127.0.0.1'],
  'metadata.test': ['169.254.169.254'],
  'wireserver.test': ['168.63.129.16'],
  'private.test': ['10.0.0.1', '172.16.5.4', '192.168.0.1'],
  'linklocal.test': ['169.254.0.1', 'fe80::1'],
  'cgnat.test': ['100.64.0.1'],
  'multicast.test': ['224.0.0.1', 'ff02::1'],
  'uniquelocal.test': ['fc00::1', 'fd00:ec2::254'],
  'localhost.test': ['127.0.0.1', '::1'],
};
const resolve: HostResolver = (host) => {
  const addresses = names[host];
  if (!addresses) return Promise.reject(new Error(`ENOTFOUND ${host}`));
  return Promise.resolve(
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
  );
};
const guard = { allowlist: [], httpsOnly: false, resolve };

describe('new URL() normalises IPv4 notations before the guard sees them', () => {
  test.each([
    ['http://127.1/', '127.0.0.1'],
    ['http://0x7f000001/', '127.0.0.1'],
    ['http://2130706433/', '127.0.0.1'],
    ['http://0177.0.0.1/', '127.0.0.1'],
    ['http://127.0.0.1./', '127.0.0.1'],
    ['http://0x7f.1/', '127.0.0.1'],
    ['http://[::ffff:127.0.0.1]/', '[::ffff:7f00:1]'],
    ['http://[::127.0.0.1]/', '[::7f00:1]'],
  ])('%s has hostname %s', (url, hostname) => {
    expect(new URL(url).hostname).toBe(hostname);
  });
});

describe('parseHostAddress', () => {
  test.each([
    ['127.1', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['2130706433', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['127.0.0.1.', '127.0.0.1'],
    ['[::1]', '::1'],
    ['::ffff:127.0.0.1', '::ffff:7f00:1'],
    ['[fe80::1%eth0]', 'fe80::1%eth0'],
    ['example.com', undefined],
    ['127.0.0.1.nip.io', undefined],
  ])('%s is %s', (host, expected) => {
    expect(parseHostAddress(host)?.toString()).toBe(expected);
  });
});

describe('classifyAddress', () => {
  test.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['0x7f000001', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.1.1', 'linkLocal'],
    ['169.254.169.254', 'metadata'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.127.255.255', 'carrierGradeNat'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fe80::1%eth0', 'linkLocal'],
    ['febf::1', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12:3456::1', 'uniqueLocal'],
    ['fd00:ec2::254', 'metadata'],
    ['168.63.129.16', 'metadata'],
    ['fd20:ce::254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['169.254.170.23', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['192.0.0.192', 'metadata'],
    ['169.254.0.23', 'metadata'],
    ['ff02::1', 'multicast'],
    ['fec0::1', 'deprecatedSiteLocal'],
    ['2001:db8::1', 'reserved'],
    ['2001::1', 'teredo'],
    ['64:ff9b:1::1', 'rfc6052'],
  ])('%s is forbidden (%s)', (ip, range) => {
    const verdict = classifyAddress(ip);
    expect(verdict.range).toBe(range);
    expect(verdict.forbidden).toBe(true);
  });

  test.each([
    ['::ffff:127.0.0.1', '127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', '127.0.0.1', 'loopback'],
    ['::ffff:10.0.0.1', '10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', '169.254.169.254', 'metadata'],
    ['::127.0.0.1', '127.0.0.1', 'loopback'],
    ['::7f00:1', '127.0.0.1', 'loopback'],
    ['::ffff:0:127.0.0.1', '127.0.0.1', 'loopback'],
    ['64:ff9b::127.0.0.1', '127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', '169.254.169.254', 'metadata'],
    ['::ffff:168.63.129.16', '168.63.129.16', 'metadata'],
    ['64:ff9b::a83f:8110', '168.63.129.16', 'metadata'],
    ['2002:7f00:1::1', '127.0.0.1', 'loopback'],
    ['2002:c0a8:101::', '192.168.1.1', 'private'],
  ])('%s is judged by its IPv4 %s (%s)', (ip, inner, range) => {
    const verdict = classifyAddress(ip);
    expect(verdict.embeddedIPv4).toBe(inner);
    expect(verdict.range).toBe(range);
    expect(verdict.forbidden).toBe(true);
  });

  test.each([
    ['93.184.216.34'],
    ['8.8.8.8'],
    ['2606:2800:220:1::1'],
    ['::ffff:93.184.216.34'],
    ['64:ff9b::5db8:d822'],
    ['2002:5db8:d822::1'],
  ])('%s is allowed', (ip) => {
    const verdict = classifyAddress(ip);
    expect(verdict.range).toBe('unicast');
    expect(verdict.forbidden).toBe(false);
  });

  test('the allowlist exempts single addresses and CIDR ranges, and nothing more', () => {
    expect(classifyAddress('127.0.0.1', ['127.0.0.1']).forbidden).toBe(false);
    expect(classifyAddress('127.0.0.2', ['127.0.0.1']).forbidden).toBe(true);
    expect(classifyAddress('10.9.8.7', ['10.0.0.0/8']).forbidden).toBe(false);
    expect(classifyAddress('172.16.0.1', ['10.0.0.0/8']).forbidden).toBe(true);
    expect(classifyAddress('::1', ['::1/128']).forbidden).toBe(false);
    expect(classifyAddress('::ffff:127.0.0.1', ['127.0.0.0/8']).forbidden).toBe(false);
    expect(classifyAddress('::1', ['127.0.0.0/8']).forbidden).toBe(true);
    expect(classifyAddress('127.0.0.1', ['127.0.0.1']).allowlisted).toBe(true);
  });

  test('a bad allowlist entry is a configuration error; blanks are ignored', () => {
    expect(() => parseAllowlist(['10.0.0.0/33'])).toThrow(/WEBHOOK_PRIVATE_ALLOWLIST/);
    expect(() => parseAllowlist(['intranet'])).toThrow(/WEBHOOK_PRIVATE_ALLOWLIST/);
    expect(parseAllowlist(['', ' '])).toEqual([]);
  });

  test('a host name is not an address', () => {
    expect(() => classifyAddress('example.com')).toThrow(InvalidWebhookUrlError);
  });
});

describe('assertPublicUrl', () => {
  const forbidden = [
    'http://127.0.0.1/hook',
    'http://127.1/hook',
    'http://0x7f000001/hook',
    'http://2130706433/hook',
    'http://0177.0.0.1/hook',
    'http://127.0.0.1./hook',
    'http://0x7f.1/hook',
    'http://127.0.0.1:8080/hook',
    'https://127.0.0.1/hook',
    'http://[::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[::ffff:7f00:1]/hook',
    'http://[::127.0.0.1]/hook',
    'http://[64:ff9b::127.0.0.1]/hook',
    'http://[2002:7f00:1::]/hook',
    'http://[::]/hook',
    'http://0.0.0.0/hook',
    'http://0/hook',
    'http://localhost.test/hook',
    'http://rebind.test/hook',
    'http://mapped.test/hook',
    'http://metadata.test/hook',
    'http://168.63.129.16/hook',
    'http://wireserver.test/hook',
    'http://private.test/hook',
    'http://linklocal.test/hook',
    'http://cgnat.test/hook',
    'http://multicast.test/hook',
    'http://uniquelocal.test/hook',
  ];
  test.each(forbidden)('%s is refused', async (url) => {
    await expect(assertPublicUrl(url, guard)).rejects.toThrow(
      new ForbiddenAddressError(FORBIDDEN_ADDRESS_MESSAGE),
    );
    await expect(assertPublicUrl(url, guard)).rejects.toBeInstanceOf(ForbiddenAddressError);
  });

  test.each(['http://public.test/hook', 'https://public.test/hook'])(
    '%s is allowed (without contacting it)',
    async (url) => {
      await expect(assertPublicUrl(url, guard)).resolves.toBeUndefined();
    },
  );

  test('the allowlist exempts literals and resolved addresses', async () => {
    const local = { ...guard, allowlist: ['127.0.0.0/8', '::1'] };
    await expect(assertPublicUrl('http://127.1/hook', local)).resolves.toBeUndefined();
    await expect(assertPublicUrl('http://[::1]/hook', local)).resolves.toBeUndefined();
    await expect(assertPublicUrl('http://localhost.test/hook', local)).resolves.toBeUndefined();
    await expect(assertPublicUrl('http://private.test/hook', local)).rejects.toBeInstanceOf(
      ForbiddenAddressError,
    );
  });

  test.each([
    ['not a url', 'Webhook URL is not a valid URL'],
    ['ftp://public.test/hook', 'Webhook URL must use http or https'],
    ['file:///etc/passwd', 'Webhook URL must use http or https'],
    ['gopher://public.test/', 'Webhook URL must use http or https'],
    ['http://user:pass@public.test/hook', 'Webhook URL must not contain credentials'],
    ['http://unknown.test/hook', 'Webhook URL host could not be resolved'],
  ])('%s is invalid: %s', async (url, message) => {
    await expect(assertPublicUrl(url, guard)).rejects.toThrow(new InvalidWebhookUrlError(message));
  });

  test('Live Mode accepts https only', async () => {
    const live = { ...guard, httpsOnly: true };
    await expect(assertPublicUrl('http://public.test/hook', live)).rejects.toThrow(
      new InvalidWebhookUrlError('Webhook URL must use https'),
    );
    await expect(assertPublicUrl('https://public.test/hook', live)).resolves.toBeUndefined();
    await expect(assertPublicUrl('https://127.0.0.1/hook', live)).rejects.toBeInstanceOf(
      ForbiddenAddressError,
    );
  });
});
