import { useEffect, useState } from 'preact/hooks';
import { api, errorMessage, type Mode } from '../api';
import { href, navigate } from '../router';
import { ErrorBox, Link, MetadataList, money, Pager, Status, useLoad, when } from '../ui';
import { TransactionTable } from './transactions';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** How long typing pauses before the search asks the API. */
const SEARCH_DELAY_MS = 250;

/**
 * The search box asks the API (`q`: name, email, phone number or your own user id, ignoring
 * case) over every user, not only the page shown; a user id opens that user. The address keeps
 * the search (replaced, not one history entry a keystroke), so it can be shared or reloaded.
 */
export function Users(props: { mode: Mode }) {
  const [page, setPage] = useState(1);
  const [search, setSearch] = useState(() => new URLSearchParams(location.search).get('q') ?? '');
  const [query, setQuery] = useState(() => search.trim().slice(0, 200));
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const timer = setTimeout(() => {
      const next = search.trim().slice(0, 200);
      if (next === query) return;
      setQuery(next);
      setPage(1);
      history.replaceState(
        null,
        '',
        href(next ? `/users?${new URLSearchParams({ q: next })}` : '/users'),
      );
    }, SEARCH_DELAY_MS);
    return () => clearTimeout(timer);
  }, [search, query]);
  const list = useLoad(() => {
    return api(props.mode).get('/api/v1/users/', {
      params: { query: { page, per_page: 50, ...(query ? { q: query } : {}) } },
    });
  }, [props.mode, page, query]);
  const shown = list.data?.data ?? [];
  return (
    <section>
      <h1>Users and wallets</h1>
      <form
        class="inline"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          if (!UUID.test(search.trim())) return;
          api(props.mode)
            .get('/api/v1/users/{user_id}/', { params: { path: { user_id: search.trim() } } })
            .then((u) => navigate(`/users/${u.id}`))
            .catch((err: unknown) => setError(errorMessage(err)));
        }}
      >
        <label>
          Search
          <input
            type="search"
            name="search"
            value={search}
            placeholder="user id, name, email or phone"
            onInput={(e) => setSearch(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Open by id</button>
      </form>
      <ErrorBox error={error ?? list.error} />
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th>Name</th>
              <th>Email</th>
              <th>Phone</th>
              <th>Status</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((u) => (
              <tr>
                <td>
                  <Link to={`/users/${u.id}`}>{u.name ?? u.app_user_id ?? u.id}</Link>
                </td>
                <td>{u.email ?? '—'}</td>
                <td>{u.phone_number ?? '—'}</td>
                <td>
                  <Status value={u.is_active ? 'active' : 'disabled'} />
                </td>
                <td>{when(u.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {list.data && <Pager page={page} totalPages={list.data.total_pages} onPage={setPage} />}
    </section>
  );
}

export function UserPage(props: { mode: Mode; id: string }) {
  const id = encodeURIComponent(props.id);
  const client = api(props.mode);
  const path = { user_id: props.id };
  const user = useLoad(() => client.get('/api/v1/users/{user_id}/', { params: { path } }), [id]);
  const wallet = useLoad(
    () => client.get('/api/v1/wallets/{user_id}/', { params: { path } }),
    [id],
  );
  const walletId = wallet.data?.id;
  const recent = useLoad(
    () =>
      walletId
        ? client.get('/api/v1/transactions/', {
            params: { query: { wallet_id: walletId, per_page: 10 } },
          })
        : Promise.resolve(null),
    [walletId],
  );
  const u = user.data;
  return (
    <section>
      <p>
        <Link to="/users">← Users</Link>
      </p>
      <h1>{u?.name ?? 'User'}</h1>
      <ErrorBox error={user.error} />
      {u && (
        <dl class="record">
          <dt>Id</dt>
          <dd>
            <code>{u.id}</code>
          </dd>
          <dt>Your user id</dt>
          <dd>{u.app_user_id ?? '—'}</dd>
          <dt>Email</dt>
          <dd>{u.email ?? '—'}</dd>
          <dt>Phone</dt>
          <dd>{u.phone_number ?? '—'}</dd>
          <dt>Status</dt>
          <dd>
            <Status value={u.is_active ? 'active' : 'disabled'} />
          </dd>
          <dt>Metadata</dt>
          <dd>
            <MetadataList metadata={u.metadata} />
          </dd>
        </dl>
      )}
      <h2>Wallet</h2>
      <ErrorBox error={wallet.error} />
      {wallet.data && (
        <dl class="record">
          <dt>Wallet id</dt>
          <dd>
            <code>{wallet.data.id}</code>
          </dd>
          <dt>Balance</dt>
          <dd data-balance>{money(wallet.data.balance, wallet.data.currency)}</dd>
          <dt>Status</dt>
          <dd>
            <Status value={wallet.data.is_active ? 'active' : 'disabled'} />
          </dd>
          <dt>Metadata</dt>
          <dd>
            <MetadataList metadata={wallet.data.metadata} />
          </dd>
        </dl>
      )}
      {wallet.data && (
        <p class="actions">
          <Link to={`/wallets/${wallet.data.id}/statement`}>Statement</Link>
          <Link to={`/transactions?wallet_id=${wallet.data.id}`}>All its transactions</Link>
        </p>
      )}
      <h2>Recent transactions</h2>
      <ErrorBox error={recent.error} />
      {recent.data && <TransactionTable rows={recent.data.data} />}
    </section>
  );
}
