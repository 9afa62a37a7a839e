import { decide, type Facts, type MoneyStep } from '../domain/money-rules';
import { decline } from './declines';

/**
 * A money step's rules (src/domain/money-rules.ts) over what the activity read: the first that does
 * not hold is a decline. Answers whether every rule was decided; false when one needs a fact
 * not read yet (a balance, before the lock that reads it), so the caller asks again with it.
 */
export function refuseUnless<S extends string, P extends string>(
  step: MoneyStep<S, P>,
  facts: Facts<S, P>,
): boolean {
  const decision = decide(step, facts);
  if (decision.status === 'declined') throw decline(decision.code, decision.detail);
  return decision.status === 'passed';
}

/** `refuseUnless`, for facts that are all read: a rule left undecided is a mistake of the step. */
export function refuseUnlessAll<S extends string, P extends string>(
  step: MoneyStep<S, P>,
  facts: Facts<S, P>,
): void {
  if (!refuseUnless(step, facts))
    throw new Error(`the ${step.name} step lacks a fact its rules need`);
}
