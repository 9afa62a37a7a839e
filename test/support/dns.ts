import dns from 'node:dns';

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void;

/**
 * Answers `dns.lookup` with `answer(host)`'s addresses, as a resolver an attacker controls would
 * (a name rebound to an internal address, say); a name it answers `undefined` for resolves as
 * usual. Undo with the returned spy's `mockRestore()` or `jest.restoreAllMocks()`.
 */
export function mockLookup(answer: (host: string) => dns.LookupAddress[] | undefined) {
  const original = dns.lookup.bind(dns);
  // `lookup` is overloaded: (host, callback) or (host, options, callback).
  return jest.spyOn(dns, 'lookup').mockImplementation((host: string, ...rest: unknown[]) => {
    const callback = rest.at(-1) as LookupCallback;
    const options = (rest.length > 1 ? rest[0] : {}) as dns.LookupOptions;
    const addresses = answer(host);
    if (!addresses) return original(host, options, callback);
    if (options.all) return callback(null, addresses);
    const [first] = addresses;
    if (first) return callback(null, first.address, first.family);
    return callback(Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' }), '');
  });
}
