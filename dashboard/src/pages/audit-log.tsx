import { useState } from 'preact/hooks';
import { api, type Mode, type Schemas } from '../api';
import { navigate, useSearch } from '../router';
import { ErrorBox, Link, useLoad, when } from '../ui';

type Entry = Schemas['AuditEntry'];

/**
 * The filters under the API's own names, held by the page's address (shared and reloaded as
 * they are); the API alone judges them, and its 422 is shown.
 */
type Filters = { action: string; actor_id: string; created_gte: string; created_lt: string };

function filtersOf(search: URLSearchParams): Filters {
  return {
    action: search.get('action') ?? '',
    actor_id: search.get('actor_id') ?? '',
    created_gte: search.get('created[gte]') ?? '',
    created_lt: search.get('created[lt]') ?? '',
  };
}

function filterQuery(f: Filters): URLSearchParams {
  const query = new URLSearchParams();
  const put = (name: string, value: string) => {
    if (value.trim()) query.set(name, value.trim());
  };
  put('action', f.action);
  put('actor_id', f.actor_id);
  put('created[gte]', f.created_gte);
  put('created[lt]', f.created_lt);
  return query;
}

function FilterForm(props: { initial: Filters; onApply: (filters: Filters) => void }) {
  const [f, setF] = useState<Filters>(props.initial);
  const set = (name: keyof Filters, value: string) => setF((old) => ({ ...old, [name]: value }));
  const text = (label: string, name: keyof Filters) => (
    <label>
      {label}
      <input name={name} value={f[name]} onInput={(e) => set(name, e.currentTarget.value)} />
    </label>
  );
  const day = (label: string, name: keyof Filters, param: string) => (
    <label>
      {label}
      <input
        type="date"
        name={param}
        value={f[name]}
        onInput={(e) => set(name, e.currentTarget.value)}
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
      {text('Action', 'action')}
      {text('Actor id', 'actor_id')}
      <div class="filter-group">
        {day('From (UTC)', 'created_gte', 'created[gte]')}
        {day('Before (UTC)', 'created_lt', 'created[lt]')}
      </div>
      <button type="submit">Filter</button>
    </form>
  );
}

function actorText(actor: Entry['actor']): string {
  const kind = {
    dashboard_account: 'Dashboard',
    admin: 'Admin',
    cli: 'Command line',
    application: 'API key',
  }[actor.type];
  return `${kind}: ${actor.name}`;
}

function EntryTable(props: { rows: Entry[] }) {
  return (
    <div class="scroll">
      <table>
        <thead>
          <tr>
            <th>When</th>
            <th>Actor</th>
            <th>Action</th>
            <th>Target</th>
            <th>Address</th>
            <th>Details</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((e) => (
            <tr data-audit-entry={e.id} data-action={e.action}>
              <td>{when(e.at)}</td>
              <td title={e.actor.id}>{actorText(e.actor)}</td>
              <td>
                <code>{e.action}</code>
              </td>
              <td>
                {e.target.type}
                {e.target.id && <div class="muted">{e.target.id}</div>}
              </td>
              <td>{e.ip ?? '—'}</td>
              <td>
                <code class="details">{JSON.stringify(e.details)}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.rows.length === 0 && <p class="muted">No entries.</p>}
    </div>
  );
}

/** Who changed what in the application, newest first, a cursor page at a time. */
export function AuditLog(props: { mode: Mode }) {
  const search = useSearch();
  const filters = filtersOf(search);
  const shown = filterQuery(filters);
  const after = search.get('starting_after');
  const query = new URLSearchParams(shown);
  if (after) query.set('starting_after', after);
  query.set('per_page', '20');
  const list = useLoad(
    () => api(props.mode).get('/api/v1/audit-log', { querySerializer: () => query.toString() }),
    [props.mode, query.toString()],
  );
  const open = (next: URLSearchParams) => {
    const text = next.toString();
    navigate(text ? `/audit-log?${text}` : '/audit-log');
  };
  const last = list.data?.data.at(-1);
  return (
    <section>
      <h1>Audit log</h1>
      <p class="muted">
        Every change made from the dashboard, the command line, by the platform’s admins or with the
        application’s API keys. Entries are never changed or deleted.
      </p>
      <FilterForm key={shown.toString()} initial={filters} onApply={(f) => open(filterQuery(f))} />
      {shown.toString() && (
        <div class="actions">
          <Link to="/audit-log">Clear the filters</Link>
        </div>
      )}
      <ErrorBox error={list.error} />
      {list.data && !list.error && (
        <>
          <EntryTable rows={list.data.data} />
          <nav class="pager" aria-label="Audit log paging">
            <button
              type="button"
              disabled={!after}
              onClick={() => open(new URLSearchParams(shown))}
            >
              Newest
            </button>
            <button
              type="button"
              disabled={!list.data.has_more || !last}
              onClick={() => {
                const next = new URLSearchParams(shown);
                next.set('starting_after', last!.id);
                open(next);
              }}
            >
              Older
            </button>
          </nav>
        </>
      )}
    </section>
  );
}
