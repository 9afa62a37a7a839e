import { useState } from 'preact/hooks';
import { can, modePath, request, type Mode } from '../api';
import { ErrorBox, SecretOnce, Status, useLoad, when } from '../ui';

type Credential = {
  id: string;
  api_key: string;
  mode: Mode;
  status: 'active' | 'revoked' | 'expired';
  last_used: string | null;
  expires_at: string | null;
  created_at: string;
};
type Created = {
  id: string;
  api_key: string;
  secret_key: string;
  mode: Mode;
  expires_at: string | null;
};

export function Credentials(props: { mode: Mode }) {
  const path = modePath(props.mode, '/credentials');
  const list = useLoad(() => request<Credential[]>(path), [path]);
  const [expiry, setExpiry] = useState('');
  const [created, setCreated] = useState<Created | null>(null);
  const [error, setError] = useState<string | null>(null);
  const fail = (e: unknown) => setError(e instanceof Error ? e.message : String(e));

  const generate = (event: Event) => {
    event.preventDefault();
    const expires_at = expiry ? new Date(expiry).toISOString() : null;
    request<Created>(path, { method: 'POST', body: { expires_at } })
      .then((c) => {
        setCreated(c);
        setError(null);
        list.reload();
      })
      .catch(fail);
  };
  const revoke = (credential: Credential) => {
    if (!confirm(`Revoke ${credential.api_key}? Requests with it will be refused.`)) return;
    request(`${path}/${credential.id}/revoke`, { method: 'POST' })
      .then(() => list.reload())
      .catch(fail);
  };

  return (
    <section>
      <h1>Credentials ({props.mode === 'test' ? 'Test' : 'Live'} Mode)</h1>
      {can('credentials_create') && (
        <form class="inline" onSubmit={generate}>
          <label>
            Expires at (optional)
            <input
              type="datetime-local"
              name="expires_at"
              value={expiry}
              onInput={(e) => setExpiry(e.currentTarget.value)}
            />
          </label>
          <button type="submit">Generate a key</button>
        </form>
      )}
      <ErrorBox error={error} />
      {created && (
        <div class="once" role="status">
          <p>
            <strong>Copy the secret key now:</strong> it is shown only this once.
          </p>
          <SecretOnce label="API key" value={created.api_key} />
          <SecretOnce label="Secret key" value={created.secret_key} />
          <button type="button" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      )}
      <ErrorBox error={list.error} />
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th>API key</th>
              <th>Status</th>
              <th>Last used</th>
              <th>Expires</th>
              <th>Created</th>
              <th>
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {(list.data ?? []).map((c) => (
              <tr data-credential={c.id}>
                <td>
                  <code>{c.api_key}</code>
                </td>
                <td>
                  <Status value={c.status} />
                </td>
                <td>{when(c.last_used)}</td>
                <td>{when(c.expires_at)}</td>
                <td>{when(c.created_at)}</td>
                <td>
                  {c.status === 'active' && can('credentials_revoke') && (
                    <button type="button" class="danger" onClick={() => revoke(c)}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
