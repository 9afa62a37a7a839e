import { useState } from 'preact/hooks';
import { TRANSACTION_STATUSES, TRANSACTION_TYPES } from '../../../domain/types';
import { modePath, request, type Mode, type Page, type Transaction } from '../api';
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
              <td>{t.transaction_type}</td>
              <td>
                <Status value={t.status} />
              </td>
              <td class="num">{money(t.amount)}</td>
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
