import { allHandlersFinished, condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from './activities-types';
import { asDeclined, exhausted } from './declines';
import {
  disputeStateQuery,
  disputeUpdates,
  MAX_EVIDENCE_CHARS,
  type DisputeInput,
  type DisputeOpened,
  type DisputeOutcome,
  type DisputeStatus,
} from './dispute-shared';
import { activityPresets } from './retry';
import type { Declined } from './shared';
import { setPaymentStatus } from './status';
import { paymentClock } from './clock';

const ledger = proxyActivities<Activities>(activityPresets.ledger);
const provider = proxyActivities<Activities>(activityPresets.provider);

const PAST_DUE: Declined = {
  status: 'declined',
  code: 'invalid_request',
  detail: 'The evidence is past its due date',
};
const UNREACHABLE: Declined = {
  status: 'declined',
  code: 'provider_unavailable',
  detail: 'The provider did not take the evidence; send it again',
};
const CLOSED: Declined = { status: 'declined', code: 'dispute_closed', detail: null };

/**
 * A card deposit's dispute (docs/architecture.md, The dispute path): opening moves the amount to
 * the dispute reserve, then it waits for evidence and the provider's decision (in Test Mode, lost
 * at `evidenceDueBy` without evidence); won gives the reserve back, lost pays it to the provider.
 */
export async function disputeWorkflow(input: DisputeInput): Promise<DisputeOutcome> {
  const id = { disputeId: input.disputeId };
  let answer: DisputeOpened | Declined | undefined;
  let status: DisputeStatus = 'needs_response';
  let decision: 'won' | 'lost' | null = null;
  /** Evidence being sent, so that the deadline does not close the dispute meanwhile. */
  let sending = false;
  let evidenceGiven = false;

  const opened = () => answer?.status === 'opened';
  const isClosed = () => status === 'won' || status === 'lost' || decision !== null;
  const clock = paymentClock(input.mode);
  const pastDue = () => clock.now() >= Date.parse(input.evidenceDueBy);

  setHandler(disputeUpdates.open, async () => {
    await condition(() => answer !== undefined);
    return answer!;
  });
  setHandler(
    disputeUpdates.evidence,
    async ({ text, audit }) => {
      await condition(() => answer !== undefined && !sending);
      if (!opened() || isClosed()) return CLOSED;
      if (pastDue()) return PAST_DUE;
      sending = true;
      try {
        status = await provider.submitDisputeEvidence({ ...id, text, ...(audit && { audit }) });
        evidenceGiven = true;
        return status;
      } catch (error) {
        const declined = asDeclined(error);
        if (declined) return declined;
        // The provider stayed unreachable: nothing changed, the merchant may send it again.
        if (exhausted(error)) return UNREACHABLE;
        throw error;
      } finally {
        sending = false;
      }
    },
    {
      validator: ({ text }: { text: string }) => {
        if (typeof text !== 'string' || text.length < 1 || text.length > MAX_EVIDENCE_CHARS) {
          throw new Error(`text: 1 to ${MAX_EVIDENCE_CHARS} characters`);
        }
      },
    },
  );
  setHandler(
    disputeUpdates.close,
    async ({ status: decided }) => {
      await condition(() => answer !== undefined);
      if (!opened()) return status;
      decision ??= decided;
      await condition(() => status === 'won' || status === 'lost');
      return status;
    },
    {
      validator: ({ status: decided }: { status: string }) => {
        if (decided !== 'won' && decided !== 'lost') throw new Error(`unknown status ${decided}`);
      },
    },
  );
  setHandler(disputeStateQuery, () => status);

  try {
    answer = await ledger.openDispute(input);
  } catch (error) {
    const declined = asDeclined(error);
    if (!declined) throw error;
    answer = declined;
    setPaymentStatus('failed');
    await condition(allHandlersFinished);
    return 'declined';
  }

  /** Closes once the decision is in and no evidence is being sent; run once, awaited twice. */
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await condition(() => decision !== null && !sending);
      status = await ledger.closeDispute({ ...id, status: decision! });
      // Won: the wallet has its money back; lost: it went to the provider.
      setPaymentStatus(status === 'won' ? 'completed' : 'failed');
    })());

  if (input.mode === 'test') {
    // The sandbox decides nothing itself: no evidence by the deadline loses the dispute (closed
    // within the deadline's step, so that an advance of the test clock answers once it is).
    const dueInMs = Math.max(Date.parse(input.evidenceDueBy) - Date.now(), 0);
    const answeredBy = () => decision !== null || evidenceGiven || sending;
    const lost = async () => {
      decision = 'lost';
      await close();
    };
    const answered = dueInMs > 0 ? await clock.wait(answeredBy, dueInMs, lost) : answeredBy();
    if (!answered) decision = 'lost';
  }
  await close();
  await condition(allHandlersFinished);
  // Read through a function: `close` set it while this awaited.
  const closedAs = (): DisputeStatus => status;
  return closedAs() === 'won' ? 'won' : 'lost';
}
