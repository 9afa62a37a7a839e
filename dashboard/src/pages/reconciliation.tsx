import { useEffect, useState } from 'preact/hooks';
import {
  RECON_EXCEPTION_STATUSES,
  RECON_KINDS,
  RECON_PROVIDERS,
  api,
  can,
  errorMessage,
  uploadSettlementFile,
  type Mode,
  type ReconException,
  type ReconKind,
  type ReconProvider,
  type ReconRun,
  type UploadOutcome,
} from '../api';
import { navigate, useSearch } from '../router';
import { ErrorBox, Link, money, Pager, Status, useLoad, when } from '../ui';

const NOTE_MAX = 1000;
const CSV_HEADER = 'provider_reference,booked_at,amount,currency,fee,direction,status';
/** How often the runs list is read again while a run shown in it is still running. */
const RUNNING_POLL_MS = 2000;

const KIND_LABELS: Record<ReconKind, string> = {
  missing_internal: 'Missing here',
  missing_external: 'Missing at the provider',
  amount_mismatch: 'Amount differs',
  status_mismatch: 'Status differs',
  duplicate: 'Duplicate',
};

/** A `datetime-local` value (UTC, to the second) for an instant. */
function localValue(at: Date): string {
  return at.toISOString().slice(0, 19);
}

/** A `datetime-local` value read as UTC, as the API takes it (RFC 3339). */
function instantOf(value: string): string {
  const withSeconds = /T\d\d:\d\d$/.test(value) ? `${value}:00` : value;
  return `${withSeconds}Z`;
}

function SubNav(props: { current: 'runs' | 'exceptions' }) {
  return (
    <nav class="actions subnav" aria-label="Reconciliation">
      <Link to="/reconciliation" class={props.current === 'runs' ? 'current' : ''}>
        Runs and settlement files
      </Link>
      <Link
        to="/reconciliation/exceptions?status=open"
        class={props.current === 'exceptions' ? 'current' : ''}
      >
        Exceptions
      </Link>
    </nav>
  );
}

function ProviderSelect(props: { value: ReconProvider; onChange: (p: ReconProvider) => void }) {
  return (
    <label>
      Provider
      <select
        name="provider"
        value={props.value}
        onChange={(e) => props.onChange(e.currentTarget.value as ReconProvider)}
      >
        {RECON_PROVIDERS.map((p) => (
          <option value={p}>{p}</option>
        ))}
      </select>
    </label>
  );
}

/** The settlement file: its import, or each bad row the API named (the file is refused whole). */
function UploadForm(props: {
  mode: Mode;
  onUseImport: (provider: ReconProvider, importId: string) => void;
}) {
  const [provider, setProvider] = useState<ReconProvider>('card');
  const [file, setFile] = useState<File | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [outcome, setOutcome] = useState<UploadOutcome | null>(null);
  const submit = (event: Event) => {
    event.preventDefault();
    if (!file) return;
    setBusy(true);
    setOutcome(null);
    uploadSettlementFile(props.mode, provider, file)
      .then((answer) => {
        setOutcome(answer);
        setError(null);
      })
      .catch((e: unknown) => setError(errorMessage(e)))
      .finally(() => setBusy(false));
  };
  return (
    <section>
      <h2>Upload a settlement file</h2>
      <p class="muted">
        A CSV with the header <code class="wrap">{CSV_HEADER}</code>; a file with any bad row is
        refused whole.
      </p>
      <form class="inline" onSubmit={submit}>
        <ProviderSelect value={provider} onChange={setProvider} />
        <label>
          Settlement file
          <input
            type="file"
            name="file"
            accept=".csv,text/csv"
            required
            onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)}
          />
        </label>
        <button type="submit" disabled={busy || !file}>
          {busy ? 'Uploading…' : 'Upload'}
        </button>
      </form>
      <ErrorBox error={error} />
      {outcome && 'imported' in outcome && (
        <div class="once" role="status" data-import={outcome.imported.id}>
          <p>
            {outcome.again ? 'This file was imported before: ' : 'Imported: '}
            {outcome.imported.rows} rows, import <code>{outcome.imported.id}</code> (
            {outcome.imported.provider}).
          </p>
          <button
            type="button"
            onClick={() => props.onUseImport(outcome.imported.provider, outcome.imported.id!)}
          >
            Start a run over this import
          </button>
        </div>
      )}
      {outcome && 'refused' in outcome && (
        <>
          <ErrorBox error={outcome.refused} />
          <div class="scroll">
            <table data-upload-errors>
              <caption>
                {outcome.rowsBad} of {outcome.rows} rows are bad
                {outcome.errors.length < outcome.rowsBad &&
                  ` (the first ${outcome.errors.length} problems)`}
              </caption>
              <thead>
                <tr>
                  <th scope="col" class="num">
                    Row
                  </th>
                  <th scope="col">Field</th>
                  <th scope="col">Problem</th>
                </tr>
              </thead>
              <tbody>
                {outcome.errors.map((e) => (
                  <tr data-upload-error={e.row}>
                    <td class="num">{e.row}</td>
                    <td>
                      <code>{e.field}</code>
                    </td>
                    <td>{e.message}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}

type RunPreset = { provider: ReconProvider; importId: string };

/** A run over `[from, to)` (UTC): the provider's books, or an imported file of that provider. */
function RunForm(props: {
  mode: Mode;
  preset: RunPreset | null;
  onStarted: (run: ReconRun) => void;
}) {
  const [provider, setProvider] = useState<ReconProvider>(props.preset?.provider ?? 'card');
  const [to, setTo] = useState(() => localValue(new Date()));
  const [from, setFrom] = useState(() => localValue(new Date(Date.now() - 86_400_000)));
  const [importId, setImportId] = useState(props.preset?.importId ?? '');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = (event: Event) => {
    event.preventDefault();
    setBusy(true);
    const trimmed = importId.trim();
    api(props.mode)
      .post('/api/v1/reconciliation/runs', {
        body: {
          provider,
          from: instantOf(from),
          to: instantOf(to),
          ...(trimmed ? { import_id: trimmed } : {}),
        },
      })
      .then((run) => {
        setError(null);
        props.onStarted(run);
      })
      .catch((e: unknown) => setError(errorMessage(e)))
      .finally(() => setBusy(false));
  };
  return (
    <section>
      <h2 id="start-run">Start a run</h2>
      <form class="inline" aria-labelledby="start-run" onSubmit={submit}>
        <ProviderSelect value={provider} onChange={setProvider} />
        <label>
          From (UTC)
          <input
            type="datetime-local"
            name="from"
            step={1}
            required
            value={from}
            onInput={(e) => setFrom(e.currentTarget.value)}
          />
        </label>
        <label>
          To (UTC, not included)
          <input
            type="datetime-local"
            name="to"
            step={1}
            required
            value={to}
            onInput={(e) => setTo(e.currentTarget.value)}
          />
        </label>
        <label>
          Import id (optional)
          <input
            name="import_id"
            value={importId}
            placeholder="the provider’s books"
            onInput={(e) => setImportId(e.currentTarget.value)}
          />
        </label>
        <button type="submit" disabled={busy}>
          Start the run
        </button>
      </form>
      <ErrorBox error={error} />
    </section>
  );
}

function RunsTable(props: { runs: ReconRun[] }) {
  return (
    <div class="scroll">
      <table>
        <thead>
          <tr>
            <th scope="col">Started</th>
            <th scope="col">Provider</th>
            <th scope="col">Window (UTC)</th>
            <th scope="col">Read from</th>
            <th scope="col">Status</th>
            <th scope="col" class="num">
              Matched
            </th>
            {RECON_KINDS.map((kind) => (
              <th scope="col" class="num">
                {KIND_LABELS[kind]}
              </th>
            ))}
            <th scope="col">Exceptions</th>
          </tr>
        </thead>
        <tbody>
          {props.runs.map((run) => (
            <tr data-run={run.id}>
              <td>{when(run.created_at)}</td>
              <td>{run.provider}</td>
              <td>
                {when(run.from)} to {when(run.to)}
              </td>
              <td>
                {run.import_id ? (
                  <>
                    import <code>{run.import_id.slice(0, 8)}</code>
                  </>
                ) : (
                  'the provider’s books'
                )}
              </td>
              <td data-run-status>
                <Status value={run.status} />
              </td>
              <td class="num" data-count="matched">
                {run.counts.matched}
              </td>
              {RECON_KINDS.map((kind) => (
                <td class="num" data-count={kind}>
                  {run.counts[kind]}
                </td>
              ))}
              <td>
                <Link to={`/reconciliation/exceptions?run_id=${run.id}`}>
                  Exceptions of this run
                </Link>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.runs.length === 0 && <p class="muted">No runs.</p>}
    </div>
  );
}

export function Reconciliation(props: { mode: Mode }) {
  const [page, setPage] = useState(1);
  const [preset, setPreset] = useState<RunPreset | null>(null);
  const [started, setStarted] = useState<ReconRun | null>(null);
  const runs = useLoad(
    () =>
      api(props.mode).get('/api/v1/reconciliation/runs', {
        params: { query: { page, per_page: 20 } },
      }),
    [props.mode, page],
  );
  const running = runs.data?.data.some((run) => run.status === 'running') ?? false;
  useEffect(() => {
    if (!running) return;
    const timer = setTimeout(runs.reload, RUNNING_POLL_MS);
    return () => clearTimeout(timer);
  }, [running, runs.data]);
  return (
    <section>
      <h1>Reconciliation</h1>
      <SubNav current="runs" />
      {can('reconciliation_runs') && (
        <>
          <UploadForm
            mode={props.mode}
            onUseImport={(provider, importId) => {
              setPreset({ provider, importId });
              document.getElementById('start-run')?.scrollIntoView();
            }}
          />
          <RunForm
            key={preset ? preset.importId : 'none'}
            mode={props.mode}
            preset={preset}
            onStarted={(run) => {
              setStarted(run);
              setPage(1);
              runs.reload();
            }}
          />
        </>
      )}
      {started && (
        <p class="once" role="status" data-started-run={started.id}>
          Run <code>{started.id}</code> started.
        </p>
      )}
      <h2>Runs</h2>
      <ErrorBox error={runs.error} />
      {runs.data && (
        <>
          <p class="muted">
            {runs.data.total} runs{running && ' · a run is in progress: this list follows it'}
          </p>
          <RunsTable runs={runs.data.data} />
          <Pager page={page} totalPages={runs.data.total_pages} onPage={setPage} />
        </>
      )}
    </section>
  );
}

type ExceptionFilters = { status: string; kind: string; run_id: string };

function exceptionFilters(search: URLSearchParams): ExceptionFilters {
  return {
    status: search.get('status') ?? '',
    kind: search.get('kind') ?? '',
    run_id: search.get('run_id') ?? '',
  };
}

function exceptionsPath(f: ExceptionFilters, page: number): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(f)) if (value.trim()) query.set(name, value.trim());
  if (page > 1) query.set('page', String(page));
  const text = query.toString();
  return text ? `/reconciliation/exceptions?${text}` : '/reconciliation/exceptions';
}

function ExceptionFilterForm(props: { initial: ExceptionFilters }) {
  const [f, setF] = useState(props.initial);
  return (
    <form
      class="inline filters"
      aria-label="Filters"
      onSubmit={(e) => {
        e.preventDefault();
        navigate(exceptionsPath(f, 1));
      }}
    >
      <label>
        Status
        <select
          name="status"
          value={f.status}
          onChange={(e) => setF({ ...f, status: e.currentTarget.value })}
        >
          <option value="">Any</option>
          {RECON_EXCEPTION_STATUSES.map((s) => (
            <option value={s}>{s}</option>
          ))}
        </select>
      </label>
      <label>
        Kind
        <select
          name="kind"
          value={f.kind}
          onChange={(e) => setF({ ...f, kind: e.currentTarget.value })}
        >
          <option value="">Any</option>
          {RECON_KINDS.map((k) => (
            <option value={k}>{KIND_LABELS[k]}</option>
          ))}
        </select>
      </label>
      <label>
        Run id
        <input
          name="run_id"
          value={f.run_id}
          onInput={(e) => setF({ ...f, run_id: e.currentTarget.value })}
        />
      </label>
      <button type="submit">Filter</button>
    </form>
  );
}

/** One side's amount and status, or that it has no record. */
function Side(props: { side: { amount: number; status: string } | null }) {
  if (!props.side) return <span class="muted">None</span>;
  return (
    <>
      {money(props.side.amount)} · {props.side.status}
    </>
  );
}

/** Accepts the exceptions with one note: all or none (the API names the first it refuses). */
function BulkAccept(props: { mode: Mode; ids: string[]; onAccepted: (count: number) => void }) {
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = (event: Event) => {
    event.preventDefault();
    setBusy(true);
    api(props.mode)
      .post('/api/v1/reconciliation/exceptions/resolve', {
        body: { ids: props.ids, action: 'accept', note },
      })
      .then((answer) => {
        setError(null);
        setNote('');
        props.onAccepted(answer.data.length);
      })
      .catch((e: unknown) => setError(errorMessage(e)))
      .finally(() => setBusy(false));
  };
  const count = props.ids.length;
  return (
    <form class="stack" aria-labelledby="bulk-accept" onSubmit={submit}>
      <h2 id="bulk-accept">Accept the selected exceptions</h2>
      <label>
        Note for the selected
        <textarea
          name="note"
          rows={3}
          required
          maxLength={NOTE_MAX}
          placeholder="What explains these differences"
          value={note}
          onInput={(e) => setNote(e.currentTarget.value)}
        />
      </label>
      <div class="actions">
        <button type="submit" disabled={busy || count === 0 || note.trim() === ''}>
          Accept {count} selected
        </button>
      </div>
      <ErrorBox error={error} />
    </form>
  );
}

export function ReconExceptions(props: { mode: Mode }) {
  const search = useSearch();
  const filters = exceptionFilters(search);
  const page = Math.max(1, Number.parseInt(search.get('page') ?? '1', 10) || 1);
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) if (value) query.set(name, value);
  query.set('page', String(page));
  query.set('per_page', '20');
  const list = useLoad(
    // The filters as the address holds them: the API alone judges them (its 422 shown).
    () =>
      api(props.mode).get('/api/v1/reconciliation/exceptions', {
        querySerializer: () => query.toString(),
      }),
    [props.mode, query.toString()],
  );
  const [chosen, setChosen] = useState<string[]>([]);
  const [accepted, setAccepted] = useState<number | null>(null);
  const open = (list.data?.data ?? []).filter((e) => e.status === 'open').map((e) => e.id);
  const selected = chosen.filter((id) => open.includes(id));
  const toggle = (id: string) =>
    setChosen(selected.includes(id) ? selected.filter((s) => s !== id) : [...selected, id]);
  const everyOne = open.length > 0 && selected.length === open.length;
  return (
    <section>
      <h1>Reconciliation exceptions</h1>
      <SubNav current="exceptions" />
      <ExceptionFilterForm key={query.toString()} initial={filters} />
      <ErrorBox error={list.error} />
      {accepted !== null && (
        <p class="once" role="status">
          Accepted {accepted} exceptions.
        </p>
      )}
      {list.data && !list.error && (
        <>
          <p class="muted" data-exception-total>
            {list.data.total} exceptions
          </p>
          <div class="scroll">
            <table>
              <thead>
                <tr>
                  <th scope="col">
                    {can('reconciliation_accept') && (
                      <input
                        type="checkbox"
                        aria-label="Select every open exception of this page"
                        checked={everyOne}
                        disabled={open.length === 0}
                        onChange={() => setChosen(everyOne ? [] : open)}
                      />
                    )}
                  </th>
                  <th scope="col">Found</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Status</th>
                  <th scope="col">Provider reference</th>
                  <th scope="col">Ours</th>
                  <th scope="col">Theirs</th>
                  <th scope="col">Payment</th>
                </tr>
              </thead>
              <tbody>
                {list.data.data.map((e) => (
                  <tr data-exception={e.id}>
                    <td>
                      {e.status === 'open' && can('reconciliation_accept') && (
                        <input
                          type="checkbox"
                          aria-label={`Select the exception of ${e.provider_reference ?? e.id}`}
                          checked={selected.includes(e.id)}
                          onChange={() => toggle(e.id)}
                        />
                      )}
                    </td>
                    <td>
                      <Link to={`/reconciliation/exceptions/${e.id}`}>{when(e.created_at)}</Link>
                    </td>
                    <td>{KIND_LABELS[e.kind]}</td>
                    <td data-exception-status>
                      <Status value={e.status} />
                    </td>
                    <td>
                      <code>{e.provider_reference ?? '—'}</code>
                    </td>
                    <td>
                      <Side side={e.ours} />
                    </td>
                    <td>
                      <Side side={e.theirs} />
                    </td>
                    <td>
                      {e.transaction_id ? (
                        <Link to={`/transactions/${e.transaction_id}`}>
                          <code>{e.transaction_id.slice(0, 8)}</code>
                        </Link>
                      ) : (
                        '—'
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {list.data.data.length === 0 && <p class="muted">No exceptions.</p>}
          </div>
          <Pager
            page={page}
            totalPages={list.data.total_pages}
            onPage={(next) => navigate(exceptionsPath(filters, next))}
          />
          {can('reconciliation_accept') && (
            <BulkAccept
              mode={props.mode}
              ids={selected}
              onAccepted={(count) => {
                setAccepted(count);
                setChosen([]);
                list.reload();
              }}
            />
          )}
        </>
      )}
    </section>
  );
}

/** The row each kind of disagreement is about (the statuses' words differ even when they agree). */
const DIFFERS: Partial<Record<ReconKind, string>> = {
  amount_mismatch: 'Amount',
  status_mismatch: 'Status',
};

/** Both sides of the disagreement, row by row; the row the API found differing is marked. */
function Sides(props: { e: ReconException }) {
  const { ours, theirs } = props.e;
  const rows: [string, string | null, string | null][] = [
    ['Amount', ours ? money(ours.amount) : null, theirs ? money(theirs.amount) : null],
    ['Status', ours?.status ?? null, theirs?.status ?? null],
    ['Booked at', null, theirs ? when(theirs.booked_at) : null],
  ];
  return (
    <div class="scroll">
      <table class="sides">
        <thead>
          <tr>
            <td />
            <th scope="col">Ours (the engine)</th>
            <th scope="col">Theirs (the provider)</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([label, our, their]) => {
            const differs = DIFFERS[props.e.kind] === label;
            return (
              <tr class={differs ? 'differs' : ''} data-side={label}>
                <th scope="row">
                  {label}
                  {differs && <span class="sr-only"> (differs)</span>}
                </th>
                <td>{our ?? <span class="muted">{ours ? '—' : 'None'}</span>}</td>
                <td>{their ?? <span class="muted">None</span>}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

function AcceptForm(props: { mode: Mode; id: string; onAccepted: () => void }) {
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = (event: Event) => {
    event.preventDefault();
    setBusy(true);
    api(props.mode)
      .post('/api/v1/reconciliation/exceptions/{exception_id}/resolve', {
        params: { path: { exception_id: props.id } },
        body: { action: 'accept', note },
      })
      .then(() => {
        setError(null);
        props.onAccepted();
      })
      .catch((e: unknown) => setError(errorMessage(e)))
      .finally(() => setBusy(false));
  };
  return (
    <form class="stack" onSubmit={submit}>
      <p class="muted">
        Accepting records that the difference is known and explained; nothing moves. Adjusting the
        ledger needs admin credentials.
      </p>
      <label>
        Note
        <textarea
          name="note"
          rows={4}
          required
          maxLength={NOTE_MAX}
          placeholder="What explains the difference"
          value={note}
          onInput={(e) => setNote(e.currentTarget.value)}
        />
      </label>
      <p class="muted">
        {note.length} of {NOTE_MAX.toLocaleString('en-US')} characters
      </p>
      <div class="actions">
        <button type="submit" disabled={busy || note.trim() === ''}>
          Accept
        </button>
      </div>
      <ErrorBox error={error} />
    </form>
  );
}

export function ReconExceptionPage(props: { mode: Mode; id: string }) {
  const record = useLoad(
    () =>
      api(props.mode).get('/api/v1/reconciliation/exceptions/{exception_id}', {
        params: { path: { exception_id: props.id } },
      }),
    [props.mode, props.id],
  );
  const e = record.data;
  return (
    <section>
      <p>
        <Link to="/reconciliation/exceptions?status=open">← Exceptions</Link>
      </p>
      <h1>Reconciliation exception</h1>
      <ErrorBox error={record.error} />
      {e && (
        <>
          <dl class="record">
            <dt>Id</dt>
            <dd>
              <code>{e.id}</code>
            </dd>
            <dt>Kind</dt>
            <dd>
              {KIND_LABELS[e.kind]} (<code>{e.kind}</code>)
            </dd>
            <dt>Status</dt>
            <dd data-exception-status>
              <Status value={e.status} />
            </dd>
            <dt>Provider reference</dt>
            <dd>
              <code>{e.provider_reference ?? '—'}</code>
            </dd>
            <dt>Payment</dt>
            <dd>
              {e.transaction_id ? (
                <Link to={`/transactions/${e.transaction_id}`}>
                  <code>{e.transaction_id}</code>
                </Link>
              ) : (
                'None'
              )}
            </dd>
            <dt>Found by</dt>
            <dd>
              {e.run_id ? (
                <Link to={`/reconciliation/exceptions?run_id=${e.run_id}`}>
                  run <code>{e.run_id}</code>
                </Link>
              ) : (
                'the engine'
              )}
            </dd>
            <dt>Found</dt>
            <dd>{when(e.created_at)}</dd>
          </dl>
          <h2>Ours and theirs</h2>
          <Sides e={e} />
          <h2>Resolution</h2>
          {e.status === 'resolved' ? (
            <dl class="record" data-resolution>
              <dt>Resolution</dt>
              <dd>{e.resolution}</dd>
              <dt>Note</dt>
              <dd data-note>{e.note}</dd>
              <dt>Resolved by</dt>
              <dd>
                <code>{e.resolved_by}</code>
              </dd>
              <dt>Resolved</dt>
              <dd>{when(e.resolved_at)}</dd>
            </dl>
          ) : (
            can('reconciliation_accept') && (
              <AcceptForm mode={props.mode} id={e.id} onAccepted={record.reload} />
            )
          )}
        </>
      )}
    </section>
  );
}
