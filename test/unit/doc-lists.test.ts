import { readFileSync } from 'node:fs';
import path from 'node:path';
import { offlineDeps } from '../support/offline-deps';
import { dashboardOwnRoutes } from '../../src/api/dashboard/routes';
import { RECON_EXCEPTION_KINDS } from '../../src/db/recon-runs';
import { STRIPE_CARD_EVENT_TYPES, STRIPE_CASE_EVENT_TYPES } from '../../src/providers/stripe-card';
import { STRIPE_PAYOUT_EVENT_TYPES } from '../../src/providers/stripe-connect';
import { WORKFLOW_ID_PREFIXES } from '../../src/workflows/ids';

/**
 * The lists the docs keep of what the code defines, each compared with its source of truth. The
 * routes, the rate-limit categories and the event kinds of docs/api.md are in api-docs.test.ts.
 */
const ROOT = path.join(__dirname, '..', '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const spans = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map(([, span = '']) => span);
const sorted = (list: readonly string[]) => [...new Set(list)].sort();

/** The rows of the table whose header row starts with `| header`, as cells. */
function table(text: string, header: string): string[][] {
  const start = text.indexOf(`\n| ${header}`);
  expect(start).toBeGreaterThanOrEqual(0);
  const lines = text.slice(start + 1).split('\n');
  const end = lines.findIndex((line) => !line.startsWith('|'));
  return lines.slice(2, end).map((line) =>
    line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim()),
  );
}

describe('docs/operations.md', () => {
  const text = read('docs/operations.md');

  test("the Temporal UI guide's table names every workflow the worker runs, and each id prefix", () => {
    const rows = table(text, 'Payment');
    const types = rows.flatMap(([, , type = '']) => spans(type));
    const exported = [...read('src/workflows/index.ts').matchAll(/export \{([^}]+)\}/g)].flatMap(
      ([, names = '']) => names.split(',').map((name) => name.trim()),
    );
    expect(sorted(types)).toEqual(sorted(exported.filter(Boolean)));
    const ids = rows.flatMap(([, id = '']) => spans(id)).join(' ');
    const missing = Object.values(WORKFLOW_ID_PREFIXES).filter(
      (prefix) => !ids.includes(`${prefix}<`),
    );
    expect(missing).toEqual([]);
  });

  test('the reconciliation classes are the exception kinds and `matched`', () => {
    const classes = table(text, 'Class').flatMap(([name = '']) => spans(name));
    expect(sorted(classes)).toEqual(sorted(['matched', ...RECON_EXCEPTION_KINDS]));
  });

  test('a Live Mode Stripe endpoint subscribes to every event the engine reads', () => {
    const bullet = /\n- Live Mode cards need [^]*?(?=\n- )/.exec(text)?.[0] ?? '';
    const events = spans(bullet).filter((span) => /^[a-z_]+(\.[a-z_]+)+$/.test(span));
    expect(sorted(events)).toEqual(
      sorted([
        ...STRIPE_CARD_EVENT_TYPES,
        ...STRIPE_PAYOUT_EVENT_TYPES,
        ...STRIPE_CASE_EVENT_TYPES,
      ]),
    );
  });
});

describe('docs/api.md, Reconciliation', () => {
  const api = read('docs/api.md');
  const start = api.indexOf('\n## Reconciliation\n');
  const section = api.slice(start, api.indexOf('\n## ', start + 1)).replace(/\s+/g, ' ');

  test('the exception kinds are the kinds a run finds', () => {
    const kinds = /Kinds: (.*?)\. A later run/.exec(section)?.[1] ?? '';
    expect(sorted(spans(kinds))).toEqual(sorted(RECON_EXCEPTION_KINDS));
  });

  test("a run's counts are `matched` and each kind", () => {
    const counts = /`counts` `\{([^}]*)\}/.exec(section)?.[1] ?? '';
    expect(sorted(counts.split(',').map((name) => name.trim()))).toEqual(
      sorted(['matched', ...RECON_EXCEPTION_KINDS]),
    );
  });
});

describe('docs/dashboard.md', () => {
  test("the own endpoints' table lists every route of the dashboard's own, and no other", () => {
    const text = read('docs/dashboard.md');
    const documented = table(text, 'Endpoint').flatMap(([cell = '']) => {
      const methods = spans(cell).filter((span) => /^[A-Z]+$/.test(span));
      const [, method = '', route = ''] = /([A-Z]+) (\/\S+)/.exec(spans(cell).at(-1) ?? '') ?? [];
      return [...methods, method].map((each) => `${each} ${route}`);
    });
    const served = dashboardOwnRoutes(offlineDeps()).map(
      ({ method, path: route }) => `${method.toUpperCase()} ${route.replace(/:(\w+)/g, '{$1}')}`,
    );
    expect(sorted(documented)).toEqual(sorted(served));
  });
});
