import { useEffect, useState } from 'preact/hooks';
import { ApiError, request, setCsrfToken, type Mode, type Session } from './api';
import { navigate, usePath } from './router';
import { ErrorBox, Link } from './ui';
import { Overview } from './pages/overview';
import { Credentials } from './pages/credentials';
import { Webhooks } from './pages/webhooks';
import { TransactionPage, Transactions } from './pages/transactions';
import { DisputePage, Disputes } from './pages/disputes';
import { UserPage, Users } from './pages/users';
import { StatementPage } from './pages/statement';
import { ReconExceptionPage, ReconExceptions, Reconciliation } from './pages/reconciliation';
import { AuditLog } from './pages/audit-log';

const PAGES = [
  { path: '/', label: 'Overview' },
  { path: '/credentials', label: 'Credentials' },
  { path: '/webhooks', label: 'Webhooks' },
  { path: '/transactions', label: 'Transactions' },
  { path: '/disputes', label: 'Disputes' },
  { path: '/reconciliation', label: 'Reconciliation' },
  { path: '/users', label: 'Users and wallets' },
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

function Page(props: { path: string; mode: Mode; session: Session }) {
  const { path, mode } = props;
  const transaction = /^\/transactions\/([^/]+)$/.exec(path);
  if (transaction) return <TransactionPage mode={mode} id={transaction[1]!} />;
  const dispute = /^\/disputes\/([^/]+)$/.exec(path);
  if (dispute) return <DisputePage mode={mode} id={dispute[1]!} />;
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
    case '/reconciliation':
      return <Reconciliation mode={mode} />;
    case '/reconciliation/exceptions':
      return <ReconExceptions mode={mode} />;
    case '/users':
      return <Users mode={mode} />;
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

  useEffect(() => {
    request<Session>('/session')
      .then((s) => {
        setCsrfToken(s.csrf_token);
        setSession(s);
      })
      .catch((e: unknown) => {
        if (e instanceof ApiError && e.status === 401) setSession(null);
        else setError(e instanceof Error ? e.message : String(e));
      });
  }, []);

  if (session === undefined) return <ErrorBox error={error} />;
  if (session === null) {
    return (
      <SignIn
        onSignedIn={(s) => {
          setCsrfToken(s.csrf_token);
          setSession(s);
        }}
      />
    );
  }

  const switchMode = (next: Mode) => {
    sessionStorage.setItem('dashboard-mode', next);
    setMode(next);
  };
  const signOut = () => {
    request('/session', { method: 'DELETE' })
      .then(() => {
        setSession(null);
        navigate('/');
      })
      .catch((e: unknown) => setError(e instanceof Error ? e.message : String(e)));
  };
  const section = `/${path.split('/')[1] ?? ''}`;
  return (
    <div class={`shell mode-${mode}`}>
      <header>
        <div class="brand">
          <strong>{session.application.name}</strong>
          <span class="who">{session.email}</span>
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
        <Page key={`${mode}${path}`} path={path} mode={mode} session={session} />
      </main>
    </div>
  );
}
