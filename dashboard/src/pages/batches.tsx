import { useEffect, useState } from 'preact/hooks';
import { BATCH_ITEM_STATUSES, BATCH_STATUSES } from '../../../src/domain/batches';
import { api, can, errorMessage, type Mode, type Schemas } from '../api';
import {
  FILE_COLUMNS,
  batchRequest,
  namedItems,
  parseBatchFile,
  type ParsedFile,
} from '../batch-file';
import { navigate } from '../router';
import { ErrorBox, Link, Pager, Status, useLoad, when } from '../ui';

type Batch = Schemas['Batch'];
type BatchStatus = Batch['status'];
type ItemStatus = Schemas['BatchItem']['status'];

/** How often a processing batch is read again, so its progress moves on screen. */
const PROCESSING_POLL_MS = 1000;
const ITEMS_PER_PAGE = 20;

const KIND_LABELS: Record<Batch['kind'], string> = {
  transfer: 'Transfers',
  mobile_money_cashout: 'Mobile-money cashouts',
  card_payout: 'Card payouts',
};

const ended = (b: Batch) => b.succeeded + b.failed + b.canceled;

export function Batches(props: { mode: Mode }) {
  const [status, setStatus] = useState('');
  const [page, setPage] = useState(1);
  const query = { page, per_page: 20, ...(status ? { status: status as BatchStatus } : {}) };
  const list = useLoad(
    () => api(props.mode).get('/api/v1/batches', { params: { query } }),
    [props.mode, JSON.stringify(query)],
  );
  return (
    <section>
      <h1>Batches</h1>
      {can('batches') && <UploadForm mode={props.mode} />}
      <h2>Bulk payments</h2>
      <form class="inline filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select
            name="status"
            value={status}
            onChange={(e) => {
              setPage(1);
              setStatus(e.currentTarget.value);
            }}
          >
            <option value="">Any</option>
            {BATCH_STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
      </form>
      <ErrorBox error={list.error} />
      {list.data && (
        <>
          <p class="muted">{list.data.total} batches</p>
          <div class="scroll">
            <table>
              <thead>
                <tr>
                  <th>Created</th>
                  <th>Status</th>
                  <th>Kind</th>
                  <th class="num">Items</th>
                  <th class="num">Succeeded</th>
                  <th class="num">Failed</th>
                  <th class="num">Canceled</th>
                </tr>
              </thead>
              <tbody>
                {list.data.data.map((b) => (
                  <tr data-batch={b.id}>
                    <td>
                      <Link to={`/batches/${b.id}`}>{when(b.created_at)}</Link>
                    </td>
                    <td>
                      <Status value={b.status} />
                    </td>
                    <td>
                      {KIND_LABELS[b.kind]}
                      {b.atomic && ' (atomic)'}
                    </td>
                    <td class="num">{b.total}</td>
                    <td class="num">{b.succeeded}</td>
                    <td class="num">{b.failed}</td>
                    <td class="num">{b.canceled}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {list.data.data.length === 0 && <p class="muted">No batches.</p>}
          </div>
          <Pager page={page} totalPages={list.data.total_pages} onPage={setPage} />
        </>
      )}
    </section>
  );
}

/**
 * A CSV file of items from one wallet, checked row by row here first: nothing is sent while a row
 * is wrong. The API judges the rest; a 422 naming `items[INDEX]` marks that row.
 */
function UploadForm(props: { mode: Mode }) {
  const [walletId, setWalletId] = useState('');
  const [atomic, setAtomic] = useState(false);
  const [parsed, setParsed] = useState<ParsedFile | null>(null);
  const [named, setNamed] = useState<Set<number>>(new Set());
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const wallets = useLoad(
    () => api(props.mode).get('/api/v1/wallets/', { params: { query: { per_page: 100 } } }),
    [props.mode],
  );
  const read = (file: File | undefined) => {
    setParsed(null);
    setNamed(new Set());
    setError(null);
    if (!file) return;
    file
      .text()
      .then(parseBatchFile)
      .then(setParsed)
      .catch((e: unknown) => setError(errorMessage(e)));
  };
  const ready = parsed !== null && 'kind' in parsed && parsed.bad === 0;
  const submit = (event: Event) => {
    event.preventDefault();
    if (!parsed || !('kind' in parsed) || parsed.bad > 0) return;
    setBusy(true);
    api(props.mode)
      .post('/api/v1/batches', {
        body: batchRequest(parsed.kind, walletId.trim(), parsed.rows, atomic),
      })
      .then((batch) => navigate(`/batches/${batch.id}`))
      .catch((e: unknown) => {
        const detail = errorMessage(e);
        setError(detail);
        setNamed(namedItems(detail));
      })
      .finally(() => setBusy(false));
  };
  return (
    <section>
      <h2>New batch from a file</h2>
      <p class="muted">
        A CSV with a header naming <code>to_wallet_id</code> (transfers, <code>amount</code> in
        major units) or <code>phone_number</code> (mobile-money cashouts, <code>amount</code> in SLE
        cents), and optionally <code>reference</code> and <code>description</code>.
      </p>
      <form class="inline" onSubmit={submit}>
        <label>
          Source wallet
          <input
            name="wallet_id"
            list="batch-wallets"
            required
            value={walletId}
            placeholder="the wallet paying every item"
            onInput={(e) => setWalletId(e.currentTarget.value)}
          />
          <datalist id="batch-wallets">
            {(wallets.data ?? []).map((w) => (
              <option value={w.id}>{`${w.balance.toFixed(2)} ${w.currency}`}</option>
            ))}
          </datalist>
        </label>
        <label>
          Batch file
          <input
            type="file"
            name="file"
            accept=".csv,text/csv"
            required
            onChange={(e) => read(e.currentTarget.files?.[0])}
          />
        </label>
        <label class="check">
          <input
            type="checkbox"
            name="atomic"
            checked={atomic}
            onChange={(e) => setAtomic(e.currentTarget.checked)}
          />
          All or nothing (transfers)
        </label>
        <button type="submit" disabled={busy || !ready || walletId.trim() === ''}>
          {busy ? 'Sending…' : 'Send batch'}
        </button>
      </form>
      <ErrorBox error={error} />
      {parsed && <FileRows parsed={parsed} named={named} />}
    </section>
  );
}

function FileRows(props: { parsed: ParsedFile; named: Set<number> }) {
  const { parsed, named } = props;
  const columns = FILE_COLUMNS.filter((c) => parsed.rows.some((row) => c in row.cells));
  return (
    <>
      {'refused' in parsed && <ErrorBox error={parsed.refused} />}
      {'kind' in parsed && (
        <p class="muted" data-file-summary>
          {parsed.rows.length} {KIND_LABELS[parsed.kind].toLowerCase()}
          {parsed.bad > 0 ? `, ${parsed.bad} with errors: nothing is sent` : ', ready to send'}
        </p>
      )}
      <div class="scroll">
        <table data-file-rows>
          <thead>
            <tr>
              <th class="num">Line</th>
              {columns.map((c) => (
                <th>{c}</th>
              ))}
              <th>Problems</th>
            </tr>
          </thead>
          <tbody>
            {parsed.rows.map((row, index) => {
              const bad = row.errors.length > 0 || named.has(index);
              return (
                <tr data-line={row.line} class={bad ? 'differs' : ''}>
                  <td class="num">{row.line}</td>
                  {columns.map((c) => (
                    <td>{row.cells[c]}</td>
                  ))}
                  <td class="error" data-row-errors>
                    {row.errors.join('; ')}
                    {named.has(index) && row.errors.length === 0 && `see items[${index}] above`}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** The item pages walked forward by `starting_after`; the stack goes back. */
function useCursor() {
  const [cursors, setCursors] = useState<(number | undefined)[]>([undefined]);
  return {
    after: cursors.at(-1),
    page: cursors.length,
    next: (last: number) => setCursors([...cursors, last]),
    back: () => setCursors(cursors.slice(0, -1)),
    reset: () => setCursors([undefined]),
  };
}

function BatchItems(props: { mode: Mode; batch: Batch }) {
  const [status, setStatus] = useState('');
  const cursor = useCursor();
  const query = {
    per_page: ITEMS_PER_PAGE,
    ...(status ? { status: status as ItemStatus } : {}),
    ...(cursor.after === undefined ? {} : { starting_after: cursor.after }),
  };
  const items = useLoad(
    () =>
      api(props.mode).get('/api/v1/batches/{batch_id}/items', {
        params: { path: { batch_id: props.batch.id }, query },
      }),
    // Read again as the batch's counts move.
    [props.mode, props.batch.id, JSON.stringify(query), ended(props.batch)],
  );
  const rows = items.data?.data ?? [];
  return (
    <>
      <h2>Items</h2>
      <form class="inline filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Item status
          <select
            name="item_status"
            value={status}
            onChange={(e) => {
              cursor.reset();
              setStatus(e.currentTarget.value);
            }}
          >
            <option value="">Any</option>
            {BATCH_ITEM_STATUSES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
      </form>
      <ErrorBox error={items.error} />
      <div class="scroll">
        <table data-items>
          <thead>
            <tr>
              <th class="num">#</th>
              <th>Reference</th>
              <th>Status</th>
              <th>Payment</th>
              <th>Error</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((item) => (
              <tr data-item={item.index}>
                <td class="num">{item.index}</td>
                <td>{item.reference ?? '—'}</td>
                <td>
                  <Status value={item.status} />
                </td>
                <td>
                  {item.transaction_id ? (
                    <Link to={`/transactions/${item.transaction_id}`}>
                      <code>{item.transaction_id.slice(0, 8)}</code>
                    </Link>
                  ) : (
                    '—'
                  )}
                </td>
                <td>{item.error ? `${item.error.status}: ${item.error.detail}` : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {items.data && rows.length === 0 && <p class="muted">No items.</p>}
      </div>
      <nav class="pager" aria-label="Item pages">
        <button disabled={cursor.page <= 1} onClick={cursor.back}>
          Previous
        </button>
        <span>Page {cursor.page}</span>
        <button
          disabled={!items.data?.has_more || rows.length === 0}
          onClick={() => cursor.next(rows.at(-1)!.index)}
        >
          Next
        </button>
      </nav>
    </>
  );
}

export function BatchPage(props: { mode: Mode; id: string }) {
  const record = useLoad(
    () =>
      api(props.mode).get('/api/v1/batches/{batch_id}', {
        params: { path: { batch_id: props.id } },
      }),
    [props.mode, props.id],
  );
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const b = record.data;
  const processing = b?.status === 'processing';
  useEffect(() => {
    if (!processing) return undefined;
    const timer = setInterval(record.reload, PROCESSING_POLL_MS);
    return () => clearInterval(timer);
  }, [processing, record.reload]);
  const cancel = () => {
    setBusy(true);
    api(props.mode)
      .post('/api/v1/batches/{batch_id}/cancel', { params: { path: { batch_id: props.id } } })
      .then(() => {
        setError(null);
        record.reload();
      })
      .catch((e: unknown) => setError(errorMessage(e)))
      .finally(() => setBusy(false));
  };
  return (
    <section>
      <p>
        <Link to="/batches">← Batches</Link>
      </p>
      <h1>Batch</h1>
      <ErrorBox error={record.error} />
      {b && (
        <>
          <dl class="record">
            <dt>Id</dt>
            <dd>
              <code>{b.id}</code>
            </dd>
            <dt>Status</dt>
            <dd data-batch-status>
              <Status value={b.status} />
            </dd>
            <dt>Kind</dt>
            <dd>
              {KIND_LABELS[b.kind]}
              {b.atomic && ' (atomic: all or nothing)'}
            </dd>
            <dt>Progress</dt>
            <dd>
              <progress
                value={ended(b)}
                max={b.total}
                aria-label="Items ended"
                data-progress={`${ended(b)}/${b.total}`}
              />{' '}
              <span data-counts>
                {ended(b)} of {b.total} ended: {b.succeeded} succeeded, {b.failed} failed,{' '}
                {b.canceled} canceled
              </span>
            </dd>
            <dt>Created</dt>
            <dd>{when(b.created_at)}</dd>
            <dt>Completed</dt>
            <dd>{when(b.completed_at)}</dd>
          </dl>
          {processing && can('batches') && (
            <div class="actions">
              <button type="button" class="danger" disabled={busy} onClick={cancel}>
                Cancel the items not started
              </button>
            </div>
          )}
          <ErrorBox error={error} />
          <BatchItems mode={props.mode} batch={b} />
        </>
      )}
    </section>
  );
}
