import { firstBrokenRule } from '../../src/db/money-rules';
import {
  activeWalletRules,
  currencySwitchRefusal,
  decide,
  heldRules,
  holdRules,
  MONEY_STEPS,
  reads,
  releaseRules,
  transferRules,
  truthOf,
  type Facts,
  type WalletFacts,
} from '../../src/domain/money-rules';

const APP = 'app-1';
const wallet = (id: string, change: Partial<WalletFacts> = {}): WalletFacts => ({
  id,
  application_id: APP,
  mode: 'test',
  is_active: true,
  currency: 'USD',
  base_currency: 'USD',
  balance: 500n,
  ...change,
});
const params = {
  applicationId: APP,
  mode: 'test',
  fromWalletId: 'a',
  toWalletId: 'b',
  amount: 100n,
};
const transfer = (
  from: Partial<WalletFacts> | null | undefined,
  to: Partial<WalletFacts> | null | undefined,
  change: Partial<typeof params> = {},
): Facts<'from' | 'to', keyof typeof params> => ({
  subjects: { from, to },
  params: { ...params, ...change },
});

describe('decide: a step’s first rule that does not hold is its answer', () => {
  it.each([
    ['passes', transfer(wallet('a'), wallet('b')), { status: 'passed' }],
    [
      'the same wallet on both sides, before anything is read',
      transfer(undefined, undefined, { toWalletId: 'a' }),
      { status: 'declined', code: 'same_wallet' },
    ],
    [
      'a missing sender',
      transfer(null, wallet('b')),
      { status: 'declined', code: 'wallet_not_found' },
    ],
    [
      'another application’s recipient, before a disabled sender (every wallet owned first)',
      transfer(wallet('a', { is_active: false }), wallet('b', { application_id: 'app-2' })),
      { status: 'declined', code: 'wallet_forbidden' },
    ],
    [
      'another mode’s sender',
      transfer(wallet('a', { mode: 'live' }), wallet('b')),
      { status: 'declined', code: 'wallet_forbidden' },
    ],
    [
      'a disabled recipient',
      transfer(wallet('a'), wallet('b', { is_active: false })),
      { status: 'declined', code: 'wallet_disabled' },
    ],
    [
      'a sender left in another currency than its application',
      transfer(wallet('a', { currency: 'SLE' }), wallet('b')),
      { status: 'declined', code: 'currency_mismatch' },
    ],
    [
      'two wallets of different currencies, each its application’s',
      transfer(wallet('a', { currency: 'SLE', base_currency: 'SLE' }), wallet('b')),
      { status: 'declined', code: 'currency_mismatch' },
    ],
    [
      'more than the balance',
      transfer(wallet('a', { balance: 99n }), wallet('b')),
      { status: 'declined', code: 'insufficient_funds' },
    ],
  ])('a transfer: %s', (_name, facts, decision) => {
    expect(decide(transferRules, facts)).toEqual(decision);
  });

  it('stops at the first rule that needs a fact not known, whatever comes after', () => {
    // The API reads no balance: a transfer it can say nothing against is left to the step.
    const { balance: _a, ...unlocked } = wallet('a', { balance: 0n });
    expect(decide(transferRules, transfer(unlocked, wallet('b')))).toEqual({
      status: 'unknown',
      rule: expect.objectContaining({ code: 'insufficient_funds' }),
    });
    // A wallet known only from memory stops the rules there, even with a later rule broken.
    const stopped = decide(
      transferRules,
      transfer(undefined, wallet('b', { application_id: 'app-2' })),
    );
    expect(stopped).toEqual({
      status: 'unknown',
      rule: expect.objectContaining({ code: 'wallet_not_found' }),
    });
    // What the API then reads: the rule asks the sender, not the recipient.
    if (stopped.status !== 'unknown') throw new Error('decided');
    expect([reads(stopped.rule.holds, 'from'), reads(stopped.rule.holds, 'to')]).toEqual([
      true,
      false,
    ]);
  });

  it('asks nothing of a recipient a hold does not name', () => {
    const facts = {
      subjects: { sender: wallet('a'), recipient: null },
      params: {
        applicationId: APP,
        mode: 'test',
        walletId: 'a',
        recipientWalletId: null,
        amount: 5n,
      },
    };
    expect(decide(holdRules, facts)).toEqual({ status: 'passed' });
    expect(
      decide(holdRules, { ...facts, params: { ...facts.params, recipientWalletId: 'b' } }),
    ).toEqual({
      status: 'declined',
      code: 'wallet_not_found',
    });
    expect(
      decide(holdRules, {
        subjects: { sender: wallet('a'), recipient: wallet('a') },
        params: { ...facts.params, recipientWalletId: 'a' },
      }),
    ).toEqual({
      status: 'declined',
      code: 'same_wallet',
      detail: 'The recipient cannot be the sender',
    });
  });

  it('declines a release as the hold stands, then its recipient, then its amount', () => {
    const hold = {
      id: 'h',
      application_id: APP,
      mode: 'test',
      status: 'held',
      currency: 'USD',
      escrow_amount: 300n,
    };
    const release = (change: object, amount: bigint | null = null) =>
      decide(releaseRules, {
        subjects: { hold: { ...hold, ...change }, recipient: wallet('b') },
        params: { applicationId: APP, mode: 'test', recipientWalletId: 'b', amount },
      });
    expect(release({ status: 'completed' })).toEqual({
      status: 'declined',
      code: 'escrow_not_held',
    });
    expect(release({ currency: 'SLE' })).toEqual({ status: 'declined', code: 'currency_mismatch' });
    expect(release({}, 301n)).toEqual({ status: 'declined', code: 'release_exceeds_hold' });
    expect(release({}, 0n)).toEqual({
      status: 'declined',
      code: 'validation_failed',
      detail: 'amount must be greater than 0',
    });
    expect(release({}, 300n)).toEqual({ status: 'passed' });
    expect(release({})).toEqual({ status: 'passed' });
  });

  it('reads a missing subject’s fields as null, which no comparison holds, as in SQL', () => {
    const facts = { subjects: { w: null }, params: {} };
    const isActive = {
      op: 'eq',
      left: { subject: 'w', field: 'is_active' },
      right: { value: true },
    } as const;
    expect(truthOf(isActive, facts)).toBeNull();
    expect(truthOf({ op: 'not', of: isActive }, facts)).toBeNull();
    expect(truthOf({ op: 'or', of: [isActive, { op: 'exists', subject: 'w' }] }, facts)).toBeNull();
    expect(truthOf({ op: 'and', of: [isActive, { op: 'exists', subject: 'w' }] }, facts)).toBe(
      false,
    );
  });

  it('gives every decline of every step an error code, and every step a name', () => {
    for (const step of Object.values(MONEY_STEPS)) {
      expect(step.name).not.toBe('');
      for (const rule of step.rules) expect(rule.code).toMatch(/^[a-z_]+$/);
    }
  });
});

describe('firstBrokenRule: the rules compiled to SQL', () => {
  it('decides a rule over parameters alone in TypeScript: only its index reaches the SQL', () => {
    const same = firstBrokenRule(transferRules, { ...params, toWalletId: 'a' });
    expect(same.sql).toBe('(CASE WHEN true THEN $slonik_1::int END)');
    expect(same.values).toEqual([0]);
  });

  it('reads the facts as `<subject>_<field>` columns and binds the parameters', () => {
    const { sql, values } = firstBrokenRule(transferRules, params);
    expect(sql).toContain('"from_application_id" = $slonik_');
    expect(sql).toContain('"to_currency" = "from_currency"');
    expect(sql).toContain('"from_balance" >= $slonik_');
    expect(values).toEqual(expect.arrayContaining([APP, 'test', '100']));
  });

  it('leaves out the rules of a recipient that is not named', () => {
    const { sql } = firstBrokenRule(holdRules, {
      applicationId: APP,
      mode: 'test',
      walletId: 'a',
      recipientWalletId: null,
      amount: 5n,
    });
    expect(sql).not.toContain('recipient_');
    expect(sql).toContain('"sender_is_active"');
  });

  it('refuses to compile a step without a parameter its rules need', () => {
    expect(() => firstBrokenRule(transferRules, { applicationId: APP })).toThrow(
      /parameter \w+ not given/,
    );
  });
});

describe('the rules read outside a money step', () => {
  it('declines a disabled wallet as the steps do', () => {
    const step = (is_active: boolean) =>
      decide(activeWalletRules, { subjects: { wallet: wallet('a', { is_active }) }, params: {} });
    expect(step(true)).toEqual({ status: 'passed' });
    expect(step(false)).toEqual({ status: 'declined', code: 'wallet_disabled' });
  });

  it('answers a hold ended meanwhile as not held', () => {
    const hold = { status: 'held', escrow_amount: 300n };
    const answer = (change: object) =>
      decide(heldRules, { subjects: { hold: { ...hold, ...change } }, params: {} });
    expect(answer({})).toEqual({ status: 'passed' });
    expect(answer({ status: 'completed', escrow_amount: 0n })).toEqual({
      status: 'declined',
      code: 'escrow_not_held',
    });
  });

  it('refuses a currency switch for the first blocker found', () => {
    const none = { funded: false, open: false, disputed: false };
    expect(currencySwitchRefusal(none)).toBeNull();
    expect(currencySwitchRefusal({ ...none, open: true, disputed: true })).toBe(
      'the base currency cannot change: a payment of the application is still open',
    );
    expect(currencySwitchRefusal({ funded: true, open: true, disputed: true })).toBe(
      'the base currency cannot change: a wallet of the application holds money',
    );
  });
});
