import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { databaseTls, withCaFile } from '../db/connection';
import { derived, schemaOf, settingsOf, variable, type Settings } from './declare';

/**
 * The one place that reads the environment. Everything else receives a typed `Config`.
 */
const rootDir = path.resolve(__dirname, '../..');

/** A whole number, at least `min` (and at most `max`). */
function int(min: number, max?: number) {
  const number = z.coerce.number().int().min(min);
  return max === undefined ? number : number.max(max);
}

const port = int(0, 65535);
/** A switch: `true` or `1` turns it on, `false` or `0` off. */
const onOff = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

/** An empty variable counts as unset. */
function unsetIfEmpty<S extends z.ZodType>(schema: S) {
  return z.preprocess((value) => (value === '' ? undefined : value), schema);
}

const optionalString = unsetIfEmpty(z.string().optional());
const optionalUrl = unsetIfEmpty(z.string().url().optional());

// Variables that more than one setting reads.
const NODE_ENV = variable(
  'NODE_ENV',
  z.string().default('development'),
  'Where the engine runs. Only `development` and `test` generate `SANDBOX_WEBHOOK_SECRET` and `TEMPORAL_PAYLOAD_KEYS` when they are unset (anywhere else they are required), let the local Temporal UI call the codec endpoint and send the dashboard cookie without `Secure`; the Docker image sets `production`.',
);
const TEMPORAL_UI_PORT = variable(
  'TEMPORAL_UI_PORT',
  port.default(8233),
  'Web UI port of that dev server.',
);
const TEMPORAL_API_KEY = variable(
  'TEMPORAL_API_KEY',
  optionalString,
  "An API key of Temporal Cloud, sent as `authorization: Bearer <key>` on every call; implies TLS (the system's roots unless `TEMPORAL_TLS_CA`).",
  'unset',
);

/**
 * Every setting, declared once, so that `Config`, `loadConfig` and docs/configuration.md (in this
 * order, from each variable's `meta`) cannot disagree: see src/config/declare.ts.
 */
const declarations = {
  env: NODE_ENV,
  rootDir: derived({}, () => rootDir),
  dataDir: variable(
    'DATA_DIR',
    z
      .string()
      .default(path.join(rootDir, '.data'))
      .transform((dir) => path.resolve(dir)),
    "Local state of `npm start` and the CLI: the embedded Postgres (`pg/`), the dev server's `temporal.sqlite`, `demo-credentials.json`, the generated keys and the pid files.",
    '`.data` in the repository',
  ),
  log: {
    level: variable(
      'LOG_LEVEL',
      z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
      '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`. Logs are JSON lines (pino) on standard error, credential headers redacted; the CLI logs at `warn` when this is `info`.',
    ),
  },
  api: {
    port: variable('PORT', port.default(3000), 'Port of the API (`0`: any free port).'),
    host: variable(
      'HOST',
      z.string().default('0.0.0.0'),
      'Address the API and the metrics listeners listen on.',
    ),
    requestTimeoutMs: variable(
      'API_REQUEST_TIMEOUT_MS',
      int(100).default(30_000),
      "How long, in milliseconds (at least 100), the API waits for a payment workflow's answer before it answers 504; a retry with the same `Idempotency-Key` then gets the result.",
    ),
    /** How long a stopping API lets its requests finish. */
    shutdownGraceMs: variable(
      'API_SHUTDOWN_GRACE_MS',
      int(0).default(25_000),
      'How long, in milliseconds, a stopping API (SIGTERM or SIGINT) lets the requests it started finish before it closes their connections and exits; it refuses new connections and answers `/readyz` 503 at once (see [Rolling deploys](operations.md#rolling-deploys)).',
    ),
    /**
     * How many proxies in front of the API to believe in `X-Forwarded-For` (`false` 0, `true` 1,
     * or a number): the client address of rate limits and lockouts. At 0, X-Forwarded-Proto and
     * X-Forwarded-Host are ignored too.
     */
    trustProxy: variable(
      'TRUST_PROXY',
      z
        .string()
        .regex(/^(true|false|\d{1,2})$/, 'TRUST_PROXY must be true, false or a number of proxies')
        .default('false')
        .transform((v) => (v === 'true' ? 1 : v === 'false' ? 0 : Number(v))),
      "How many proxies in front of the API to believe in `X-Forwarded-For`, `-Proto` and `-Host`: `false` (none: the client address is the connection's peer), `true` (one) or a number. The client address counts for the lockouts and the per-address rate limits; set it only when every request comes through that many proxies.",
    ),
  },
  database: {
    /**
     * DATABASE_URL with DATABASE_SSL_CA folded in as libpq's `sslrootcert`, so that every path
     * that takes a connection URL carries it.
     */
    url: derived(
      {
        url: variable(
          'DATABASE_URL',
          z.string().url().optional(),
          'Postgres connection URL, required by `api`, `worker` and `migrate`. Unset, `npm start` and the CLI use the embedded Postgres; set, they use and migrate this database. Its `sslmode` is `disable` (the default), `require` (encrypted, any certificate), `verify-ca` (signed by a trusted CA) or `verify-full` (and issued for the host of the URL); see docs/operations.md, Postgres over TLS.',
        ),
        caFile: variable(
          'DATABASE_SSL_CA',
          z.string().optional(),
          "Path of the CA certificate (PEM) that signed the Postgres server's certificate, for a CA the system does not trust; it then replaces the system's CAs. Needs `sslmode=verify-ca` or `verify-full` in `DATABASE_URL`. Read when a process starts: a new CA takes a restart.",
        ),
      },
      databaseUrlOf,
    ),
    poolSize: variable(
      'DATABASE_POOL_SIZE',
      int(1, 200).default(20),
      'Maximum connections of each pool (1 to 200); the API and the worker each have their own.',
    ),
    /** How long opening a connection may take. */
    connectTimeoutMs: variable(
      'DATABASE_CONNECT_TIMEOUT_MS',
      int(100).default(1_500),
      'How long, in milliseconds (at least 100), opening a connection to Postgres may take before the request that needs it fails (503 at the API): a database that does not answer is noticed within this bound.',
    ),
    preparedStatements: variable(
      'DATABASE_PREPARED_STATEMENTS',
      onOff.default(true),
      '`true` or `false` (also `1`, `0`): whether the statements every payment runs are named prepared statements, parsed once per connection. Set `false` behind a pooler in transaction mode that cannot keep them (PgBouncer before 1.21, or without `max_prepared_statements`).',
    ),
    embeddedPort: variable(
      'EMBEDDED_PG_PORT',
      port.default(54329),
      "Port of the embedded Postgres on 127.0.0.1 (user and password `postgres`, database `wallet`). The engine itself connects through the server's Unix-domain socket in its data folder, or through TCP when that path would be too long.",
    ),
  },
  temporal: {
    address: variable(
      'TEMPORAL_ADDRESS',
      z.string().optional(),
      '`host:port` of a Temporal frontend. Unset, `npm start` runs the dev server, and `api` and `worker` connect to `127.0.0.1:TEMPORAL_PORT`.',
    ),
    namespace: variable(
      'TEMPORAL_NAMESPACE',
      z.string().default('default'),
      'Namespace of the workflows and search attributes; the dev server of `npm start` has only `default`.',
    ),
    /**
     * TLS to Temporal, its files read once at start; undefined: plaintext. An API key always
     * comes with TLS.
     */
    tls: derived(
      {
        cert: variable(
          'TEMPORAL_TLS_CERT',
          optionalString,
          'Path of the PEM client certificate for mutual TLS with Temporal (with `TEMPORAL_TLS_KEY`); turns TLS on. Read at start: restart the processes to rotate it (see [operations.md](operations.md#connecting-to-a-secured-temporal-mtls-temporal-cloud)).',
          'unset',
        ),
        key: variable(
          'TEMPORAL_TLS_KEY',
          optionalString,
          'Path of the PEM private key of `TEMPORAL_TLS_CERT`; required with it. Read at start, as the certificate.',
          'unset',
        ),
        ca: variable(
          'TEMPORAL_TLS_CA',
          optionalString,
          "Path of the PEM certificate(s) of the CA that signed Temporal's server certificate; turns TLS on. Unset, TLS trusts the system's roots.",
          "unset (the system's roots)",
        ),
        serverName: variable(
          'TEMPORAL_TLS_SERVER_NAME',
          optionalString,
          "The name Temporal's server certificate is checked against (and sent as SNI), when it is not the host of `TEMPORAL_ADDRESS`; turns TLS on.",
          'the host of `TEMPORAL_ADDRESS`',
        ),
        apiKey: TEMPORAL_API_KEY,
      },
      temporalTls,
    ),
    apiKey: TEMPORAL_API_KEY,
    /** The money queue. */
    taskQueue: variable(
      'TEMPORAL_TASK_QUEUE',
      z.string().min(1).default('payments'),
      'Task queue of the money movements (payments, escrow, onboarding, disputes); the API and every worker must agree on it (docs/operations.md, task queues).',
    ),
    webhookTaskQueue: variable(
      'TEMPORAL_WEBHOOK_TASK_QUEUE',
      z.string().min(1).default('webhooks'),
      'Task queue of the webhook deliveries and the outbox relay, so that a backlog of deliveries never waits in front of money.',
    ),
    maintenanceTaskQueue: variable(
      'TEMPORAL_MAINTENANCE_TASK_QUEUE',
      z.string().min(1).default('maintenance'),
      'Task queue of the maintenance work: the maintenance and reconciliation schedules, purges.',
    ),
    port: variable(
      'TEMPORAL_PORT',
      port.default(7233),
      'gRPC port of the dev server that `npm start` runs, and the address `api` and `worker` use when `TEMPORAL_ADDRESS` is unset.',
    ),
    uiPort: TEMPORAL_UI_PORT,
    workflowBundlePath: variable(
      'TEMPORAL_WORKFLOW_BUNDLE',
      z.string().optional(),
      'Path to a prebuilt workflow bundle (`bundleWorkflowCode` of `@temporalio/worker`), so that the worker does not bundle `src/workflows/` at start-up; the tests use it.',
    ),
    /**
     * Workflow tasks the worker runs at once, its pollers' included: a payment is started
     * eagerly on this worker only while one is free (src/worker/create-worker.ts).
     */
    workflowTaskSlots: variable(
      'TEMPORAL_WORKFLOW_TASK_SLOTS',
      int(20, 2000).default(200),
      "How many workflow tasks the worker runs at once (20 to 2000), its pollers' waits included. The API starts a payment eagerly on its own process's worker only while one is free; a free slot costs nothing.",
    ),
    /** How long a stopping worker lets its activities finish. */
    workerShutdownGraceMs: variable(
      'WORKER_SHUTDOWN_GRACE_MS',
      int(0).default(25_000),
      "How long, in milliseconds, a stopping worker (SIGTERM or SIGINT) lets its running activities finish after it stops polling (the SDK's `shutdownGraceTime`); then they are cancelled and retried elsewhere (see [Rolling deploys](operations.md#rolling-deploys)).",
    ),
    /**
     * AES-256-GCM keys of the payload codec (src/temporal/payload-codec.ts), by key id; the first
     * encrypts, any decrypts. Unset: one key kept in the data directory (development and tests
     * only, src/temporal/data-converter.ts).
     */
    payloadKeys: variable(
      'TEMPORAL_PAYLOAD_KEYS',
      unsetIfEmpty(
        z
          .string()
          .transform((text, ctx) => {
            const keys = parsePayloadKeys(text);
            if (typeof keys === 'string') {
              ctx.addIssue({ code: 'custom', message: keys });
              return z.NEVER;
            }
            return keys;
          })
          .optional(),
      ),
      '`id:base64key[,id:base64key...]`, each key 32 random bytes: the AES-256-GCM keys that encrypt every payload sent to Temporal; the first encrypts, any decrypts (see [temporal-codec.md](temporal-codec.md)). Required outside `development` and `test`; every API and worker needs the same list.',
      'unset (a key kept in `DATA_DIR`)',
    ),
    /** Reads payloads that are not encrypted, during a rollout only. */
    allowPlaintextPayloads: variable(
      'TEMPORAL_PAYLOAD_ALLOW_PLAINTEXT',
      z
        .enum(['true', 'false'])
        .default('false')
        .transform((v) => v === 'true'),
      '`true` only while moving to encryption: payloads that are not encrypted (histories and schedules written before it) are read as they are. `false` refuses them, as a payload anyone with access to Temporal could have written (see [temporal-codec.md](temporal-codec.md)).',
    ),
    /**
     * Browser origins of the Temporal UIs allowed to call the codec endpoint; by default the
     * local UI in development and tests.
     */
    codecAllowedOrigins: derived(
      {
        origins: variable(
          'TEMPORAL_CODEC_ALLOWED_ORIGINS',
          z
            .string()
            .refine(
              (v) => v.split(',').every((o) => !o.trim() || isOrigin(o.trim())),
              'TEMPORAL_CODEC_ALLOWED_ORIGINS must be origins such as https://temporal-ui.example.com, comma separated',
            )
            .optional(),
          'Comma-separated browser origins of the Temporal UIs that may call the codec endpoint `/api/v1/temporal-codec`.',
          'the local UI in development and tests, else none',
        ),
        env: NODE_ENV,
        uiPort: TEMPORAL_UI_PORT,
      },
      ({ origins, env, uiPort }) =>
        origins === undefined
          ? isLocalEnv(env)
            ? [`http://localhost:${uiPort}`, `http://127.0.0.1:${uiPort}`]
            : []
          : origins
              .split(',')
              .map((o) => o.trim().replace(/\/$/, ''))
              .filter(Boolean),
    ),
  },
  fx: {
    slePerUsd: variable(
      'FX_SLE_PER_USD',
      z
        .string()
        .regex(/^\d+(\.\d{1,2})?$/, 'FX_SLE_PER_USD must be a decimal with at most 2 decimals')
        .default('24.00'),
      "How many SLE one USD buys, with at most 2 decimals. Mobile-money amounts of a USD application are converted at this rate (banker's rounding to the cent), and the rate is recorded on the payment.",
    ),
  },
  providers: {
    monime: {
      baseUrl: variable(
        'MONIME_API_URL',
        z.string().url().default('https://api.monime.io'),
        'Base URL of the Live Mode mobile-money provider (a Monime-style API).',
      ),
      accessToken: variable(
        'MONIME_ACCESS_TOKEN',
        optionalString,
        'Bearer token of the Live Mode mobile-money provider. Live Mode mobile money works only when it, `MONIME_SPACE_ID` and `MONIME_WEBHOOK_SECRET` are all set (empty counts as unset); otherwise it answers 503 and writes nothing.',
      ),
      spaceId: variable(
        'MONIME_SPACE_ID',
        optionalString,
        'The provider account (space) the token belongs to, sent as `Monime-Space-Id`.',
      ),
      webhookSecret: variable(
        'MONIME_WEBHOOK_SECRET',
        optionalString,
        "Secret that checks the `monime-signature` of the provider's notifications.",
      ),
      timeoutMs: variable(
        'MONIME_TIMEOUT_MS',
        int(1).default(10_000),
        'Timeout of one HTTP call to the live mobile-money provider, in milliseconds; Temporal retries failed calls, each with its idempotency key.',
      ),
    },
    stripe: {
      secretKey: variable(
        'STRIPE_SECRET_KEY',
        optionalString,
        'Secret key of the Live Mode card provider (Stripe). Live Mode cards work only when it and `STRIPE_WEBHOOK_SECRET` are both set (empty counts as unset); otherwise a Live Mode card call answers 503 and writes nothing.',
      ),
      webhookSecret: variable(
        'STRIPE_WEBHOOK_SECRET',
        optionalString,
        'Signing secret that checks the `Stripe-Signature` of `POST /api/v1/webhooks/providers/card`. Subscribe the endpoint to the `payment_intent` events `succeeded`, `payment_failed`, `requires_action`, `processing` and `canceled`, to `payout.paid`, `payout.failed` and `payout.canceled`, and to the refund and dispute events (`refund.created`, `refund.updated`, `refund.failed`, `charge.refund.updated`, `charge.dispute.created`, `charge.dispute.updated`, `charge.dispute.closed`).',
      ),
      /** Where the stripe client sends its requests (an emulator in tests); Stripe's own if unset. */
      api: variable(
        'STRIPE_API_BASE',
        unsetIfEmpty(
          z
            .string()
            .url()
            .refine(
              (url) => /^https?:$/.test(new URL(url).protocol),
              'STRIPE_API_BASE must be http(s)',
            )
            .optional(),
        ).transform((base) => (base ? parseStripeApiBase(base) : undefined)),
        'Where the stripe client sends its requests, as an http(s) URL (`http://127.0.0.1:8420`); the tests point it at localstripe.',
        'unset (Stripe)',
      ),
      timeoutMs: variable(
        'STRIPE_TIMEOUT_MS',
        int(1).default(20_000),
        'Timeout of one call to Stripe, in milliseconds. The client does not retry by itself: Temporal does, each call with its idempotency key.',
      ),
    },
  },
  sandbox: {
    /**
     * Unset only in development and tests, which generate one per data directory
     * (src/crypto/secret-box.ts); a public default would let anyone sign sandbox notifications.
     */
    webhookSecret: derived(
      {
        secret: variable(
          'SANDBOX_WEBHOOK_SECRET',
          unsetIfEmpty(
            z.string().min(16, 'SANDBOX_WEBHOOK_SECRET must be at least 16 characters').optional(),
          ),
          'Secret (at least 16 characters) the Test Mode sandbox provider signs its notifications with. Unset, one is generated per data directory in development and tests; required anywhere else, the same for the API and the worker.',
          'unset (a secret kept in `DATA_DIR`)',
        ),
        env: NODE_ENV,
      },
      ({ secret, env }, problems) => {
        if (!secret && !isLocalEnv(env)) {
          problems.push(
            `SANDBOX_WEBHOOK_SECRET: required when NODE_ENV is ${env} (only ` +
              'development and test generate one); the API and the worker must share it',
          );
        }
        return secret;
      },
    ),
    paymentCodeTtlSeconds: variable(
      'SANDBOX_PAYMENT_CODE_TTL_SECONDS',
      int(1).default(30 * 60),
      'How long a mobile-money payment code lives, in seconds; an unpaid deposit then becomes `expired`. The live provider is given it too.',
    ),
  },
  /** How long a card payment may wait for the payer (3-D Secure) before it expires. */
  cards: {
    pendingTtlSeconds: variable(
      'CARD_PAYMENT_PENDING_TTL_SECONDS',
      int(1).default(60 * 60),
      'How long a card payment may wait for the payer (3-D Secure), in seconds. Then the workflow asks the provider once more, cancels a payment still waiting, and the deposit becomes `expired`.',
    ),
  },
  /**
   * What one wallet may keep of verification documents: an upload past either is refused,
   * nothing stored.
   */
  onboarding: {
    documentsPerWallet: variable(
      'ONBOARDING_DOCUMENTS_PER_WALLET',
      int(1).default(20),
      'Verification documents a wallet may keep; one more answers 400 and stores nothing.',
    ),
    documentBytesPerWallet: variable(
      'ONBOARDING_DOCUMENT_BYTES_PER_WALLET',
      int(10 * 1024 * 1024).default(50 * 1024 * 1024),
      'Bytes of verification documents a wallet may keep in all (at least 10 MiB).',
    ),
  },
  /** How long a payout or cashout the provider accepted waits for its outcome before asking. */
  moneyOut: {
    pendingTtlSeconds: variable(
      'MONEY_OUT_PENDING_TTL_SECONDS',
      int(1).default(30 * 60),
      "How long a cashout or Live Mode card payout the provider accepted waits for its outcome, in seconds, before the saga asks the provider itself, and again each period while it says pending. Money is never given back without the provider's word.",
    ),
  },
  webhooks: {
    /**
     * AES-256-GCM key that encrypts subscription and TOTP secrets at rest; unset: a key generated
     * once and kept in the data directory (development and tests, see src/crypto/secret-box.ts).
     */
    secretKey: variable(
      'WEBHOOK_SECRET_KEY',
      unsetIfEmpty(
        z
          .string()
          .refine(
            (v) => /^[A-Za-z0-9+/]+={0,2}$/.test(v) && Buffer.from(v, 'base64').length === 32,
            'WEBHOOK_SECRET_KEY must be the base64 of 32 bytes',
          )
          .optional(),
      ).transform((key) => (key ? Buffer.from(key, 'base64') : undefined)),
      "The base64 of 32 bytes (`openssl rand -base64 32`): the key that encrypts webhook subscription secrets and dashboard two-step (TOTP) secrets at rest. Set it in production, the same for the API and the worker, and keep it out of the database's backups; unset, a key is generated once and kept in `DATA_DIR`.",
      'unset (a key kept in `DATA_DIR`)',
    ),
    /** IPs or CIDR ranges the SSRF guard lets through (local development, tests). */
    privateAllowlist: variable(
      'WEBHOOK_PRIVATE_ALLOWLIST',
      z
        .string()
        .default('')
        .transform((list) =>
          list
            .split(',')
            .map((entry) => entry.trim())
            .filter(Boolean),
        ),
      'Comma-separated IPs or CIDR ranges (`127.0.0.1/32,::1`) that the webhook URL guard lets through although they are private or internal, for local development and tests. Leave it empty in production.',
      'empty',
    ),
    /** Attempts a webhook worker runs at once, and to one endpoint (src/outbound/endpoint-gate.ts). */
    attemptsPerWorker: variable(
      'WEBHOOK_ATTEMPTS_PER_WORKER',
      int(1, 1000).default(32),
      "Webhook delivery attempts a webhook worker process runs at once (1 to 1000), besides the outbox relay; the rest wait in Temporal's queue. An attempt holds no database connection while it waits for the endpoint.",
    ),
    attemptsPerEndpoint: variable(
      'WEBHOOK_ATTEMPTS_PER_ENDPOINT',
      int(1, 1000).default(4),
      "Attempts to one subscription's endpoint a worker process runs at once (1 to 1000), so that a slow or dead endpoint never holds more of the worker (one while its last attempt failed): one more goes back to Temporal's queue for about as long as those ahead of it take, its delivery's `next_attempt_at` saying when.",
    ),
    /** `cli webhooks listen`: its read without a notification, its registration's lifetime. */
    listen: {
      safetyReadSeconds: variable(
        'WEBHOOKS_LISTEN_SAFETY_READ_SECONDS',
        int(1, 3600).default(5),
        '`cli webhooks listen` (1 to 3600): how long it waits without a notification before reading the events table anyway, in case a notification was lost with its connection.',
      ),
      leaseSeconds: variable(
        'WEBHOOKS_LISTEN_LEASE_SECONDS',
        int(2, 3600).default(120),
        '`cli webhooks listen` (2 to 3600): how long its registration lasts (the events of its application and mode notify it while it does); it renews it every quarter of this, so a killed command stops being notified at most this long after.',
      ),
    },
  },
  /** The `reconciliation` schedule (src/worker/schedules.ts, src/workflows/reconciliation.ts). */
  reconciliation: {
    /** How often the schedule starts a run. */
    intervalSeconds: variable(
      'RECONCILIATION_INTERVAL_SECONDS',
      int(1).default(5 * 60),
      'How often the `reconciliation` schedule starts a run, in seconds. Read when the worker creates the schedule: an existing schedule keeps its interval (update or delete it).',
    ),
    /** A payment is reconciled once it has been pending this long. */
    graceSeconds: variable(
      'RECONCILIATION_GRACE_SECONDS',
      int(0).default(5 * 60),
      "A payment is reconciled once it has been `pending` this long, in seconds; a younger one is left to its provider's notification.",
    ),
    /** How many payments a run syncs with their providers at once. */
    concurrency: variable(
      'RECONCILIATION_CONCURRENCY',
      int(1, 64).default(4),
      'How many payments one reconciliation run syncs with their providers at once (1 to 64); keep it under `DATABASE_POOL_SIZE`.',
    ),
    /**
     * An unmatched provider notification is retried for this long after it arrived; the
     * maintenance schedule then deletes it.
     */
    notificationRetentionHours: variable(
      'NOTIFICATION_RETRY_HOURS',
      int(1).default(72),
      'How long, in hours, the reconciliation retries a provider notification that matched no payment.',
    ),
    /**
     * How long a provider notification that reached its payment (or never could) is kept for
     * operators before the maintenance schedule deletes it.
     */
    notificationKeepDays: variable(
      'NOTIFICATION_KEEP_DAYS',
      int(1).default(30),
      'Days a matched or ignored provider notification is kept before the maintenance schedule deletes it; unmatched ones go once the reconciliation stops retrying them, unapplied ones are never deleted (an operator settles them).',
    ),
  },
  /** Bulk payments (src/workflows/batch.ts). */
  batches: {
    /** Items of one batch in flight at once. */
    itemsInFlight: variable(
      'BATCH_ITEMS_IN_FLIGHT',
      int(1, 500).default(50),
      'How many items of one bulk payment run at once (1 to 500): the batch starts the next item as one ends (a transfer batch, the next page of half as many as a page ends).',
    ),
  },
  /** The web dashboard at /dashboard (src/api/dashboard/). */
  dashboard: {
    /** The session cookie carries `Secure`: always, except in local development and tests. */
    secureCookie: derived(
      {
        secure: variable(
          'DASHBOARD_SECURE_COOKIE',
          z.enum(['true', 'false']).optional(),
          "`true` or `false`: whether the dashboard's session cookie carries `Secure` (HTTPS only). Set `false` only for local development over plain HTTP.",
          '`true`, but `false` when `NODE_ENV` is `development` or `test`',
        ),
        env: NODE_ENV,
      },
      ({ secure, env }) => (secure ? secure === 'true' : !isLocalEnv(env)),
    ),
    /** Where the build made at install time lives (dashboard/dist). */
    distDir: variable(
      'DASHBOARD_DIST_DIR',
      z
        .string()
        .default(path.join(rootDir, 'dashboard', 'dist'))
        .transform((dir) => path.resolve(dir)),
      "Where the API finds the dashboard's build; without one, `/dashboard` answers 503 saying how to make it.",
      '`dashboard/dist` in the repository',
    ),
  },
  /**
   * Requests a minute of callers that no credential names, counted like the applications'
   * (src/db/rate-limit.ts): per client address before a dashboard session (signing in included) and
   * on the 3-D Secure page, per account after. See docs/security.md, Throttles and lockouts.
   */
  throttles: {
    cardAuthenticationPage: variable(
      'RATE_LIMIT_CARD_AUTHENTICATION_PAGE',
      int(1).default(30),
      "Requests a minute per client address on the sandbox's 3-D Secure page.",
    ),
    dashboardSignedOut: variable(
      'RATE_LIMIT_DASHBOARD_SIGNED_OUT',
      int(1).default(30),
      'Dashboard API requests a minute per client address without a session, signing in included.',
    ),
    dashboardAccount: variable(
      'RATE_LIMIT_DASHBOARD_ACCOUNT',
      int(1).default(120),
      'Dashboard API requests a minute per signed-in account.',
    ),
  },
  /**
   * How many an application may have per mode: active credentials (revoked and expired ones do
   * not count) and webhook subscriptions, inactive ones included (each one is another signed
   * POST of every event).
   */
  caps: {
    credentials: variable(
      'MAX_CREDENTIALS_PER_MODE',
      int(1).default(20),
      'Active credentials (not revoked, not expired) an application may have per mode; one more answers 400.',
    ),
    webhookSubscriptions: variable(
      'MAX_WEBHOOK_SUBSCRIPTIONS_PER_MODE',
      int(1).default(16),
      'Webhook subscriptions, inactive ones included, an application may have per mode; one more answers 400.',
    ),
  },
  /**
   * The transactions export (at most the contract's limit of rows) and how many rows it writes
   * at a time: the cursor is read on once a chunk has drained. How many stream at once, per
   * application and per process, and for how long at most.
   */
  exports: {
    maxRows: variable(
      'EXPORT_MAX_ROWS',
      int(1, 1_000_000).default(1_000_000),
      'Rows a transactions export may hold; a filter selecting more answers 422 naming the limit.',
    ),
    chunkRows: variable(
      'EXPORT_BATCH_ROWS',
      int(1, 50_000).default(500),
      'Rows a transactions export writes to the client at a time, read from one database cursor.',
    ),
    perApplication: variable(
      'EXPORT_MAX_PER_APPLICATION',
      int(1).default(2),
      'Transactions exports one application (both modes) may have streaming at a time; one more answers 429 with `Retry-After`.',
    ),
    perProcess: variable(
      'EXPORT_MAX_PER_PROCESS',
      int(1).default(4),
      'Transactions exports one API process streams at a time, each holding a database connection; one more answers 429 with `Retry-After`. Keep it well below `DATABASE_POOL_SIZE`.',
    ),
    timeLimitMs: variable(
      'EXPORT_TIME_LIMIT_SECONDS',
      int(1)
        .default(900)
        .transform((seconds) => seconds * 1000),
      'How long a transactions export may stream: past it the API stops it and closes the connection, so that a client reading slowly or not at all frees its slot and its database connection.',
    ),
  },
  /**
   * Prometheus metrics (src/observability/metrics.ts), counted when `enabled`, each process's on a
   * listener of its own, never the API's public port: the API's on `apiPort`, the worker's
   * (with the Temporal SDK's metrics) on `workerPort`; off when unset.
   */
  metrics: {
    enabled: variable(
      'METRICS_ENABLED',
      onOff.default(true),
      '`true` or `false` (also `1`, `0`): whether the API counts HTTP requests and serves its metrics on `API_METRICS_PORT` (see [Metrics](operations.md#metrics)).',
    ),
    workerPort: variable(
      'WORKER_METRICS_PORT',
      port.optional(),
      "Port of the worker's metrics endpoint (`npm run worker`), on `HOST`: the engine's metrics the worker counts and the Temporal SDK's own. Unset: no endpoint.",
      'unset (off)',
    ),
    apiPort: variable(
      'API_METRICS_PORT',
      port.optional(),
      "Port of the API's metrics listener, on `HOST`, apart from its public port. Unset: the API serves no metrics.",
      'unset (off)',
    ),
  },
  /**
   * OpenTelemetry tracing through the Temporal SDK's interceptors (src/observability/tracing.ts):
   * spans go by OTLP/HTTP to `endpoint`; off (no interceptor installed) when it is unset.
   */
  tracing: {
    endpoint: derived(
      {
        traces: variable(
          'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
          optionalUrl,
          'Full URL the spans are posted to (OTLP/HTTP, JSON), such as `http://collector:4318/v1/traces`; turns tracing on (see [Tracing](operations.md#tracing)).',
          'unset (off)',
        ),
        base: variable(
          'OTEL_EXPORTER_OTLP_ENDPOINT',
          optionalUrl,
          'OTLP/HTTP base URL: the spans go to `<it>/v1/traces` when `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is unset; turns tracing on.',
          'unset (off)',
        ),
      },
      ({ traces, base }) => traces ?? (base && `${base.replace(/\/+$/, '')}/v1/traces`),
    ),
    serviceName: variable(
      'OTEL_SERVICE_NAME',
      unsetIfEmpty(z.string().default('wallet-payments-engine')),
      'The `service.name` of the spans; give the API and the worker each their own.',
    ),
  },
};

/** Every variable the engine reads, by name: what parses the environment, and its reference. */
export const envSchema = schemaOf(declarations);

export type Config = Settings<typeof declarations>;

/** TLS to Temporal as the SDK's `tls` option takes it: the files' bytes, read at start. */
export type TemporalTls = {
  clientCertPair?: { crt: Buffer; key: Buffer };
  serverRootCACertificate?: Buffer;
  serverNameOverride?: string;
};

/** A configuration that cannot work: its message is one line naming the setting. */
export class ConfigurationError extends Error {
  override name = 'ConfigurationError';
}

/** What a process prints when it cannot start: one line for a configuration, else the stack. */
export function startFailure(error: unknown): string {
  if (error instanceof ConfigurationError) return error.message;
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}

/** The file a setting names, checked as PEM: the bytes, or what is wrong with it. */
function readPem(
  setting: string,
  file: string,
  check: (bytes: Buffer) => unknown,
): Buffer | string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    return `${setting}: cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`;
  }
  try {
    check(bytes);
  } catch (error) {
    return `${setting}: ${file} is not valid PEM: ${(error as Error).message}`;
  }
  return bytes;
}

/** The `TEMPORAL_TLS_*` files read and checked (a key that is not the certificate's too). */
function temporalTls(
  e: { cert?: string; key?: string; ca?: string; serverName?: string; apiKey?: string },
  problems: string[],
): TemporalTls | undefined {
  if ((e.cert ?? e.key ?? e.ca ?? e.serverName ?? e.apiKey) === undefined) return undefined;
  const tls: TemporalTls = {};
  if (e.serverName) tls.serverNameOverride = e.serverName;
  if (e.ca) {
    const ca = readPem('TEMPORAL_TLS_CA', e.ca, (b) => new X509Certificate(b));
    if (typeof ca === 'string') problems.push(ca);
    else tls.serverRootCACertificate = ca;
  }
  if (!e.cert !== !e.key) {
    problems.push(
      e.cert
        ? 'TEMPORAL_TLS_KEY: required with TEMPORAL_TLS_CERT'
        : 'TEMPORAL_TLS_CERT: required with TEMPORAL_TLS_KEY',
    );
  } else if (e.cert && e.key) {
    const crt = readPem('TEMPORAL_TLS_CERT', e.cert, (b) => new X509Certificate(b));
    const key = readPem('TEMPORAL_TLS_KEY', e.key, (b) => createPrivateKey(b));
    if (typeof crt === 'string') problems.push(crt);
    if (typeof key === 'string') problems.push(key);
    if (typeof crt !== 'string' && typeof key !== 'string') {
      if (new X509Certificate(crt).checkPrivateKey(createPrivateKey(key))) {
        tls.clientCertPair = { crt, key };
      } else {
        problems.push(`TEMPORAL_TLS_KEY: ${e.key} is not the key of TEMPORAL_TLS_CERT ${e.cert}`);
      }
    }
  }
  return tls;
}

/** A payload encryption key: its id travels in each encrypted payload's metadata. */
export type PayloadKey = { id: string; key: Buffer };

const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** `id:base64key[,id:base64key...]` into keys, or what is wrong with it. */
export function parsePayloadKeys(text: string): PayloadKey[] | string {
  const keys: PayloadKey[] = [];
  for (const entry of text.split(',').map((e) => e.trim())) {
    const at = entry.indexOf(':');
    const id = entry.slice(0, at);
    const base64 = entry.slice(at + 1);
    if (at < 0 || !KEY_ID.test(id)) {
      return 'TEMPORAL_PAYLOAD_KEYS must be id:base64key pairs, comma separated (ids: letters, digits, . _ -)';
    }
    const key = Buffer.from(base64, 'base64');
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64) || key.length !== 32) {
      return `TEMPORAL_PAYLOAD_KEYS: the key ${id} must be the base64 of 32 bytes`;
    }
    if (keys.some((k) => k.id === id)) return `TEMPORAL_PAYLOAD_KEYS: the key id ${id} is repeated`;
    keys.push({ id, key });
  }
  return keys;
}

/** Keys as `TEMPORAL_PAYLOAD_KEYS` writes them (`parsePayloadKeys` reads them back). */
export function formatPayloadKeys(keys: readonly PayloadKey[]): string {
  return keys.map(({ id, key }) => `${id}:${key.toString('base64')}`).join(',');
}

function isOrigin(text: string): boolean {
  try {
    return new URL(text).origin === text.replace(/\/$/, '');
  } catch {
    return false;
  }
}

/**
 * Local development and tests: settings that production must give may be generated, cookies go
 * without `Secure`.
 */
export function isLocalEnv(env: string): boolean {
  return ['development', 'test'].includes(env);
}

export type StripeApiBase = { host: string; port: number; protocol: 'http' | 'https' };

/** `http://127.0.0.1:8420` → the host, port and protocol the stripe client takes. */
export function parseStripeApiBase(base: string): StripeApiBase {
  const url = new URL(base);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  const port = url.port ? Number(url.port) : protocol === 'http' ? 80 : 443;
  // A bracketed IPv6 literal is given to the client without its brackets.
  return { host: url.hostname.replace(/^\[(.*)\]$/, '$1'), port, protocol };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
  // The settings derived from several variables are made only of variables that are valid.
  const config = parsed.success ? settingsOf(declarations, parsed.data, problems) : undefined;
  if (!config || problems.length > 0) {
    throw new ConfigurationError(`Invalid configuration: ${problems.join('; ')}`);
  }
  return config;
}

/**
 * DATABASE_URL with DATABASE_SSL_CA folded in as libpq's `sslrootcert`, so that every path that
 * takes a connection URL carries it; a TLS setting that cannot work is one of `problems`.
 */
function databaseUrlOf(
  e: { url: string | undefined; caFile: string | undefined },
  problems: string[],
): string | undefined {
  const caFile = e.caFile || undefined;
  if (e.url === undefined) {
    if (caFile !== undefined) problems.push('DATABASE_SSL_CA: needs DATABASE_URL');
    return undefined;
  }
  // A child process may get both: the URL this function made, and the variable it came from.
  const named = new URL(e.url).searchParams.get('sslrootcert');
  if (caFile !== undefined && named !== null && named !== path.resolve(caFile)) {
    problems.push('DATABASE_SSL_CA: DATABASE_URL names another CA (sslrootcert)');
    return undefined;
  }
  const url = caFile === undefined ? e.url : withCaFile(e.url, path.resolve(caFile));
  try {
    databaseTls(url);
  } catch (error) {
    problems.push(error instanceof Error ? error.message : String(error));
  }
  return url;
}

/** Requires a database URL: production entry points refuse to guess. */
export function requireDatabaseUrl(config: Config): string {
  if (!config.database.url) {
    throw new Error('DATABASE_URL is not set (npm start sets it for the embedded Postgres)');
  }
  return config.database.url;
}

export function temporalAddress(config: Config): string {
  return config.temporal.address ?? `127.0.0.1:${config.temporal.port}`;
}
