import { withoutSecrets } from '../../src/domain/audit';

/** The one definition of what an audit entry's details may keep (docs/security.md, Audit log). */
describe('withoutSecrets', () => {
  it.each([
    [
      'drops a credential’s keys',
      { secret_key: 'x', api_key: 'y', apiKey: 'z', mode: 'live' },
      { mode: 'live' },
    ],
    [
      'drops a password and a TOTP secret',
      { password: 'p', new_password: 'p', totp_secret: 's', otp: '123456' },
      {},
    ],
    [
      'drops tokens, sessions, cookies, signatures',
      {
        token: 't',
        csrf_token: 'c',
        session: 's',
        cookie: 'k',
        signature: 'v',
        authorization: 'a',
      },
      {},
    ],
    ['drops recovery codes', { recovery_codes: ['a', 'b'] }, {}],
    [
      'drops a webhook secret and its sealed form',
      { secret: 'whsec_x', secret_sealed: 'v1:...' },
      {},
    ],
    [
      'drops values shaped like the engine’s secrets',
      { hint: 'sk_live_abc', other: 'whsec_abc', uri: 'otpauth://totp/x', key: 'pk_admin_x' },
      {},
    ],
    [
      'drops the same, nested and in lists',
      { a: { b: { password: 'p', c: 1 } }, l: ['sk_test_x', 'ok', { token: 't' }] },
      { a: { b: { c: 1 } }, l: ['ok', {}] },
    ],
    [
      'keeps plain values as they are',
      { url: 'https://example.com/hook', events: ['a.b'], n: 3, on: false, none: null },
      { url: 'https://example.com/hook', events: ['a.b'], n: 3, on: false, none: null },
    ],
    ['leaves undefined fields out', { a: undefined, b: 1 }, { b: 1 }],
  ])('%s', (_, details, kept) => {
    expect(withoutSecrets(details)).toEqual(kept);
  });

  it('answers {} for no details', () => {
    expect(withoutSecrets(undefined)).toEqual({});
  });
});
