import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { api, type Mode, type Schemas } from '../api';
import { ErrorBox, Link, money, Status, useLoad, when } from '../ui';

/** GET /api/v1/analytics/dashboard, as docs/api.md, Analytics and admins defines it. */
type Analytics = Schemas['DashboardAnalytics'];

function VolumeChart(props: { days: Analytics['volume_chart']; currency: string }) {
  const target = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = target.current;
    if (!element) return;
    const xs = props.days.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000);
    const ys = props.days.map((d) => d.volume);
    const width = Math.max(260, Math.min(element.clientWidth || 640, 960));
    const chart = new uPlot(
      {
        width,
        height: 240,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        scales: { x: { time: true } },
        series: [
          {},
          {
            label: `Volume (${props.currency})`,
            stroke: '#2563eb',
            fill: 'rgba(37, 99, 235, 0.12)',
            width: 2,
            value: (_u, v) => (v === null ? '—' : money(v)),
          },
        ],
        axes: [{}, { values: (_u, vals) => vals.map((v) => money(v)), size: 80 }],
      },
      [xs, ys],
      element,
    );
    return () => chart.destroy();
  }, [props.days, props.currency]);
  return (
    <figure class="chart">
      <div ref={target} />
      <figcaption>
        Volume over the last 14 days (UTC), today last.
        <table class="sr-only">
          <caption>Volume per day</caption>
          <tbody>
            {props.days.map((d) => (
              <tr>
                <th scope="row">{d.date}</th>
                <td>{money(d.volume, props.currency)}</td>
                <td>{d.count} transactions</td>
              </tr>
            ))}
          </tbody>
        </table>
      </figcaption>
    </figure>
  );
}

export function Overview(props: { mode: Mode }) {
  const { data, error } = useLoad(
    () => api(props.mode).get('/api/v1/analytics/dashboard'),
    [props.mode],
  );
  if (error) return <ErrorBox error={error} />;
  if (!data) return <p aria-busy="true">Loading…</p>;
  const c = data.currency;
  const figures: [string, string][] = [
    ['Total volume', money(data.total_volume, c)],
    ['Net revenue', money(data.net_revenue, c)],
    ['Transactions', String(data.transaction_count)],
    ['Users', `${data.total_users} (${data.active_users} active)`],
    ['Wallets', `${data.wallets.total} (${data.wallets.active} active)`],
    ['Total balance', money(data.total_balance, c)],
  ];
  return (
    <section>
      <h1>Overview</h1>
      <dl class="figures">
        {figures.map(([label, value]) => (
          <div class="figure">
            <dt>{label}</dt>
            <dd data-figure={label}>{value}</dd>
          </div>
        ))}
      </dl>
      <VolumeChart days={data.volume_chart} currency={c} />
      <h2>Recent activity</h2>
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th>When</th>
              <th>Type</th>
              <th>Status</th>
              <th class="num">Amount</th>
            </tr>
          </thead>
          <tbody>
            {data.recent_activity.map((t) => (
              <tr>
                <td>
                  <Link to={`/transactions/${t.id}`}>{when(t.created_at)}</Link>
                </td>
                <td>{t.transaction_type}</td>
                <td>
                  <Status value={t.status} />
                </td>
                <td class="num">{money(t.amount)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
