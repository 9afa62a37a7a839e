import { useState } from 'preact/hooks';
import {
  DISPUTE_STATUSES,
  api,
  can,
  errorMessage,
  type DisputeStatus,
  type Mode,
  type Schemas,
} from '../api';

type Dispute = Schemas['Dispute'];
import { ErrorBox, Link, money, Pager, Status, useLoad, when } from '../ui';

const CLOSED: readonly DisputeStatus[] = ['won', 'lost'];
const EVIDENCE_MAX = 20_000;

/** The list opens filtered by `?transaction_id=`, as a card deposit's page links to it. */
function linkedTransaction(): string {
  return new URLSearchParams(location.search).get('transaction_id') ?? '';
}

export function Disputes(props: { mode: Mode }) {
  const [status, setStatus] = useState('');
  const [transaction, setTransaction] = useState(linkedTransaction());
  const [applied, setApplied] = useState({ status: '', transaction: linkedTransaction() });
  const [page, setPage] = useState(1);
  const query = {
    page,
    per_page: 20,
    ...(applied.status ? { status: applied.status as DisputeStatus } : {}),
    ...(applied.transaction ? { transaction_id: applied.transaction } : {}),
  };
  const list = useLoad(
    () => api(props.mode).get('/api/v1/disputes', { params: { query } }),
    [props.mode, JSON.stringify(query)],
  );
  return (
    <section>
      <h1>Disputes</h1>
      <form
        class="inline filters"
        onSubmit={(e) => {
          e.preventDefault();
          setPage(1);
          setApplied({ status, transaction: transaction.trim() });
        }}
      >
        <label>
          Status
          <select name="status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">Any</option>
            {DISPUTE_STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Transaction id
          <input
            name="transaction_id"
            value={transaction}
            placeholder="the card deposit"
            onInput={(e) => setTransaction(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Filter</button>
      </form>
      <ErrorBox error={list.error} />
      {list.data && (
        <>
          <p class="muted">{list.data.total} disputes</p>
          <div class="scroll">
            <table>
              <thead>
                <tr>
                  <th>Opened</th>
                  <th>Status</th>
                  <th class="num">Amount</th>
                  <th>Reason</th>
                  <th>Evidence due by</th>
                  <th>Card deposit</th>
                </tr>
              </thead>
              <tbody>
                {list.data.data.map((d) => (
                  <tr data-dispute={d.id}>
                    <td>
                      <Link to={`/disputes/${d.id}`}>{when(d.created_at)}</Link>
                    </td>
                    <td>
                      <Status value={d.status} />
                    </td>
                    <td class="num">{money(d.amount)}</td>
                    <td>{d.reason}</td>
                    <td>{when(d.evidence_due_by)}</td>
                    <td>
                      <Link to={`/transactions/${d.transaction_id}`}>
                        <code>{d.transaction_id.slice(0, 8)}</code>
                      </Link>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {list.data.data.length === 0 && <p class="muted">No disputes.</p>}
          </div>
          <Pager page={page} totalPages={list.data.total_pages} onPage={setPage} />
        </>
      )}
    </section>
  );
}

/** The evidence for the provider; a closed dispute takes none (the API answers 400). */
function EvidenceForm(props: { mode: Mode; dispute: Dispute; onSubmitted: () => void }) {
  const closed = CLOSED.includes(props.dispute.status);
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [sent, setSent] = useState<Dispute | null>(null);
  const submit = (event: Event) => {
    event.preventDefault();
    setBusy(true);
    api(props.mode)
      .post('/api/v1/disputes/{dispute_id}/evidence', {
        params: { path: { dispute_id: props.dispute.id } },
        body: { text },
      })
      .then((answer) => {
        setSent(answer);
        setError(null);
        setText('');
        props.onSubmitted();
      })
      .catch((e: unknown) => setError(errorMessage(e)))
      .finally(() => setBusy(false));
  };
  return (
    <form class="stack" onSubmit={submit}>
      {closed && (
        <p class="muted">This dispute is closed ({props.dispute.status}): it takes no evidence.</p>
      )}
      <label>
        Evidence
        <textarea
          name="text"
          rows={8}
          required
          minLength={1}
          maxLength={EVIDENCE_MAX}
          disabled={closed}
          placeholder="Receipts, delivery confirmation, correspondence with the payer"
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
        />
      </label>
      <p class="muted">
        {text.length} of {EVIDENCE_MAX.toLocaleString('en-US')} characters
      </p>
      <div class="actions">
        <button type="submit" disabled={closed || busy || text.length === 0}>
          Submit evidence
        </button>
      </div>
      <ErrorBox error={error} />
      {sent && (
        <p class="once" role="status">
          Evidence submitted: the dispute is <Status value={sent.status} />
        </p>
      )}
    </form>
  );
}

export function DisputePage(props: { mode: Mode; id: string }) {
  const record = useLoad(
    () =>
      api(props.mode).get('/api/v1/disputes/{dispute_id}', {
        params: { path: { dispute_id: props.id } },
      }),
    [props.mode, props.id],
  );
  const d = record.data;
  const overdue = d && d.status === 'needs_response' && Date.parse(d.evidence_due_by) < Date.now();
  return (
    <section>
      <p>
        <Link to="/disputes">← Disputes</Link>
      </p>
      <h1>Dispute</h1>
      <ErrorBox error={record.error} />
      {d && (
        <>
          <dl class="record">
            <dt>Id</dt>
            <dd>
              <code>{d.id}</code>
            </dd>
            <dt>Status</dt>
            <dd data-dispute-status>
              <Status value={d.status} />
            </dd>
            <dt>Reason</dt>
            <dd>{d.reason}</dd>
            <dt>Amount</dt>
            <dd>{money(d.amount)}</dd>
            <dt>Reserved from the wallet</dt>
            <dd>{money(d.reserved_amount)}</dd>
            <dt>Uncovered</dt>
            <dd>{money(d.uncovered_amount)}</dd>
            <dt>Evidence due by</dt>
            <dd>
              {when(d.evidence_due_by)}
              {overdue && <span class="error"> overdue</span>}
            </dd>
            <dt>Card deposit</dt>
            <dd>
              <Link to={`/transactions/${d.transaction_id}`}>
                <code>{d.transaction_id}</code>
              </Link>
            </dd>
            <dt>Wallet</dt>
            <dd>
              <code>{d.wallet_id}</code>
            </dd>
            <dt>Opened</dt>
            <dd>{when(d.created_at)}</dd>
            <dt>Updated</dt>
            <dd>{when(d.updated_at)}</dd>
          </dl>
          {can('dispute_evidence') && (
            <>
              <h2>Evidence</h2>
              <EvidenceForm mode={props.mode} dispute={d} onSubmitted={record.reload} />
            </>
          )}
        </>
      )}
    </section>
  );
}
