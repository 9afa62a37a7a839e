/**
 * Every workflow id the engine uses, in one place: the id is a payment's identity in Temporal
 * (a retried request attaches to the running workflow instead of starting another), so the API,
 * the activities and the operators' queries must all spell it the same way.
 */
export const WORKFLOW_ID_PREFIXES = {
  transfer: 'transfer-',
  deposit: 'deposit-',
  escrow: 'escrow-',
  cardDeposit: 'card-deposit-',
  payout: 'payout-',
  cashout: 'cashout-',
  refund: 'refund-',
  dispute: 'dispute-',
  onboarding: 'onboarding-',
  webhook: 'webhook-',
  reconRun: 'recon-run-',
  reconException: 'recon-exception-',
  reconAdjust: 'recon-adjust-',
  batch: 'batch-',
} as const;

type Prefixed = keyof typeof WORKFLOW_ID_PREFIXES;

export const workflowIds = {
  ...(Object.fromEntries(
    Object.entries(WORKFLOW_ID_PREFIXES).map(([kind, prefix]) => [
      kind,
      (id: string) => `${prefix}${id}`,
    ]),
  ) as Record<Prefixed, (id: string) => string>),
  /** The maintenance schedule's id (its runs are named after it by Temporal). */
  maintenance: 'maintenance',
  /** The reconciliation schedule's id; its runs are `reconciliation-<start time>`. */
  reconciliation: 'reconciliation',
  /** The daily schedule of provider reconciliation runs; its runs are named after it. */
  reconDaily: 'recon-daily',
};

/**
 * One webhook delivery: `webhook-<event id>-<subscription id>`; a redelivery adds
 * `-r<n>`, so it never collides with the delivery it repeats.
 */
export const webhookDeliveryId = (eventId: string, subscriptionId: string, redelivery = 0) =>
  `${WORKFLOW_ID_PREFIXES.webhook}${eventId}-${subscriptionId}${redelivery > 0 ? `-r${redelivery}` : ''}`;

/**
 * The outbox relay of a webhook task queue: `webhook-relay` on the engine's default (`webhooks`,
 * the id it had on `payments` before); another queue (each test engine has its own on a shared
 * Temporal) gets its own relay.
 */
export const webhookRelayId = (taskQueue: string) =>
  taskQueue === 'webhooks' ? 'webhook-relay' : `webhook-relay-${taskQueue}`;
