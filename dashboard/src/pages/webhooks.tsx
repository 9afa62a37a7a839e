import { useState } from 'preact/hooks';
import { EVENT_TYPES } from '../../../domain/events';
import { api, errorMessage, type Mode, type Schemas } from '../api';
import { ErrorBox, Pager, SecretOnce, Status, useLoad, when } from '../ui';

type Subscription = Schemas['WebhookSubscription'];
type EventType = Schemas['Event']['type'];

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

function Events(props: { mode: Mode }) {
  const [page, setPage] = useState(1);
  const events = useLoad(
    () => api(props.mode).get('/api/v1/events', { params: { query: { page, per_page: 10 } } }),
    [props.mode, page],
  );
  return (
    <section>
      <h2>Events and deliveries</h2>
      <ErrorBox error={events.error} />
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th>Event</th>
              <th>When</th>
              <th>Deliveries (subscription · status · attempts · last answer · next attempt)</th>
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
                      </li>
                    ))}
                  </ul>
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
  const done = () => {
    setError(null);
    list.reload();
  };
  const fail = (e: unknown) => setError(errorMessage(e));

  return (
    <section>
      <h1>Webhooks</h1>
      {!creating && (
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
                </p>
                <p class="muted">{s.events.join(', ')}</p>
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
              </>
            )}
          </li>
        ))}
      </ul>
      <Events mode={props.mode} />
    </section>
  );
}
