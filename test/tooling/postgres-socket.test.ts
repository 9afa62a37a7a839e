import path from 'node:path';
import { unixSocketDir } from '../../tools/harness/postgres';

describe('unixSocketDir: where the embedded Postgres puts its Unix-domain socket', () => {
  it('is the data folder, made absolute', () => {
    expect(unixSocketDir('/tmp/wallet/pg', 54329)).toBe('/tmp/wallet/pg');
    expect(unixSocketDir('.data/pg', 54329)).toBe(path.resolve('.data/pg'));
  });

  it('is null (TCP only) when the socket path would pass 107 bytes', () => {
    // '/.s.PGSQL.54329' is 15 bytes: a 92-byte folder fits exactly, 93 does not.
    const fits = `/${'a'.repeat(91)}`;
    expect(unixSocketDir(fits, 54329)).toBe(fits);
    expect(unixSocketDir(`${fits}a`, 54329)).toBeNull();
  });

  it('is null for a folder Postgres would split (comma, space) or a URL host would mangle', () => {
    for (const dir of ['/tmp/a,b/pg', '/tmp/a b/pg', '/tmp/a%2Fb/pg', '/tmp/a"b/pg', '/tmp/é/pg']) {
      expect(unixSocketDir(dir, 54329)).toBeNull();
    }
  });
});
