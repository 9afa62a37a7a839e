import { useEffect, useState } from 'preact/hooks';
import {
  ApiError,
  modePath,
  request,
  type Metadata,
  type Mode,
  type Page,
  type Transaction,
} from '../api';
import { href, navigate } from '../router';
import { ErrorBox, Link, MetadataList, money, Pager, Status, useLoad, when } from '../ui';
import { TransactionTable } from './transactions';

type User = {
  id: string;
  app_user_id: string | null;
  name: string | null;
  email: string | null;
  phone_number: string | null;
  is_active: boolean;
  metadata?: Metadata;
  created_at: string;
};
type Wallet = {
  id: string;
  user_id: string;
  balance: number;
  currency: string;
  is_active: boolean;
  metadata?: Metadata;
};

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
    const q = query ? `&q=${encodeURIComponent(query)}` : '';
    return request<Page<User>>(modePath(props.mode, `/v1/users/?page=${page}&per_page=50${q}`));
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
          request<User>(modePath(props.mode, `/v1/users/${search.trim()}/`))
            .then((u) => navigate(`/users/${u.id}`))
            .catch((err: unknown) => setError(err instanceof ApiError ? err.message : String(err)));
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
  const user = useLoad(() => request<User>(modePath(props.mode, `/v1/users/${id}/`)), [id]);
  const wallet = useLoad(() => request<Wallet>(modePath(props.mode, `/v1/wallets/${id}/`)), [id]);
  const walletId = wallet.data?.id;
  const recent = useLoad(
    () =>
      walletId
        ? request<Page<Transaction>>(
            modePath(props.mode, `/v1/transactions/?wallet_id=${walletId}&per_page=10`),
          )
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
