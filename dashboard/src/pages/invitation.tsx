import { useState } from 'preact/hooks';
import { errorMessage, request, type Session } from '../api';
import { ErrorBox, useLoad } from '../ui';

type Invitation = {
  email: string;
  role: string;
  expires_at: string;
  application: { id: string; name: string };
};

/** An invitation's link, opened signed out: choose a password, and be signed in. */
export function InvitationPage(props: { token: string; onSignedIn: (session: Session) => void }) {
  const path = `/invitations/${encodeURIComponent(props.token)}`;
  const invitation = useLoad(() => request<Invitation>(path), [path]);
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const accept = (event: Event) => {
    event.preventDefault();
    setBusy(true);
    request<Session>(`${path}/accept`, { method: 'POST', body: { password } })
      .then(props.onSignedIn)
      .catch((e: unknown) => setError(errorMessage(e)))
      .finally(() => setBusy(false));
  };
  const data = invitation.data;
  return (
    <main class="signin">
      <h1>Join a team</h1>
      <ErrorBox error={invitation.error} />
      {data && (
        <form onSubmit={accept}>
          <p>
            <strong>{data.application.name}</strong> invites <strong>{data.email}</strong> as{' '}
            <strong>{data.role}</strong>.
          </p>
          <label>
            Choose a password (12 characters or more)
            <input
              type="password"
              name="password"
              autoComplete="new-password"
              required
              minLength={12}
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          </label>
          <button type="submit" disabled={busy}>
            Join
          </button>
          <ErrorBox error={error} />
        </form>
      )}
    </main>
  );
}
