import { useState } from 'preact/hooks';
import { errorMessage, request, type Session } from '../api';
import { ErrorBox, SecretOnce } from '../ui';

type Enrolment = { secret: string; otpauth_uri: string; qr_code: string };

/** A code field: six digits from the authenticator app, or a recovery code. */
export function CodeField(props: { value: string; onInput: (value: string) => void }) {
  return (
    <label>
      Code
      <input
        name="code"
        autoComplete="one-time-code"
        inputMode="text"
        required
        value={props.value}
        onInput={(e) => props.onInput(e.currentTarget.value.trim())}
      />
    </label>
  );
}

/**
 * Turning two-step sign-in on: the secret as a QR code and as text, then a first code; the
 * recovery codes are shown once, after it.
 */
export function Enrol(props: { onDone: () => void }) {
  const [enrolment, setEnrolment] = useState<Enrolment | null>(null);
  const [code, setCode] = useState('');
  const [codes, setCodes] = useState<string[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const start = () => {
    setBusy(true);
    request<Enrolment>('/two-step', { method: 'POST' })
      .then((e) => {
        setEnrolment(e);
        setError(null);
      })
      .catch((e: unknown) => setError(errorMessage(e)))
      .finally(() => setBusy(false));
  };
  const confirm = (event: Event) => {
    event.preventDefault();
    setBusy(true);
    request<{ recovery_codes: string[] }>('/two-step/confirm', { method: 'POST', body: { code } })
      .then((answer) => {
        setCodes(answer.recovery_codes);
        setError(null);
      })
      .catch((e: unknown) => setError(errorMessage(e)))
      .finally(() => setBusy(false));
  };
  if (codes) {
    return (
      <div class="once" role="status">
        <p>
          <strong>Two-step sign-in is on.</strong> Keep these recovery codes somewhere safe: each
          signs you in once without your phone, and they are shown only this once.
        </p>
        <ul class="plain recovery-codes">
          {codes.map((c) => (
            <li>
              <code>{c}</code>
            </li>
          ))}
        </ul>
        <button type="button" onClick={props.onDone}>
          Done
        </button>
      </div>
    );
  }
  if (!enrolment) {
    return (
      <div>
        <button type="button" onClick={start} disabled={busy}>
          Set up two-step sign-in
        </button>
        <ErrorBox error={error} />
      </div>
    );
  }
  return (
    <div class="stack">
      <p>Scan this code with an authenticator app, or enter the secret by hand.</p>
      <img src={enrolment.qr_code} alt="QR code of the two-step secret" width={200} height={200} />
      <SecretOnce label="Secret" value={enrolment.secret} />
      <p class="muted">
        <code class="uri">{enrolment.otpauth_uri}</code>
      </p>
      <form class="inline" onSubmit={confirm}>
        <CodeField value={code} onInput={setCode} />
        <button type="submit" disabled={busy}>
          Turn on
        </button>
      </form>
      <ErrorBox error={error} />
    </div>
  );
}

/** The account's own two-step sign-in: on or off, and turning it on or off. */
export function TwoStepPage(props: { session: Session; onChanged: () => void }) {
  const { two_step: twoStep } = props.session;
  const [error, setError] = useState<string | null>(null);
  const turnOff = () => {
    if (!confirm('Turn two-step sign-in off?')) return;
    request('/two-step', { method: 'DELETE' })
      .then(props.onChanged)
      .catch((e: unknown) => setError(errorMessage(e)));
  };
  return (
    <section>
      <h1>Two-step sign-in</h1>
      <p>
        Signed in as <strong>{props.session.email}</strong>, role{' '}
        <strong>{props.session.role}</strong>.
      </p>
      {twoStep.enabled ? (
        <>
          <p>
            Two-step sign-in is on: you give a code of your authenticator app after your password.
          </p>
          {twoStep.required ? (
            <p class="muted">Your team requires it.</p>
          ) : (
            <button type="button" class="danger" onClick={turnOff}>
              Turn off
            </button>
          )}
        </>
      ) : (
        <>
          <p>Two-step sign-in is off.</p>
          <Enrol onDone={props.onChanged} />
        </>
      )}
      <ErrorBox error={error} />
    </section>
  );
}
