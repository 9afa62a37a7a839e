import { useState } from 'preact/hooks';
import { TRANSACTION_STATUSES, TRANSACTION_TYPES } from '../../../src/domain/types';
import {
  api,
  download,
  can,
  errorMessage,
  idempotencyKey,
  pageOf,
  undeclared,
  REFUND_REASONS,
  type Mode,
  type Schemas,
  type Transaction,
} from '../api';
import { navigate, useSearch } from '../router';
import { ErrorBox, Link, MetadataList, money, Pager, Status, useLoad, when } from '../ui';

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

/**
 * The list's filters, under the API's own names: the address of the page holds them as the API
 * takes them, so a view can be shared or reloaded, and the API alone judges them (its 422 shown).
 */
type Filters = {
  status: string[];
  transaction_type: string[];
  wallet_id: string;
  created_gte: string;
  created_lt: string;
  amount_gte: string;
  amount_lte: string;
  provider_reference: string;
  metadata: [string, string][];
};

const METADATA_PARAM = /^metadata\[(.*)\]$/;

function commaList(value: string | null): string[] {
  return value ? value.split(',').filter(Boolean) : [];
}

function filtersOf(search: URLSearchParams): Filters {
  const metadata: [string, string][] = [];
  search.forEach((value, name) => {
    const key = METADATA_PARAM.exec(name)?.[1];
    if (key !== undefined) metadata.push([key, value]);
  });
  return {
    status: commaList(search.get('status')),
    transaction_type: commaList(search.get('transaction_type')),
    wallet_id: search.get('wallet_id') ?? '',
    created_gte: search.get('created[gte]') ?? '',
    created_lt: search.get('created[lt]') ?? '',
    amount_gte: search.get('amount[gte]') ?? '',
    amount_lte: search.get('amount[lte]') ?? '',
    provider_reference: search.get('provider_reference') ?? '',
    metadata,
  };
}

/** The filters as the API's query; empty ones left out. */
function filterQuery(f: Filters): URLSearchParams {
  const query = new URLSearchParams();
  const put = (name: string, value: string) => {
    if (value.trim()) query.set(name, value.trim());
  };
  put('status', f.status.join(','));
  put('transaction_type', f.transaction_type.join(','));
  put('wallet_id', f.wallet_id);
  put('created[gte]', f.created_gte);
  put('created[lt]', f.created_lt);
  put('amount[gte]', f.amount_gte);
  put('amount[lte]', f.amount_lte);
  put('provider_reference', f.provider_reference);
  for (const [key, value] of f.metadata) {
    if (key.trim()) query.append(`metadata[${key.trim()}]`, value);
  }
  return query;
}

function selected(select: HTMLSelectElement): string[] {
  return Array.from(select.selectedOptions, (option) => option.value);
}

function FilterForm(props: { initial: Filters; onApply: (filters: Filters) => void }) {
  const [f, setF] = useState<Filters>({
    ...props.initial,
    metadata: props.initial.metadata.length ? props.initial.metadata : [['', '']],
  });
  const set = (change: Partial<Filters>) => setF((old) => ({ ...old, ...change }));
  const setPair = (index: number, pair: [string, string]) =>
    set({ metadata: f.metadata.map((old, i) => (i === index ? pair : old)) });
  const text = (label: string, name: keyof Filters, extra: Record<string, string> = {}) => (
    <label>
      {label}
      <input
        name={name}
        value={f[name] as string}
        {...extra}
        onInput={(e) => set({ [name]: e.currentTarget.value })}
      />
    </label>
  );
  return (
    <form
      class="inline filters"
      aria-label="Filters"
      onSubmit={(e) => {
        e.preventDefault();
        props.onApply(f);
      }}
    >
      <p id="several-hint" class="muted hint">
        Status and type take several values: Ctrl-click (⌘-click on a Mac).
      </p>
      <label>
        Status
        <select
          name="status"
          multiple
          size={4}
          aria-describedby="several-hint"
          onChange={(e) => set({ status: selected(e.currentTarget) })}
        >
          {TRANSACTION_STATUSES.map((s) => (
            <option value={s} selected={f.status.includes(s)}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <label>
        Type
        <select
          name="transaction_type"
          multiple
          size={4}
          aria-describedby="several-hint"
          onChange={(e) => set({ transaction_type: selected(e.currentTarget) })}
        >
          {TRANSACTION_TYPES.map((t) => (
            <option value={t} selected={f.transaction_type.includes(t)}>
              {t}
            </option>
          ))}
        </select>
      </label>
      <div class="filter-group">
        <label>
          Created from (UTC)
          <input
            type="date"
            name="created[gte]"
            value={f.created_gte}
            onInput={(e) => set({ created_gte: e.currentTarget.value })}
          />
        </label>
        <label>
          Created before (UTC)
          <input
            type="date"
            name="created[lt]"
            value={f.created_lt}
            onInput={(e) => set({ created_lt: e.currentTarget.value })}
          />
        </label>
      </div>
      <div class="filter-group">
        {text('Amount at least', 'amount_gte', { inputMode: 'decimal', placeholder: '0.00' })}
        {text('Amount at most', 'amount_lte', { inputMode: 'decimal', placeholder: '0.00' })}
      </div>
      {text('Wallet id', 'wallet_id', { placeholder: 'sender or recipient' })}
      {text('Provider reference', 'provider_reference')}
      <fieldset class="metadata-filters">
        <legend>Metadata (exact)</legend>
        {f.metadata.map(([key, value], i) => (
          <div class="filter-group">
            <label>
              Key
              <input
                aria-label={`Metadata key ${i + 1}`}
                value={key}
                onInput={(e) => setPair(i, [e.currentTarget.value, value])}
              />
            </label>
            <label>
              Value
              <input
                aria-label={`Metadata value ${i + 1}`}
                value={value}
                onInput={(e) => setPair(i, [key, e.currentTarget.value])}
              />
            </label>
            <button
              type="button"
              aria-label={`Remove metadata pair ${i + 1}`}
              onClick={() => set({ metadata: f.metadata.filter((_, j) => j !== i) })}
            >
              Remove
            </button>
          </div>
        ))}
        <button type="button" onClick={() => set({ metadata: [...f.metadata, ['', '']] })}>
          Add a metadata pair
        </button>
      </fieldset>
      <button type="submit">Filter</button>
    </form>
  );
}

export function Transactions(props: { mode: Mode }) {
  const search = useSearch();
  const filters = filtersOf(search);
  const shown = filterQuery(filters);
  const page = Math.max(1, Number.parseInt(search.get('page') ?? '1', 10) || 1);
  const query = new URLSearchParams(shown);
  query.set('page', String(page));
  query.set('per_page', '20');
  const list = useLoad(
    // The filters as the address holds them, unparsed: the API alone judges them.
    () =>
      pageOf(
        api(props.mode).get('/api/v1/transactions/', { querySerializer: () => query.toString() }),
      ),
    [props.mode, query.toString()],
  );
  const [exporting, setExporting] = useState(false);
  const [exportError, setExportError] = useState<string | null>(null);
  const open = (next: URLSearchParams, nextPage: number) => {
    if (nextPage > 1) next.set('page', String(nextPage));
    const text = next.toString();
    navigate(text ? `/transactions?${text}` : '/transactions');
  };
  const exportCsv = () => {
    setExporting(true);
    setExportError(null);
    download(
      api(props.mode).raw.GET('/api/v1/transactions/export', {
        querySerializer: () => shown.toString(),
        parseAs: 'blob',
      }),
      'transactions.csv',
    )
      .catch((e: unknown) => setExportError(errorMessage(e)))
      .finally(() => setExporting(false));
  };
  return (
    <section>
      <h1>Transactions</h1>
      <FilterForm
        key={shown.toString()}
        initial={filters}
        onApply={(next) => open(filterQuery(next), 1)}
      />
      <div class="actions">
        <button type="button" onClick={exportCsv} disabled={exporting}>
          {exporting ? 'Exporting…' : 'Export CSV'}
        </button>
        {shown.toString() && <Link to="/transactions">Clear the filters</Link>}
      </div>
      <ErrorBox error={exportError} />
      <ErrorBox error={list.error} />
      {list.data && !list.error && (
        <>
          <p class="muted" role="status">
            {list.data.total} transactions
          </p>
          <TransactionTable rows={list.data.data} />
          <Pager
            page={page}
            totalPages={list.data.total_pages}
            onPage={(next) => open(new URLSearchParams(shown), next)}
          />
        </>
      )}
    </section>
  );
}

/** In cents, so that a partly refunded deposit's remainder has no float error. */
function leftToRefund(t: Transaction): number {
  return Math.max(0, Math.round(t.amount * 100) - Math.round((t.amount_refunded ?? 0) * 100));
}

type Reason = (typeof REFUND_REASONS)[number];
type RefundOutcome = { refund: Schemas['Refund'] } | { error: string };

/**
 * Refunds a completed card deposit, by default all that is left. Each submission carries a
 * fresh Idempotency-Key; the button stays disabled while one is under way.
 */
function RefundForm(props: {
  mode: Mode;
  deposit: Transaction;
  onOutcome: (outcome: RefundOutcome) => void;
}) {
  const left = leftToRefund(props.deposit);
  const [amount, setAmount] = useState(left > 0 ? (left / 100).toFixed(2) : '');
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = (event: Event) => {
    event.preventDefault();
    const body: { amount?: number; reason?: Reason } = {};
    if (amount.trim()) body.amount = Number(amount);
    if (reason) body.reason = reason as Reason;
    setBusy(true);
    api(props.mode)
      .post('/api/v1/transactions/{transaction_id}/refund', {
        params: {
          path: { transaction_id: props.deposit.id },
          header: { 'Idempotency-Key': idempotencyKey() },
        },
        body,
      })
      .then((refund) => props.onOutcome({ refund }))
      .catch((e: unknown) => props.onOutcome({ error: errorMessage(e) }))
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

function Refund(props: { mode: Mode; deposit: Transaction; onRefunded: () => void }) {
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
        mode={props.mode}
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
  const client = api(props.mode);
  const path = { transaction_id: props.id };
  const record = useLoad(
    () => client.get('/api/v1/transactions/{transaction_id}', { params: { path } }),
    [props.mode, props.id],
  );
  const timeline = useLoad(
    () => client.get('/api/v1/transactions/{transaction_id}/timeline', { params: { path } }),
    [props.mode, props.id],
  );
  const t = record.data;
  const reference = t && undeclared(t, 'provider_reference');
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
          <dt>Provider reference</dt>
          <dd>{reference ? <code>{reference}</code> : '—'}</dd>
          <dt>Metadata</dt>
          <dd>
            <MetadataList metadata={t?.metadata} filterBy />
          </dd>
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
      {t?.transaction_type === 'card_deposit' && t.status === 'completed' && can('refunds') && (
        <Refund mode={props.mode} deposit={t} onRefunded={record.reload} />
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
