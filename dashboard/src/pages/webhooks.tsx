import { useState } from 'preact/hooks';
import { EVENT_TYPES } from '../../../src/domain/events';
import { api, can, errorMessage, type Mode, type Schemas } from '../api';
import { ErrorBox, Pager, SecretOnce, Status, useLoad, when } from '../ui';

type Subscription = Schemas['WebhookSubscription'];
type EventType = Schemas['Event']['type'];
type Attempt = Schemas['WebhookAttempt'];
type TestResult = Schemas['WebhookTestResult'];

function SubscriptionForm(props: {
  initial?: Subscription;
  submitLabel: string;
  onSubmit: (value: { url: string; events: EventType[]; is_active: boolean }) => void;
  onCancel?: () => void;
}) {
  const [url, setUrl] = useState(props.initial?.url ?? '');
  const [events, setEvents] = useState<EventType[]>((props.initial?.events ?? []) as EventType[]);
  const [active, setActive] = useState(props.initial?.is_active ?? true);
  const toggle = (kind: EventType) =>
    setEvents(events.includes(kind) ? events.filter((e) => e !== kind) : [...events, kind]);
  return (
    <form
      class="subscription-form"
      onSubmit={(e) => {
        e.preventDefault();
        props.onSubmit({ url, events, is_active: active });
      }}
    >
      <label>
        Endpoint URL
        <input
          type="url"
          name="url"
          required
          placeholder="https://example.com/webhooks"
          value={url}
          onInput={(e) => setUrl(e.currentTarget.value)}
        />
      </label>
      <fieldset>
        <legend>Events</legend>
        <div class="checks">
          {EVENT_TYPES.map((kind) => (
            <label class="check">
              <input
                type="checkbox"
                name="events"
                value={kind}
                checked={events.includes(kind)}
                onChange={() => toggle(kind)}
              />
              {kind}
            </label>
          ))}
        </div>
      </fieldset>
      <label class="check">
        <input type="checkbox" checked={active} onChange={() => setActive(!active)} />
        Active
      </label>
      <div class="actions">
        <button type="submit">{props.submitLabel}</button>
        {props.onCancel && (
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

/** Each attempt of one delivery, oldest first, folded away until asked for. */
function History(props: { attempts: Attempt[] }) {
  if (props.attempts.length === 0) return null;
  return (
    <details class="history">
      <summary>History</summary>
      <ol>
        {props.attempts.map((a) => (
          <li>
            {when(a.attempted_at)} · {a.status_code ?? 'no answer'} · {a.duration_ms} ms
            {a.error && ` · ${a.error}`}
          </li>
        ))}
      </ol>
    </details>
  );
}

function Events(props: { mode: Mode }) {
  const [page, setPage] = useState(1);
  const [error, setError] = useState<string | null>(null);
  const events = useLoad(
    () => api(props.mode).get('/api/v1/events', { params: { query: { page, per_page: 10 } } }),
    [props.mode, page],
  );
  const redeliver = (id: string) =>
    void api(props.mode)
      .post('/api/v1/events/{event_id}/redeliver', { params: { path: { event_id: id } }, body: {} })
      .then(() => {
        setError(null);
        events.reload();
      })
      .catch((e: unknown) => setError(errorMessage(e)));
  return (
    <section>
      <h2>Events and deliveries</h2>
      <ErrorBox error={events.error} />
      <ErrorBox error={error} />
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th>Event</th>
              <th>When</th>
              <th>Deliveries (subscription · status · attempts · last answer · next attempt)</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {(events.data?.data ?? []).map((event) => (
              <tr>
                <td>
                  <code>{event.type}</code>
                </td>
                <td>{when(event.created_at)}</td>
                <td>
                  {event.deliveries.length === 0 && 'No subscription takes this event'}
                  <ul class="plain">
                    {event.deliveries.map((d) => (
                      <li>
                        <code>{d.subscription_id.slice(0, 8)}</code> · <Status value={d.status} /> ·{' '}
                        {d.attempts} attempt{d.attempts === 1 ? '' : 's'} ·{' '}
                        {d.last_status_code ?? d.last_error ?? '—'}
                        {d.next_attempt_at && ` · next ${when(d.next_attempt_at)}`}
                        {d.delivered_at && ` · delivered ${when(d.delivered_at)}`}
                        <History attempts={d.history} />
                      </li>
                    ))}
                  </ul>
                </td>
                <td>
                  {can('webhooks') && (
                    <button
                      type="button"
                      title="Send it again to every active subscription that takes it"
                      onClick={() => redeliver(event.id)}
                    >
                      Redeliver
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {events.data && <Pager page={page} totalPages={events.data.total_pages} onPage={setPage} />}
    </section>
  );
}

function TestOutcome(props: { result: TestResult | 'sending' | undefined }) {
  const r = props.result;
  if (r === undefined) return null;
  if (r === 'sending') return <p class="muted">Sending a test event…</p>;
  return (
    <p class="test-outcome" role="status">
      Test: <Status value={r.delivered ? 'delivered' : 'failed'} /> · {r.status_code ?? 'no answer'}{' '}
      · {r.duration_ms} ms{r.error && ` · ${r.error}`}
    </p>
  );
}

export function Webhooks(props: { mode: Mode }) {
  const client = api(props.mode);
  const list = useLoad(
    () => client.get('/api/v1/webhooks/subscriptions', { params: { query: { per_page: 100 } } }),
    [props.mode],
  );
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tests, setTests] = useState<Record<string, TestResult | 'sending'>>({});
  const done = () => {
    setError(null);
    list.reload();
  };
  const fail = (e: unknown) => setError(errorMessage(e));
  const manage = can('webhooks');

  return (
    <section>
      <h1>Webhooks</h1>
      {!creating && manage && (
        <button type="button" onClick={() => setCreating(true)}>
          New subscription
        </button>
      )}
      {creating && (
        <SubscriptionForm
          submitLabel="Create subscription"
          onCancel={() => setCreating(false)}
          onSubmit={(value) =>
            void client
              .post('/api/v1/webhooks/subscriptions', { body: value })
              .then((created) => {
                setSecret(created.secret);
                setCreating(false);
                done();
              })
              .catch(fail)
          }
        />
      )}
      <ErrorBox error={error} />
      {secret && (
        <div class="once" role="status">
          <p>
            <strong>Copy the signing secret now:</strong> it is shown only this once.
          </p>
          <SecretOnce label="Signing secret" value={secret} />
          <button type="button" onClick={() => setSecret(null)}>
            Done
          </button>
        </div>
      )}
      <ErrorBox error={list.error} />
      <ul class="cards">
        {(list.data?.data ?? []).map((s) => (
          <li class="card" data-subscription={s.id}>
            {editing === s.id ? (
              <SubscriptionForm
                initial={s}
                submitLabel="Save"
                onCancel={() => setEditing(null)}
                onSubmit={(value) =>
                  void client
                    .patch('/api/v1/webhooks/subscriptions/{subscription_id}', {
                      params: { path: { subscription_id: s.id } },
                      body: value,
                    })
                    .then(() => {
                      setEditing(null);
                      done();
                    })
                    .catch(fail)
                }
              />
            ) : (
              <>
                <p>
                  <code class="url">{s.url}</code>{' '}
                  <Status value={s.is_active ? 'active' : 'disabled'} />
                  {s.disabled_reason === 'failing' && (
                    <span class="muted"> Turned off: every delivery failed for 72 hours</span>
                  )}
                </p>
                <p class="muted">{s.events.join(', ')}</p>
                {manage && (
                  <div class="actions">
                    <button type="button" onClick={() => setEditing(s.id)}>
                      Edit
                    </button>
                    <button
                      type="button"
                      onClick={() =>
                        void client
                          .patch('/api/v1/webhooks/subscriptions/{subscription_id}', {
                            params: { path: { subscription_id: s.id } },
                            body: { is_active: !s.is_active },
                          })
                          .then(done)
                          .catch(fail)
                      }
                    >
                      {s.is_active ? 'Disable' : 'Enable'}
                    </button>
                    <button
                      type="button"
                      disabled={tests[s.id] === 'sending'}
                      onClick={() => {
                        setTests({ ...tests, [s.id]: 'sending' });
                        client
                          .post('/api/v1/webhooks/subscriptions/{subscription_id}/test', {
                            params: { path: { subscription_id: s.id } },
                          })
                          .then((result) => setTests((t) => ({ ...t, [s.id]: result })))
                          .catch((e: unknown) => {
                            setTests((t) => {
                              const { [s.id]: _dropped, ...rest } = t;
                              return rest;
                            });
                            fail(e);
                          });
                      }}
                    >
                      Send test
                    </button>
                    <button
                      type="button"
                      onClick={() => {
                        if (
                          !confirm(
                            'Rotate the signing secret? The old one keeps signing for 24 hours.',
                          )
                        ) {
                          return;
                        }
                        client
                          .post('/api/v1/webhooks/subscriptions/{subscription_id}/rotate-secret', {
                            params: { path: { subscription_id: s.id } },
                            body: {},
                          })
                          .then((rotated) => {
                            setSecret(rotated.secret);
                            done();
                          })
                          .catch(fail);
                      }}
                    >
                      Rotate secret
                    </button>
                    <button
                      type="button"
                      class="danger"
                      onClick={() => {
                        if (!confirm(`Delete the subscription to ${s.url}?`)) return;
                        client
                          .delete('/api/v1/webhooks/subscriptions/{subscription_id}', {
                            params: { path: { subscription_id: s.id } },
                          })
                          .then(done)
                          .catch(fail);
                      }}
                    >
                      Delete
                    </button>
                  </div>
                )}
                <TestOutcome result={tests[s.id]} />
              </>
            )}
          </li>
        ))}
      </ul>
      <Events mode={props.mode} />
    </section>
  );
}
