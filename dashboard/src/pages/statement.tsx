import { useState } from 'preact/hooks';
import { api, download, errorMessage, jsonOf, type Mode } from '../api';
import { navigate, useSearch } from '../router';
import { ErrorBox, Link, money, Pager, useLoad, when } from '../ui';

const DAY_MS = 86_400_000;
const DATE = /^\d{4}-\d\d-\d\d$/;

function isoDate(time: number): string {
  return new Date(time).toISOString().slice(0, 10);
}

/**
 * The period as the page shows it: whole UTC days, `to` included. The API's window ends before
 * its `to`, so the day after the last one shown is sent.
 */
function windowOf(from: string, to: string): { from: string; to: string } {
  return { from, to: DATE.test(to) ? isoDate(Date.parse(`${to}T00:00:00Z`) + DAY_MS) : to };
}

/** The last 30 days, today included. */
function defaultPeriod(): { from: string; to: string } {
  const today = Date.parse(`${isoDate(Date.now())}T00:00:00Z`);
  return { from: isoDate(today - 30 * DAY_MS), to: isoDate(today) };
}

function PeriodForm(props: {
  from: string;
  to: string;
  onApply: (from: string, to: string) => void;
}) {
  const [from, setFrom] = useState(props.from);
  const [to, setTo] = useState(props.to);
  return (
    <form
      class="inline"
      aria-label="Period"
      onSubmit={(e) => {
        e.preventDefault();
        props.onApply(from, to);
      }}
    >
      <label>
        From (UTC)
        <input
          type="date"
          name="from"
          required
          value={from}
          onInput={(e) => setFrom(e.currentTarget.value)}
        />
      </label>
      <label>
        To, included (UTC)
        <input
          type="date"
          name="to"
          required
          value={to}
          onInput={(e) => setTo(e.currentTarget.value)}
        />
      </label>
      <button type="submit">Show</button>
    </form>
  );
}

/**
 * A wallet's statement over a period read from the ledger: the balances and totals of the whole
 * period, its entries by page, and the same period as a CSV file. The period lives in the
 * address, so a statement can be shared or reloaded.
 */
export function StatementPage(props: { mode: Mode; walletId: string }) {
  const search = useSearch();
  const fallback = defaultPeriod();
  const from = search.get('from') ?? fallback.from;
  const to = search.get('to') ?? fallback.to;
  const page = Math.max(1, Number.parseInt(search.get('page') ?? '1', 10) || 1);
  const period = windowOf(from, to);
  const path = { wallet_id: props.walletId };
  const statement = useLoad(
    () =>
      jsonOf(
        api(props.mode).get('/api/v1/wallets/{wallet_id}/statement', {
          params: { path, query: { ...period, page, per_page: 50 } },
        }),
      ),
    [props.mode, props.walletId, period.from, period.to, page],
  );
  const [busy, setBusy] = useState(false);
  const [csvError, setCsvError] = useState<string | null>(null);
  const open = (nextFrom: string, nextTo: string, nextPage: number) => {
    const next = new URLSearchParams({ from: nextFrom, to: nextTo });
    if (nextPage > 1) next.set('page', String(nextPage));
    navigate(`/wallets/${props.walletId}/statement?${next}`);
  };
  const csv = () => {
    setBusy(true);
    setCsvError(null);
    download(
      api(props.mode).raw.GET('/api/v1/wallets/{wallet_id}/statement', {
        params: { path, query: period },
        headers: { Accept: 'text/csv' },
        parseAs: 'blob',
      }),
      `statement-${props.walletId}.csv`,
    )
      .catch((e: unknown) => setCsvError(errorMessage(e)))
      .finally(() => setBusy(false));
  };
  const s = statement.data;
  return (
    <section>
      <p>
        <Link to="/users">← Users</Link>
      </p>
      <h1>Statement</h1>
      <p class="muted">
        Wallet <code>{props.walletId}</code>
      </p>
      <PeriodForm key={`${from} ${to}`} from={from} to={to} onApply={(f, t) => open(f, t, 1)} />
      <div class="actions">
        <button type="button" onClick={csv} disabled={busy}>
          {busy ? 'Downloading…' : 'Download CSV'}
        </button>
      </div>
      <ErrorBox error={csvError} />
      <ErrorBox error={statement.error} />
      {s && !statement.error && (
        <>
          <p class="muted">
            From {when(s.from)} to {when(s.to)} (the end excluded)
          </p>
          <dl class="figures">
            {(
              [
                ['Opening balance', s.opening_balance],
                ['Credits', s.total_credits],
                ['Debits', s.total_debits],
                ['Closing balance', s.closing_balance],
              ] as const
            ).map(([label, value]) => (
              <div class="figure">
                <dt>{label}</dt>
                <dd data-figure={label}>{money(value, s.currency)}</dd>
              </div>
            ))}
          </dl>
          <p class="muted">{s.total} entries, oldest first</p>
          <div class="scroll">
            <table>
              <thead>
                <tr>
                  <th>Recorded</th>
                  <th>Type</th>
                  <th>Description</th>
                  <th class="num">Amount</th>
                  <th class="num">Balance after</th>
                </tr>
              </thead>
              <tbody>
                {s.entries.map((e) => (
                  <tr data-entry={e.transaction_id ?? ''}>
                    <td>
                      {e.transaction_id ? (
                        <Link to={`/transactions/${e.transaction_id}`}>{when(e.created_at)}</Link>
                      ) : (
                        when(e.created_at)
                      )}
                    </td>
                    <td>{e.transaction_type ?? '—'}</td>
                    <td>{e.description}</td>
                    <td class="num">{money(e.amount)}</td>
                    <td class="num">{money(e.balance_after)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            {s.entries.length === 0 && <p class="muted">No entries in this period.</p>}
          </div>
          <Pager page={page} totalPages={s.total_pages} onPage={(p) => open(from, to, p)} />
        </>
      )}
    </section>
  );
}
