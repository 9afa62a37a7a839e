import { readFileSync } from 'node:fs';
import path from 'node:path';
import { apiRoutes } from '../../src/api/app';
import { offlineDeps } from '../support/offline-deps';
import { EVENT_TYPES } from '../../src/domain/events';
import { RATE_LIMIT_CATEGORIES } from '../../src/domain/types';
import { SANDBOX_CARDS } from '../../src/providers/sandbox-card';

const API_MD = readFileSync(path.join(__dirname, '..', '..', 'docs', 'api.md'), 'utf8');

/** The text of one `## ` section of docs/api.md, up to the next one. */
function section(title: string): string {
  const start = API_MD.indexOf(`\n## ${title}\n`);
  expect(start).toBeGreaterThanOrEqual(0);
  const end = API_MD.indexOf('\n## ', start + 1);
  return API_MD.slice(start, end < 0 ? undefined : end);
}

/** The app's route list, built without a database or Temporal. */
function routes(): { route: string; category: string }[] {
  return apiRoutes(offlineDeps()).map((route) => ({
    route: `${route.method.toUpperCase()} ${route.path.replace(/:(\w+)/g, '{$1}')}`,
    category: route.auth ?? 'none',
  }));
}

/**
 * The endpoint table's routes with their category. A cell lists routes as `POST /a/{id}/enable`,
 * `…/disable` (the previous path's last segment replaced) or `GET`, `POST /a` (two methods).
 */
function documentedRoutes(): Map<string, string> {
  const documented = new Map<string, string>();
  const rows = section('Endpoints')
    .split('\n')
    .filter((line) => line.startsWith('| `'));
  for (const row of rows) {
    const [cell = '', categoryCell = ''] = row
      .split('|')
      .slice(1, 3)
      .map((text) => text.trim());
    const category = categoryCell.startsWith('none') ? 'none' : categoryCell.replace(/`/g, '');
    let methods: string[] = [];
    let last = { methods: [] as string[], path: '' };
    for (const [, span = ''] of cell.matchAll(/`([^`]+)`/g)) {
      const full = /^([A-Z]+) (\/\S*)$/.exec(span);
      if (/^[A-Z]+$/.test(span)) methods.push(span);
      else if (full) last = { methods: [...methods, full[1] ?? ''], path: full[2] ?? '' };
      else if (span.startsWith('…/')) last.path = last.path.replace(/\/[^/]+$/, span.slice(1));
      else throw new Error(`unreadable endpoint cell: ${cell}`);
      if (full || span.startsWith('…/')) {
        for (const method of last.methods) documented.set(`${method} ${last.path}`, category);
        methods = [];
      }
    }
  }
  return documented;
}

describe('docs/api.md', () => {
  test('the endpoint table lists every route of the app with its rate-limit category, and no other', () => {
    const documented = documentedRoutes();
    const served = routes();
    expect(served.filter(({ route }) => !documented.has(route))).toEqual([]);
    for (const { route, category } of served)
      expect([route, documented.get(route)]).toEqual([route, category]);
    const servedRoutes = new Set(served.map(({ route }) => route));
    expect([...documented.keys()].filter((route) => !servedRoutes.has(route))).toEqual([]);
  });

  test('the rate limits name every category with its default limit', () => {
    const conventions = section('API conventions');
    const limits = /\*\*Rate limits\.\*\*[^]*?(?=\n- \*\*)/
      .exec(conventions)![0]
      .replace(/\s+/g, ' ');
    const missing = Object.entries(RATE_LIMIT_CATEGORIES).filter(
      ([category, perMinute]) => !limits.includes(`\`${category}\` ${perMinute}`),
    );
    expect(missing).toEqual([]);
  });

  test('the webhooks section names every event kind a subscription may select', () => {
    const kinds =
      /The event kinds are ([^;]+);/.exec(section('Webhooks').replace(/\s+/g, ' '))?.[1] ?? '';
    const named = [...kinds.matchAll(/`([a-z_]+(?:\.[a-z_]+)+)`/g)].map(([, kind]) => kind);
    expect(named.sort()).toEqual([...EVENT_TYPES].sort());
  });

  test('the test cards list every sandbox payment method', () => {
    const cards = section('Test Mode sandbox');
    const named = [...cards.matchAll(/^\| `(pm_\w+)`/gm)].map(([, method]) => method);
    expect(named.sort()).toEqual(Object.keys(SANDBOX_CARDS).sort());
  });
});
