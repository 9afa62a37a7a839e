import { useEffect, useState } from 'preact/hooks';
import {
  ApiError,
  errorMessage,
  onReconfirm,
  request,
  rememberSession,
  type Mode,
  type Session,
} from './api';
import { FRESH_SECONDS } from '../../src/domain/dashboard-access';
import { navigate, usePath } from './router';
import { ErrorBox, Link } from './ui';
import { Overview } from './pages/overview';
import { Credentials } from './pages/credentials';
import { Webhooks } from './pages/webhooks';
import { TransactionPage, Transactions } from './pages/transactions';
import { DisputePage, Disputes } from './pages/disputes';
import { UserPage, Users } from './pages/users';
import { StatementPage } from './pages/statement';
import { BatchPage, Batches } from './pages/batches';
import { ReconExceptionPage, ReconExceptions, Reconciliation } from './pages/reconciliation';
import { TeamPage } from './pages/team';
import { CodeField, Enrol, TwoStepPage } from './pages/two-step';
import { InvitationPage } from './pages/invitation';
import { AuditLog } from './pages/audit-log';

const PAGES = [
  { path: '/', label: 'Overview' },
  { path: '/credentials', label: 'Credentials' },
  { path: '/webhooks', label: 'Webhooks' },
  { path: '/transactions', label: 'Transactions' },
  { path: '/disputes', label: 'Disputes' },
  { path: '/batches', label: 'Batches' },
  { path: '/reconciliation', label: 'Reconciliation' },
  { path: '/users', label: 'Users and wallets' },
  { path: '/team', label: 'Team' },
  { path: '/two-step', label: 'Two-step sign-in' },
  { path: '/audit-log', label: 'Audit log' },
] as const;

function SignIn(props: { onSignedIn: (session: Session) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = (event: Event) => {
    event.preventDefault();
    setBusy(true);
    request<Session>('/session', { method: 'POST', body: { email, password } })
      .then((session) => {
        setError(null);
        props.onSignedIn(session);
      })
      .catch((e: unknown) => setError(e instanceof Error ? e.message : String(e)))
      .finally(() => setBusy(false));
  };
  return (
    <main class="signin">
      <h1>Sign in</h1>
      <form onSubmit={submit}>
        <label>
          Email
          <input
            type="email"
            name="email"
            autoComplete="username"
            required
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </label>
        <label>
          Password
          <input
            type="password"
            name="password"
            autoComplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <ErrorBox error={error} />
      </form>
    </main>
  );
}

function storedMode(): Mode {
  return sessionStorage.getItem('dashboard-mode') === 'live' ? 'live' : 'test';
}

/** The second step of signing in: a code of the authenticator app, or a recovery code. */
function CodeStep(props: { onSignedIn: (session: Session) => void; onCancel: () => void }) {
  const [code, setCode] = useState('');
  const [error, setError] = useState<string | null>(null);
  const submit = (event: Event) => {
    event.preventDefault();
    request<Session>('/session/code', { method: 'POST', body: { code } })
      .then(props.onSignedIn)
      .catch((e: unknown) => setError(errorMessage(e)));
  };
  return (
    <main class="signin">
      <h1>Two-step sign-in</h1>
      <form onSubmit={submit}>
        <p>Enter the code your authenticator app shows, or one of your recovery codes.</p>
        <CodeField value={code} onInput={setCode} />
        <button type="submit">Continue</button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
        <ErrorBox error={error} />
      </form>
    </main>
  );
}

/** The team requires two-step sign-in: the account turns it on before anything else. */
function EnrolStep(props: { onDone: () => void }) {
  return (
    <main class="signin">
      <h1>Turn on two-step sign-in</h1>
      <p>Your team requires two-step sign-in: set it up to continue.</p>
      <Enrol onDone={props.onDone} />
    </main>
  );
}

/**
 * Asks for the password or a code again, for an action that wants a fresh sign-in; the action
 * then goes again on its own.
 */
function Reconfirm(props: { onDone: (confirmed: boolean) => void }) {
  const [secret, setSecret] = useState('');
  const [byCode, setByCode] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const submit = (event: Event) => {
    event.preventDefault();
    const body = byCode ? { code: secret } : { password: secret };
    request<Session>('/session/confirm', { method: 'POST', body })
      .then(() => props.onDone(true))
      .catch((e: unknown) => setError(errorMessage(e)));
  };
  return (
    <div class="overlay">
      <div class="dialog" role="dialog" aria-modal="true" aria-labelledby="reconfirm">
        <form onSubmit={submit}>
          <h2 id="reconfirm">Confirm it is you</h2>
          <p>
            This action needs your password or a two-step code given in the last{' '}
            {FRESH_SECONDS / 60} minutes.
          </p>
          {byCode ? (
            <CodeField value={secret} onInput={setSecret} />
          ) : (
            <label>
              Password
              <input
                type="password"
                name="password"
                autoComplete="current-password"
                required
                value={secret}
                onInput={(e) => setSecret(e.currentTarget.value)}
              />
            </label>
          )}
          <button type="submit">Confirm</button>
          <button type="button" onClick={() => setByCode(!byCode)}>
            {byCode ? 'Use my password' : 'Use a code'}
          </button>
          <button type="button" onClick={() => props.onDone(false)}>
            Cancel
          </button>
          <ErrorBox error={error} />
        </form>
      </div>
    </div>
  );
}

function Page(props: { path: string; mode: Mode; session: Session; onSession: () => void }) {
  const { path, mode } = props;
  const transaction = /^\/transactions\/([^/]+)$/.exec(path);
  if (transaction) return <TransactionPage mode={mode} id={transaction[1]!} />;
  const dispute = /^\/disputes\/([^/]+)$/.exec(path);
  if (dispute) return <DisputePage mode={mode} id={dispute[1]!} />;
  const batch = /^\/batches\/([^/]+)$/.exec(path);
  if (batch) return <BatchPage mode={mode} id={batch[1]!} />;
  const exception = /^\/reconciliation\/exceptions\/([^/]+)$/.exec(path);
  if (exception) return <ReconExceptionPage mode={mode} id={exception[1]!} />;
  const user = /^\/users\/([^/]+)$/.exec(path);
  if (user) return <UserPage mode={mode} id={user[1]!} />;
  const statement = /^\/wallets\/([^/]+)\/statement$/.exec(path);
  if (statement) return <StatementPage mode={mode} walletId={statement[1]!} />;
  switch (path) {
    case '/':
      return <Overview mode={mode} />;
    case '/credentials':
      return <Credentials mode={mode} />;
    case '/webhooks':
      return <Webhooks mode={mode} />;
    case '/transactions':
      return <Transactions mode={mode} />;
    case '/disputes':
      return <Disputes mode={mode} />;
    case '/batches':
      return <Batches mode={mode} />;
    case '/reconciliation':
      return <Reconciliation mode={mode} />;
    case '/reconciliation/exceptions':
      return <ReconExceptions mode={mode} />;
    case '/users':
      return <Users mode={mode} />;
    case '/team':
      return <TeamPage session={props.session} />;
    case '/two-step':
      return <TwoStepPage session={props.session} onChanged={props.onSession} />;
    case '/audit-log':
      return <AuditLog mode={mode} />;
    default:
      return <ErrorBox error="No such page" />;
  }
}

export function App() {
  const path = usePath();
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [mode, setMode] = useState<Mode>(storedMode());
  const [error, setError] = useState<string | null>(null);
  const [confirming, setConfirming] = useState<((confirmed: boolean) => void) | null>(null);

  const signedIn = (s: Session) => {
    rememberSession(s);
    setSession(s);
  };
  const loadSession = () => {
    request<Session>('/session')
      .then(signedIn)
      .catch((e: unknown) => {
        if (e instanceof ApiError && e.status === 401) setSession(null);
        else setError(e instanceof Error ? e.message : String(e));
      });
  };
  useEffect(loadSession, []);
  useEffect(() => {
    onReconfirm(() => new Promise<boolean>((resolve) => setConfirming(() => resolve)));
  }, []);
  const signOut = () => {
    request('/session', { method: 'DELETE' })
      .then(() => {
        setSession(null);
        navigate('/');
      })
      .catch((e: unknown) => setError(e instanceof Error ? e.message : String(e)));
  };

  const invitation = /^\/invitations\/([^/]+)$/.exec(path);
  if (invitation) {
    return (
      <InvitationPage
        token={decodeURIComponent(invitation[1]!)}
        onSignedIn={(s) => {
          signedIn(s);
          navigate('/');
        }}
      />
    );
  }
  if (session === undefined) return <ErrorBox error={error} />;
  if (session === null) return <SignIn onSignedIn={signedIn} />;
  if (session.needs === 'code') return <CodeStep onSignedIn={signedIn} onCancel={signOut} />;
  if (session.needs === 'enrolment') return <EnrolStep onDone={loadSession} />;

  const switchMode = (next: Mode) => {
    sessionStorage.setItem('dashboard-mode', next);
    setMode(next);
  };
  const section = `/${path.split('/')[1] ?? ''}`;
  return (
    <div class={`shell mode-${mode}`}>
      <header>
        <div class="brand">
          <strong>{session.application.name}</strong>
          <span class="who">{session.email}</span>
          <span class="role">{session.role}</span>
        </div>
        <div class="mode-switch" role="group" aria-label="Mode">
          {(['test', 'live'] as const).map((m) => (
            <button
              type="button"
              aria-pressed={mode === m}
              class={mode === m ? 'active' : ''}
              onClick={() => switchMode(m)}
            >
              {m === 'test' ? 'Test' : 'Live'}
            </button>
          ))}
        </div>
        <button type="button" class="signout" onClick={signOut}>
          Sign out
        </button>
      </header>
      <nav class="tabs" aria-label="Pages">
        {PAGES.map((page) => (
          <Link to={page.path} class={section === page.path ? 'current' : ''}>
            {page.label}
          </Link>
        ))}
      </nav>
      <main>
        {mode === 'test' ? (
          <p class="banner">Test Mode: sandbox data, no real money.</p>
        ) : (
          <p class="banner live">Live Mode.</p>
        )}
        <ErrorBox error={error} />
        <Page
          key={`${mode}${path}`}
          path={path}
          mode={mode}
          session={session}
          onSession={loadSession}
        />
      </main>
      {confirming && (
        <Reconfirm
          onDone={(confirmed) => {
            confirming(confirmed);
            setConfirming(null);
          }}
        />
      )}
    </div>
  );
}
