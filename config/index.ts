import path from 'node:path';
import { z } from 'zod';

/**
 * The one place that reads the environment. Everything else receives a typed `Config`.
 */
const rootDir = path.resolve(__dirname, '..');

const port = z.coerce.number().int().min(0).max(65535);
/** A switch: `true` or `1` turns it on, `false` or `0` off. */
const onOff = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

/** An empty variable counts as unset. */
const optionalUrl = z.preprocess(
  (value) => (value === '' ? undefined : value),
  z.string().url().optional(),
);

const envSchema = z.object({
  NODE_ENV: z.string().default('development'),
  PORT: port.default(3000),
  HOST: z.string().default('0.0.0.0'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATA_DIR: z.string().default(path.join(rootDir, '.data')),
  DATABASE_URL: z.string().url().optional(),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(20),
  DATABASE_PREPARED_STATEMENTS: onOff.default(true),
  EMBEDDED_PG_PORT: port.default(54329),
  TEMPORAL_ADDRESS: z.string().optional(),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('payments'),
  TEMPORAL_PORT: port.default(7233),
  TEMPORAL_UI_PORT: port.default(8233),
  TEMPORAL_WORKFLOW_BUNDLE: z.string().optional(),
  TEMPORAL_WORKFLOW_STACK_TRACES: onOff.default(false),
  TEMPORAL_WORKFLOW_TASK_SLOTS: z.coerce.number().int().min(20).max(2000).default(200),
  TEMPORAL_PAYLOAD_KEYS: z.preprocess(
    (value) => (value === '' ? undefined : value),
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
  TEMPORAL_CODEC_ALLOWED_ORIGINS: z
    .string()
    .refine(
      (v) => v.split(',').every((o) => !o.trim() || isOrigin(o.trim())),
      'TEMPORAL_CODEC_ALLOWED_ORIGINS must be origins such as https://temporal-ui.example.com, comma separated',
    )
    .optional(),
  FX_SLE_PER_USD: z
    .string()
    .regex(/^\d+(\.\d{1,2})?$/, 'FX_SLE_PER_USD must be a decimal with at most 2 decimals')
    .default('24.00'),
  API_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  MONIME_API_URL: z.string().url().default('https://api.monime.io'),
  MONIME_ACCESS_TOKEN: z.string().optional(),
  MONIME_SPACE_ID: z.string().optional(),
  MONIME_WEBHOOK_SECRET: z.string().optional(),
  MONIME_TIMEOUT_MS: z.coerce.number().int().min(1).default(10_000),
  STRIPE_SECRET_KEY: z.string().optional(),
  STRIPE_WEBHOOK_SECRET: z.string().optional(),
  STRIPE_API_BASE: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z
      .string()
      .url()
      .refine((url) => /^https?:$/.test(new URL(url).protocol), 'STRIPE_API_BASE must be http(s)')
      .optional(),
  ),
  STRIPE_TIMEOUT_MS: z.coerce.number().int().min(1).default(20_000),
  /**
   * Signs and verifies the Test Mode sandbox's provider notifications. Unset: generated once per
   * data directory in development and tests; required anywhere else (a public default would let
   * anyone sign sandbox notifications).
   */
  SANDBOX_WEBHOOK_SECRET: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z.string().min(16, 'SANDBOX_WEBHOOK_SECRET must be at least 16 characters').optional(),
  ),
  SANDBOX_PAYMENT_CODE_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(30 * 60),
  CARD_PAYMENT_PENDING_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(60 * 60),
  ONBOARDING_DOCUMENTS_PER_WALLET: z.coerce.number().int().min(1).default(20),
  ONBOARDING_DOCUMENT_BYTES_PER_WALLET: z.coerce
    .number()
    .int()
    .min(10 * 1024 * 1024)
    .default(50 * 1024 * 1024),
  MONEY_OUT_PENDING_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(30 * 60),
  WEBHOOK_SECRET_KEY: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z
      .string()
      .refine(
        (v) => /^[A-Za-z0-9+/]+={0,2}$/.test(v) && Buffer.from(v, 'base64').length === 32,
        'WEBHOOK_SECRET_KEY must be the base64 of 32 bytes',
      )
      .optional(),
  ),
  WEBHOOK_PRIVATE_ALLOWLIST: z.string().default(''),
  RECONCILIATION_INTERVAL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(5 * 60),
  RECONCILIATION_GRACE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .default(5 * 60),
  RECONCILIATION_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  NOTIFICATION_RETRY_HOURS: z.coerce.number().int().min(1).default(72),
  NOTIFICATION_KEEP_DAYS: z.coerce.number().int().min(1).default(30),
  DASHBOARD_SECURE_COOKIE: z.enum(['true', 'false']).optional(),
  DASHBOARD_DIST_DIR: z.string().default(path.join(rootDir, 'dashboard', 'dist')),
  TRUST_PROXY: z
    .string()
    .regex(/^(true|false|\d{1,2})$/, 'TRUST_PROXY must be true, false or a number of proxies')
    .default('false'),
  RATE_LIMIT_CARD_AUTHENTICATION_PAGE: z.coerce.number().int().min(1).default(30),
  RATE_LIMIT_DASHBOARD_SIGNED_OUT: z.coerce.number().int().min(1).default(30),
  RATE_LIMIT_DASHBOARD_ACCOUNT: z.coerce.number().int().min(1).default(120),
  MAX_CREDENTIALS_PER_MODE: z.coerce.number().int().min(1).default(20),
  MAX_WEBHOOK_SUBSCRIPTIONS_PER_MODE: z.coerce.number().int().min(1).default(16),
  METRICS_ENABLED: onOff.default(true),
  WORKER_METRICS_PORT: port.optional(),
  API_METRICS_PORT: port.optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: optionalUrl,
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl,
  OTEL_SERVICE_NAME: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z.string().default('wallet-payments-engine'),
  ),
});

export type Config = {
  env: string;
  rootDir: string;
  dataDir: string;
  api: {
    port: number;
    host: string;
    requestTimeoutMs: number;
    /**
     * How many proxies in front of the API to believe in `X-Forwarded-For` (`TRUST_PROXY`:
     * `false` 0, `true` 1, or a number): the client address of rate limits and lockouts. At 0,
     * X-Forwarded-Proto and X-Forwarded-Host are ignored too.
     */
    trustProxy: number;
  };
  log: { level: z.infer<typeof envSchema>['LOG_LEVEL'] };
  /**
   * Requests a minute of callers that no credential names, counted like the applications'
   * (db/rate-limit.ts): per client address (its /64 for IPv6) on the sandbox's 3-D Secure page
   * (`RATE_LIMIT_CARD_AUTHENTICATION_PAGE`) and on the dashboard without a session, signing in
   * included (`RATE_LIMIT_DASHBOARD_SIGNED_OUT`); per dashboard account once signed in
   * (`RATE_LIMIT_DASHBOARD_ACCOUNT`).
   */
  throttles: {
    cardAuthenticationPage: number;
    dashboardSignedOut: number;
    dashboardAccount: number;
  };
  /**
   * How many an application may have per mode: active credentials (`MAX_CREDENTIALS_PER_MODE`;
   * revoked and expired ones do not count) and webhook subscriptions, inactive ones included
   * (`MAX_WEBHOOK_SUBSCRIPTIONS_PER_MODE`: each one is another signed POST of every event).
   */
  caps: { credentials: number; webhookSubscriptions: number };
  /**
   * Prometheus metrics (observability/metrics.ts), counted when `enabled`, each process's on a
   * listener of its own, never the API's public port: the API's on `apiPort`, the worker's
   * (with the Temporal SDK's metrics) on `workerPort`; off when unset.
   */
  metrics: { enabled: boolean; workerPort: number | undefined; apiPort: number | undefined };
  /**
   * OpenTelemetry tracing through the Temporal SDK's interceptors (observability/tracing.ts):
   * spans go by OTLP/HTTP to `endpoint`; off (no interceptor installed) when it is unset.
   */
  tracing: { endpoint: string | undefined; serviceName: string };
  database: {
    url: string | undefined;
    poolSize: number;
    preparedStatements: boolean;
    embeddedPort: number;
  };
  temporal: {
    address: string | undefined;
    namespace: string;
    taskQueue: string;
    port: number;
    uiPort: number;
    workflowBundlePath: string | undefined;
    /** The SDK's promise hook for the UI's "Stack Trace" query (worker/engine-worker.ts). */
    workflowStackTraces: boolean;
    /**
     * Workflow tasks the worker runs at once, its pollers' included: a payment is started
     * eagerly on this worker only while one is free (worker/create-worker.ts).
     */
    workflowTaskSlots: number;
    /**
     * AES-256-GCM keys of the payload codec (worker/payload-codec.ts), by key id; the first
     * encrypts, any decrypts (`TEMPORAL_PAYLOAD_KEYS`, `id:base64key,...`). Unset: one key
     * kept in the data directory (development and tests only, worker/data-converter.ts).
     */
    payloadKeys: PayloadKey[] | undefined;
    /**
     * Browser origins of the Temporal UIs allowed to call the codec endpoint
     * (`TEMPORAL_CODEC_ALLOWED_ORIGINS`); by default the local UI in development and tests.
     */
    codecAllowedOrigins: string[];
  };
  fx: { slePerUsd: string };
  providers: {
    monime: {
      baseUrl: string;
      accessToken?: string;
      spaceId?: string;
      webhookSecret?: string;
      timeoutMs: number;
    };
    stripe: {
      secretKey?: string;
      webhookSecret?: string;
      /** Where the stripe client sends its requests (an emulator in tests); Stripe's own if unset. */
      api?: StripeApiBase;
      timeoutMs: number;
    };
  };
  sandbox: {
    /**
     * `SANDBOX_WEBHOOK_SECRET`; unset only in development and tests, where one generated per
     * data directory is used instead (outbound/secret-box.ts `sandboxWebhookSecret`).
     */
    webhookSecret: string | undefined;
    paymentCodeTtlSeconds: number;
  };
  /** How long a card payment may wait for the payer (3-D Secure) before it expires. */
  cards: { pendingTtlSeconds: number };
  /** How long a payout or cashout the provider accepted waits for its outcome before asking. */
  moneyOut: { pendingTtlSeconds: number };
  /**
   * What one wallet may keep of verification documents (`ONBOARDING_DOCUMENTS_PER_WALLET`,
   * `ONBOARDING_DOCUMENT_BYTES_PER_WALLET`): an upload past either is refused, nothing stored.
   */
  onboarding: { documentsPerWallet: number; documentBytesPerWallet: number };
  webhooks: {
    /**
     * AES-256-GCM key that encrypts subscription secrets at rest; unset: a key generated once
     * and kept in the data directory (development and tests, see outbound/secret-box.ts).
     */
    secretKey?: Buffer;
    /** IPs or CIDR ranges the SSRF guard lets through (local development, tests). */
    privateAllowlist: string[];
  };
  /** The `reconciliation` schedule (worker/schedules.ts, workflows/reconciliation.ts). */
  reconciliation: {
    /** How often the schedule starts a run. */
    intervalSeconds: number;
    /** A payment is reconciled once it has been pending this long. */
    graceSeconds: number;
    /** How many payments a run syncs with their providers at once. */
    concurrency: number;
    /**
     * An unmatched provider notification is retried for this long after it arrived; the
     * maintenance schedule then deletes it.
     */
    notificationRetentionHours: number;
    /**
     * How long a provider notification that reached its payment (or never could) is kept for
     * operators before the maintenance schedule deletes it.
     */
    notificationKeepDays: number;
  };
  /** The web dashboard at /dashboard (api/dashboard/). */
  dashboard: {
    /** The session cookie carries `Secure`: always, except in local development and tests. */
    secureCookie: boolean;
    /** Where the build made at install time lives (dashboard/dist). */
    distDir: string;
  };
};

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
  if (parsed.success && !parsed.data.SANDBOX_WEBHOOK_SECRET && !isLocalEnv(parsed.data.NODE_ENV)) {
    problems.push(
      `SANDBOX_WEBHOOK_SECRET: required when NODE_ENV is ${parsed.data.NODE_ENV} (only ` +
        'development and test generate one); the API and the worker must share it',
    );
  }
  if (!parsed.success || problems.length > 0) {
    throw new Error(`Invalid configuration: ${problems.join('; ')}`);
  }
  const e = parsed.data;
  return {
    env: e.NODE_ENV,
    rootDir,
    dataDir: path.resolve(e.DATA_DIR),
    api: {
      port: e.PORT,
      host: e.HOST,
      requestTimeoutMs: e.API_REQUEST_TIMEOUT_MS,
      trustProxy:
        e.TRUST_PROXY === 'true' ? 1 : e.TRUST_PROXY === 'false' ? 0 : Number(e.TRUST_PROXY),
    },
    log: { level: e.LOG_LEVEL },
    throttles: {
      cardAuthenticationPage: e.RATE_LIMIT_CARD_AUTHENTICATION_PAGE,
      dashboardSignedOut: e.RATE_LIMIT_DASHBOARD_SIGNED_OUT,
      dashboardAccount: e.RATE_LIMIT_DASHBOARD_ACCOUNT,
    },
    caps: {
      credentials: e.MAX_CREDENTIALS_PER_MODE,
      webhookSubscriptions: e.MAX_WEBHOOK_SUBSCRIPTIONS_PER_MODE,
    },
    metrics: {
      enabled: e.METRICS_ENABLED,
      workerPort: e.WORKER_METRICS_PORT,
      apiPort: e.API_METRICS_PORT,
    },
    tracing: {
      endpoint:
        e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
        (e.OTEL_EXPORTER_OTLP_ENDPOINT &&
          `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`),
      serviceName: e.OTEL_SERVICE_NAME,
    },
    database: {
      url: e.DATABASE_URL,
      poolSize: e.DATABASE_POOL_SIZE,
      preparedStatements: e.DATABASE_PREPARED_STATEMENTS,
      embeddedPort: e.EMBEDDED_PG_PORT,
    },
    temporal: {
      address: e.TEMPORAL_ADDRESS,
      namespace: e.TEMPORAL_NAMESPACE,
      taskQueue: e.TEMPORAL_TASK_QUEUE,
      port: e.TEMPORAL_PORT,
      uiPort: e.TEMPORAL_UI_PORT,
      workflowBundlePath: e.TEMPORAL_WORKFLOW_BUNDLE,
      workflowStackTraces: e.TEMPORAL_WORKFLOW_STACK_TRACES,
      workflowTaskSlots: e.TEMPORAL_WORKFLOW_TASK_SLOTS,
      payloadKeys: e.TEMPORAL_PAYLOAD_KEYS,
      codecAllowedOrigins:
        e.TEMPORAL_CODEC_ALLOWED_ORIGINS === undefined
          ? isLocalEnv(e.NODE_ENV)
            ? [`http://localhost:${e.TEMPORAL_UI_PORT}`, `http://127.0.0.1:${e.TEMPORAL_UI_PORT}`]
            : []
          : e.TEMPORAL_CODEC_ALLOWED_ORIGINS.split(',')
              .map((o) => o.trim().replace(/\/$/, ''))
              .filter(Boolean),
    },
    fx: { slePerUsd: e.FX_SLE_PER_USD },
    providers: {
      monime: {
        baseUrl: e.MONIME_API_URL,
        // An empty variable counts as unset: Live Mode then answers 503.
        accessToken: e.MONIME_ACCESS_TOKEN || undefined,
        spaceId: e.MONIME_SPACE_ID || undefined,
        webhookSecret: e.MONIME_WEBHOOK_SECRET || undefined,
        timeoutMs: e.MONIME_TIMEOUT_MS,
      },
      stripe: {
        secretKey: e.STRIPE_SECRET_KEY || undefined,
        webhookSecret: e.STRIPE_WEBHOOK_SECRET || undefined,
        api: e.STRIPE_API_BASE ? parseStripeApiBase(e.STRIPE_API_BASE) : undefined,
        timeoutMs: e.STRIPE_TIMEOUT_MS,
      },
    },
    sandbox: {
      webhookSecret: e.SANDBOX_WEBHOOK_SECRET,
      paymentCodeTtlSeconds: e.SANDBOX_PAYMENT_CODE_TTL_SECONDS,
    },
    cards: { pendingTtlSeconds: e.CARD_PAYMENT_PENDING_TTL_SECONDS },
    moneyOut: { pendingTtlSeconds: e.MONEY_OUT_PENDING_TTL_SECONDS },
    onboarding: {
      documentsPerWallet: e.ONBOARDING_DOCUMENTS_PER_WALLET,
      documentBytesPerWallet: e.ONBOARDING_DOCUMENT_BYTES_PER_WALLET,
    },
    webhooks: {
      secretKey: e.WEBHOOK_SECRET_KEY ? Buffer.from(e.WEBHOOK_SECRET_KEY, 'base64') : undefined,
      privateAllowlist: e.WEBHOOK_PRIVATE_ALLOWLIST.split(',')
        .map((entry) => entry.trim())
        .filter(Boolean),
    },
    reconciliation: {
      intervalSeconds: e.RECONCILIATION_INTERVAL_SECONDS,
      graceSeconds: e.RECONCILIATION_GRACE_SECONDS,
      concurrency: e.RECONCILIATION_CONCURRENCY,
      notificationRetentionHours: e.NOTIFICATION_RETRY_HOURS,
      notificationKeepDays: e.NOTIFICATION_KEEP_DAYS,
    },
    dashboard: {
      secureCookie: e.DASHBOARD_SECURE_COOKIE
        ? e.DASHBOARD_SECURE_COOKIE === 'true'
        : !isLocalEnv(e.NODE_ENV),
      distDir: path.resolve(e.DASHBOARD_DIST_DIR),
    },
  };
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
