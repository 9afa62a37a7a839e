import { useState } from 'preact/hooks';
import { DASHBOARD_ROLES, type DashboardRole } from '../../../src/domain/dashboard-access';
import { can, errorMessage, request, type Session } from '../api';
import { ErrorBox, SecretOnce, useLoad, when } from '../ui';

type Member = {
  id: string;
  email: string;
  role: DashboardRole;
  two_step: boolean;
  created_at: string;
};
type Invitation = {
  id: string;
  email: string;
  role: DashboardRole;
  created_at: string;
  expires_at: string;
};
type Team = { members: Member[]; invitations: Invitation[]; two_step_required: boolean };

function RoleSelect(props: {
  value: DashboardRole;
  onChange: (role: DashboardRole) => void;
  label: string;
}) {
  return (
    <label>
      {props.label}
      <select
        name="role"
        value={props.value}
        onChange={(e) => props.onChange(e.currentTarget.value as DashboardRole)}
      >
        {DASHBOARD_ROLES.map((role) => (
          <option value={role}>{role}</option>
        ))}
      </select>
    </label>
  );
}

function InviteForm(props: { onInvited: () => void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<DashboardRole>('viewer');
  const [link, setLink] = useState<{ url: string; until: string } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const submit = (event: Event) => {
    event.preventDefault();
    request<{ path: string; invitation: Invitation }>('/team/invitations', {
      method: 'POST',
      body: { email, role },
    })
      .then((answer) => {
        setLink({ url: `${location.origin}${answer.path}`, until: answer.invitation.expires_at });
        setEmail('');
        setError(null);
        props.onInvited();
      })
      .catch((e: unknown) => setError(errorMessage(e)));
  };
  return (
    <>
      <form class="inline" aria-labelledby="invite" onSubmit={submit}>
        <h2 id="invite">Invite</h2>
        <label>
          Email
          <input
            type="email"
            name="email"
            required
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </label>
        <RoleSelect label="Role" value={role} onChange={setRole} />
        <button type="submit">Invite</button>
      </form>
      <ErrorBox error={error} />
      {link && (
        <div class="once" role="status">
          <p>
            <strong>Send this link to the person you invite:</strong> it works once, until{' '}
            {when(link.until)}, and is shown only now.
          </p>
          <SecretOnce label="Invitation link" value={link.url} />
          <button type="button" onClick={() => setLink(null)}>
            Done
          </button>
        </div>
      )}
    </>
  );
}

/** The team: members and roles, invitations, and the requirement of two-step sign-in. */
export function TeamPage(props: { session: Session }) {
  const team = useLoad(() => request<Team>('/team'), []);
  const [error, setError] = useState<string | null>(null);
  const manage = can('team');
  const act = (run: Promise<unknown>) => {
    run
      .then(() => {
        setError(null);
        team.reload();
      })
      .catch((e: unknown) => setError(errorMessage(e)));
  };
  const data = team.data;
  return (
    <section>
      <h1>Team</h1>
      <ErrorBox error={team.error} />
      <ErrorBox error={error} />
      {data && (
        <p>
          Two-step sign-in is <strong>{data.two_step_required ? 'required' : 'optional'}</strong>{' '}
          for the team.{' '}
          {manage && (
            <button
              type="button"
              onClick={() =>
                act(
                  request('/team', {
                    method: 'PATCH',
                    body: { two_step_required: !data.two_step_required },
                  }),
                )
              }
            >
              {data.two_step_required ? 'Make it optional' : 'Require it for the whole team'}
            </button>
          )}
        </p>
      )}
      {manage && <InviteForm onInvited={team.reload} />}
      <h2>Members</h2>
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th>Email</th>
              <th>Role</th>
              <th>Two-step</th>
              <th>Since</th>
              <th>
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {(data?.members ?? []).map((m) => (
              <tr data-member={m.email}>
                <td>
                  {m.email}
                  {m.email === props.session.email ? ' (you)' : ''}
                </td>
                <td>
                  {manage ? (
                    <RoleSelect
                      label={`Role of ${m.email}`}
                      value={m.role}
                      onChange={(role) =>
                        act(request(`/team/members/${m.id}`, { method: 'PATCH', body: { role } }))
                      }
                    />
                  ) : (
                    m.role
                  )}
                </td>
                <td>{m.two_step ? 'on' : 'off'}</td>
                <td>{when(m.created_at)}</td>
                <td>
                  {manage && (
                    <button
                      type="button"
                      class="danger"
                      onClick={() => {
                        if (confirm(`Remove ${m.email} from the team?`)) {
                          act(request(`/team/members/${m.id}`, { method: 'DELETE' }));
                        }
                      }}
                    >
                      Remove
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h2>Open invitations</h2>
      {data && data.invitations.length === 0 ? (
        <p class="muted">None</p>
      ) : (
        <ul class="plain">
          {(data?.invitations ?? []).map((i) => (
            <li data-invitation={i.email}>
              {i.email} as {i.role}, until {when(i.expires_at)}{' '}
              {manage && (
                <button
                  type="button"
                  onClick={() => act(request(`/team/invitations/${i.id}`, { method: 'DELETE' }))}
                >
                  Revoke
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
