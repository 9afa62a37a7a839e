import { contradicts } from '../../src/intake/contradictions';
import {
  providerRefusal,
  RESOLUTION_REFUSED,
  RESOLUTION_UNREACHABLE,
} from '../../src/workflows/resolution';

/**
 * The provider's word against the engine's (docs/api.md, "Resolve a stuck payment"): when it
 * refuses an operator's resolution, and when it contradicts a payment that has ended.
 */
describe('providerRefusal: a resolution needs the provider to agree', () => {
  it.each([
    ['failed', 'failed'],
    ['failed', 'expired'],
    ['completed', 'completed'],
  ] as const)('lets %s through when the provider says %s', (outcome, status) => {
    expect(providerRefusal({ outcome }, { reached: true, status })).toBeNull();
  });

  it.each([
    ['failed', 'completed'],
    ['failed', 'pending'],
    ['completed', 'pending'],
    ['completed', 'failed'],
  ] as const)('refuses %s when the provider says %s, force or not', (outcome, status) => {
    for (const force of [false, true]) {
      expect(providerRefusal({ outcome, force }, { reached: true, status })).toEqual({
        type: RESOLUTION_REFUSED,
        detail: `The provider says the payment is ${status}: it cannot be resolved ${outcome}`,
      });
    }
  });

  it('names a refusal of the request itself', () => {
    expect(
      providerRefusal(
        { outcome: 'failed' },
        { reached: true, status: 'refused', detail: 'No payout po_1' },
      ),
    ).toEqual({
      type: RESOLUTION_REFUSED,
      detail: 'The provider refused the request (No payout po_1): it cannot be resolved failed',
    });
  });

  it('refuses when the provider cannot be reached, unless forced', () => {
    expect(providerRefusal({ outcome: 'failed' }, { reached: false })?.type).toBe(
      RESOLUTION_UNREACHABLE,
    );
    expect(providerRefusal({ outcome: 'completed', force: false }, { reached: false })?.type).toBe(
      RESOLUTION_UNREACHABLE,
    );
    expect(providerRefusal({ outcome: 'completed', force: true }, { reached: false })).toBeNull();
  });
});

describe('contradicts: a provider answer against an ended payment', () => {
  it.each([
    ['failed', 'completed'],
    ['failed', 'succeeded'],
    ['expired', 'paid'],
    ['completed', 'failed'],
    ['completed', 'expired'],
    ['completed', 'canceled'],
  ])('an engine %s and a provider %s contradict', (engine, provider) => {
    expect(contradicts(engine, provider)).toBe(true);
  });

  it.each([
    ['completed', 'completed'],
    ['completed', 'succeeded'],
    ['failed', 'failed'],
    ['failed', 'pending'],
    ['pending', 'completed'],
    ['completed', 'pending'],
  ])('an engine %s and a provider %s do not', (engine, provider) => {
    expect(contradicts(engine, provider)).toBe(false);
  });
});
