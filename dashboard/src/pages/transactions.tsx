import { useState } from 'preact/hooks';
import { TRANSACTION_STATUSES, TRANSACTION_TYPES } from '../../../domain/types';
import {
  idempotencyKey,
  modePath,
  REFUND_REASONS,
  request,
  type Mode,
  type Page,
  type Transaction,
} from '../api';
import { ErrorBox, Link, money, Pager, Status, useLoad, when } from '../ui';

type Step = {
  name: string;
  kind: string;
  status: string;
  attempts: number;
  started_at: string;
  ended_at: string | null;
  provider_reference: string | null;
  failure: string | null;
};
type Timeline = {
  workflow_id: string | null;
  workflow_type: string | null;
  workflow_status: string | null;
  started_at: string | null;
  ended_at: string | null;
  steps: Step[];
  note: string | null;
};

export function TransactionTable(props: { rows: Transaction[] }) {
  return (
    <div class="scroll">
      <table>
        <thead>
          <tr>
            <th>Created</th>
            <th>Type</th>
            <th>Status</th>
            <th class="num">Amount</th>
            <th>Description</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((t) => (
            <tr data-transaction={t.id}>
              <td>
                <Link to={`/transactions/${t.id}`}>{when(t.created_at)}</Link>
              </td>
              <td>
                {t.transaction_type}
                {t.source_transaction_id && (
                  <div class="muted">
                    of{' '}
                    <Link to={`/transactions/${t.source_transaction_id}`}>
                      {t.source_transaction_id.slice(0, 8)}
                    </Link>
                  </div>
                )}
              </td>
              <td>
                <Status value={t.status} />
              </td>
              <td class="num">
                {money(t.amount)}
                {Boolean(t.amount_refunded) && (
                  <div class="muted">refunded {money(t.amount_refunded)}</div>
                )}
              </td>
              <td>{t.description ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.rows.length === 0 && <p class="muted">No transactions.</p>}
    </div>
  );
}

export function Transactions(props: { mode: Mode }) {
  const [status, setStatus] = useState('');
  const [type, setType] = useState('');
  const [wallet, setWallet] = useState('');
  const [applied, setApplied] = useState({ status: '', type: '', wallet: '' });
  const [page, setPage] = useState(1);
  const query = new URLSearchParams({ page: String(page), per_page: '20' });
  if (applied.status) query.set('status', applied.status);
  if (applied.type) query.set('transaction_type', applied.type);
  if (applied.wallet) query.set('wallet_id', applied.wallet);
  const list = useLoad(
    () => request<Page<Transaction>>(modePath(props.mode, `/v1/transactions/?${query}`)),
    [props.mode, query.toString()],
  );
  return (
    <section>
      <h1>Transactions</h1>
      <form
        class="inline filters"
        onSubmit={(e) => {
          e.preventDefault();
          setPage(1);
          setApplied({ status, type, wallet: wallet.trim() });
        }}
      >
        <label>
          Status
          <select name="status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">Any</option>
            {TRANSACTION_STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Type
          <select
            name="transaction_type"
            value={type}
            onChange={(e) => setType(e.currentTarget.value)}
          >
            <option value="">Any</option>
            {TRANSACTION_TYPES.map((t) => (
              <option value={t}>{t}</option>
            ))}
          </select>
        </label>
        <label>
          Wallet id
          <input
            name="wallet_id"
            value={wallet}
            placeholder="sender or recipient"
            onInput={(e) => setWallet(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Filter</button>
      </form>
      <ErrorBox error={list.error} />
      {list.data && (
        <>
          <p class="muted">{list.data.total} transactions</p>
          <TransactionTable rows={list.data.data} />
          <Pager page={page} totalPages={list.data.total_pages} onPage={setPage} />
        </>
      )}
    </section>
  );
}

/** In cents, so that a partly refunded deposit's remainder has no float error. */
function leftToRefund(t: Transaction): number {
  return Math.max(0, Math.round(t.amount * 100) - Math.round((t.amount_refunded ?? 0) * 100));
}

type RefundOutcome = { refund: Transaction } | { error: string };

/**
 * Refunds a completed card deposit, by default all that is left. Each submission carries a
 * fresh Idempotency-Key; the button stays disabled while one is under way.
 */
function RefundForm(props: {
  path: string;
  deposit: Transaction;
  onOutcome: (outcome: RefundOutcome) => void;
}) {
  const left = leftToRefund(props.deposit);
  const [amount, setAmount] = useState(left > 0 ? (left / 100).toFixed(2) : '');
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = (event: Event) => {
    event.preventDefault();
    const body: { amount?: number; reason?: string } = {};
    if (amount.trim()) body.amount = Number(amount);
    if (reason) body.reason = reason;
    setBusy(true);
    request<Transaction>(`${props.path}/refund`, {
      method: 'POST',
      body,
      headers: { 'Idempotency-Key': idempotencyKey() },
    })
      .then((refund) => props.onOutcome({ refund }))
      .catch((e: unknown) => props.onOutcome({ error: e instanceof Error ? e.message : String(e) }))
      .finally(() => setBusy(false));
  };
  return (
    <form class="inline" onSubmit={submit}>
      <label>
        Refund amount
        <input
          type="number"
          name="amount"
          inputMode="decimal"
          min="0.01"
          step="0.01"
          placeholder="all that is left"
          value={amount}
          onInput={(e) => setAmount(e.currentTarget.value)}
        />
      </label>
      <label>
        Reason
        <select name="reason" value={reason} onChange={(e) => setReason(e.currentTarget.value)}>
          <option value="">Not given</option>
          {REFUND_REASONS.map((r) => (
            <option value={r}>{r}</option>
          ))}
        </select>
      </label>
      <button type="submit" disabled={busy}>
        Refund
      </button>
    </form>
  );
}

function Refund(props: { path: string; deposit: Transaction; onRefunded: () => void }) {
  const [outcome, setOutcome] = useState<RefundOutcome | null>(null);
  const t = props.deposit;
  return (
    <>
      <h2>Refund</h2>
      <p class="muted">
        Left to refund: <span data-refundable>{money(leftToRefund(t) / 100)}</span>. The wallet pays
        it back; the fees already paid stay paid.
      </p>
      <RefundForm
        key={String(t.amount_refunded ?? 0)}
        path={props.path}
        deposit={t}
        onOutcome={(next) => {
          setOutcome(next);
          if ('refund' in next) props.onRefunded();
        }}
      />
      {outcome && 'error' in outcome && <ErrorBox error={outcome.error} />}
      {outcome && 'refund' in outcome && (
        <p class="once" role="status" data-refund={outcome.refund.id}>
          Refund of {money(outcome.refund.amount)} <Status value={outcome.refund.status} />{' '}
          <Link to={`/transactions/${outcome.refund.id}`}>{outcome.refund.id}</Link>
          {outcome.refund.provider_reference && (
            <span class="muted"> · provider {outcome.refund.provider_reference}</span>
          )}
        </p>
      )}
    </>
  );
}

export function TransactionPage(props: { mode: Mode; id: string }) {
  const base = modePath(props.mode, `/v1/transactions/${encodeURIComponent(props.id)}`);
  const record = useLoad(() => request<Transaction>(base), [base]);
  const timeline = useLoad(() => request<Timeline>(`${base}/timeline`), [base]);
  const t = record.data;
  return (
    <section>
      <p>
        <Link to="/transactions">← Transactions</Link>
      </p>
      <h1>Transaction</h1>
      <ErrorBox error={record.error} />
      {t && (
        <dl class="record">
          <dt>Id</dt>
          <dd>
            <code>{t.id}</code>
          </dd>
          <dt>Type</dt>
          <dd>{t.transaction_type}</dd>
          <dt>Status</dt>
          <dd>
            <Status value={t.status} />
          </dd>
          <dt>Amount</dt>
          <dd>{money(t.amount)}</dd>
          {t.amount_refunded !== undefined && (
            <>
              <dt>Refunded</dt>
              <dd data-amount-refunded>{money(t.amount_refunded)}</dd>
            </>
          )}
          {t.source_transaction_id && (
            <>
              <dt>Source transaction</dt>
              <dd>
                <Link to={`/transactions/${t.source_transaction_id}`}>
                  <code>{t.source_transaction_id}</code>
                </Link>
              </dd>
            </>
          )}
          <dt>Application fee</dt>
          <dd>{money(t.application_fee)}</dd>
          <dt>Wallet</dt>
          <dd>
            <code>{t.wallet_id ?? '—'}</code>
          </dd>
          <dt>Recipient wallet</dt>
          <dd>
            <code>{t.recipient_wallet_id ?? '—'}</code>
          </dd>
          <dt>Description</dt>
          <dd>{t.description ?? '—'}</dd>
          <dt>Created</dt>
          <dd>{when(t.created_at)}</dd>
          <dt>Updated</dt>
          <dd>{when(t.updated_at)}</dd>
        </dl>
      )}
      {t?.transaction_type === 'card_deposit' && (
        <p>
          <Link to={`/disputes?transaction_id=${t.id}`}>Disputes of this deposit</Link>
        </p>
      )}
      {t?.transaction_type === 'card_deposit' && t.status === 'completed' && (
        <Refund path={base} deposit={t} onRefunded={record.reload} />
      )}
      <h2>Timeline</h2>
      <ErrorBox error={timeline.error} />
      {timeline.data && (
        <div class="timeline">
          <p class="muted">
            {timeline.data.workflow_type ?? 'No workflow'}
            {timeline.data.workflow_status && (
              <>
                {' '}
                · <Status value={timeline.data.workflow_status} />
              </>
            )}
          </p>
          {timeline.data.note && <p>{timeline.data.note}</p>}
          <ol class="steps">
            {timeline.data.steps.map((step) => (
              <li class={`step step-${step.status}`}>
                <strong>{step.name}</strong> <span class="muted">{step.kind}</span>{' '}
                <Status value={step.status} />
                {step.attempts > 1 && <span> · attempt {step.attempts}</span>}
                <div class="muted">
                  {when(step.started_at)}
                  {step.ended_at && ` → ${when(step.ended_at)}`}
                  {step.provider_reference && ` · provider ${step.provider_reference}`}
                </div>
                {step.failure && <div class="error">{step.failure}</div>}
              </li>
            ))}
          </ol>
        </div>
      )}
    </section>
  );
}
