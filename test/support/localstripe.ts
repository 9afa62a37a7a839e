import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import Stripe from 'stripe';

/**
 * localstripe (pinned by localstripe-requirements.txt, installed by ensure-deps.sh --test), run by
 * localstripe-server.py on a free loopback port. Where it is unlike Stripe (docs/testing.md "The
 * helpers"; it also refuses optional PaymentIntent parameters), the live card tests rely on none.
 */
const ROOT = path.resolve(__dirname, '../..');
const PYTHON = path.join(ROOT, '.tools/localstripe/bin/python');
const LAUNCHER = path.join(__dirname, 'localstripe-server.py');
const START_LIMIT_MS = 20_000;

/** Any key that starts `sk_` is accepted. */
export const LOCALSTRIPE_SECRET_KEY = 'sk_test_localstripe';

/** Card numbers localstripe gives a behaviour to; `declined` is a 402 naming the charge. */
export const LOCALSTRIPE_CARDS = {
  succeeds: '4242424242424242',
  declined: '4000000000000341',
  authenticationRequired: '4000002760003184',
} as const;

export type Localstripe = {
  port: number;
  /** `http://127.0.0.1:<port>`, the value of STRIPE_API_BASE. */
  baseUrl: string;
  /** The environment that points the engine's Live Mode card provider here. */
  env(webhookSecret: string): {
    STRIPE_SECRET_KEY: string;
    STRIPE_WEBHOOK_SECRET: string;
    STRIPE_API_BASE: string;
  };
  /** A stripe client of its own, for what a test does at "Stripe" (create cards, read intents). */
  client: Stripe;
  /** A card PaymentMethod with this number; answers its id (pm_...). */
  createCard(number: string): Promise<string>;
  /** Forgets every object (`DELETE /_config/data`); registered webhooks stay. */
  reset(): Promise<void>;
  /**
   * Sends its events to `url`, signed with `secret` as Stripe signs them (`Stripe-Signature`),
   * about a second after the change; `events` limits the types sent. Registering the same `id`
   * again replaces it.
   */
  registerWebhook(
    url: string,
    secret: string,
    options?: { id?: string; events?: readonly string[] },
  ): Promise<void>;
  /** The payer finishes 3-D Secure on a `requires_action` PaymentIntent, approved or failed. */
  authenticate(paymentIntentId: string, success: boolean): Promise<void>;
  stop(): Promise<void>;
};

export async function startLocalstripe(): Promise<Localstripe> {
  if (!existsSync(PYTHON)) {
    throw new Error('localstripe is not installed: run bash tools/scripts/ensure-deps.sh --test');
  }
  const child = spawn(PYTHON, [LAUNCHER], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  let port: number;
  try {
    port = await readPort(child, () => stderr);
    await waitUntilAnswering(port);
  } catch (error) {
    await stopChild(child);
    throw error;
  }
  const baseUrl = `http://127.0.0.1:${port}`;
  const client = new Stripe(LOCALSTRIPE_SECRET_KEY, {
    host: '127.0.0.1',
    port,
    protocol: 'http',
    maxNetworkRetries: 0,
  });

  async function call(method: string, pathname: string, form?: Record<string, string>) {
    const response = await fetch(`${baseUrl}${pathname}`, {
      method,
      headers: {
        authorization: `Bearer ${LOCALSTRIPE_SECRET_KEY}`,
        ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      body: form ? new URLSearchParams(form).toString() : undefined,
    });
    if (!response.ok) {
      throw new Error(
        `localstripe ${method} ${pathname}: ${response.status} ${await response.text()}`,
      );
    }
    return response;
  }

  let webhookCount = 0;
  return {
    port,
    baseUrl,
    env: (webhookSecret) => ({
      STRIPE_SECRET_KEY: LOCALSTRIPE_SECRET_KEY,
      STRIPE_WEBHOOK_SECRET: webhookSecret,
      STRIPE_API_BASE: baseUrl,
    }),
    client,
    async createCard(number) {
      const method = await client.paymentMethods.create({
        type: 'card',
        card: { number, exp_month: 12, exp_year: new Date().getUTCFullYear() + 3, cvc: '123' },
      });
      return method.id;
    },
    async reset() {
      await call('DELETE', '/_config/data');
    },
    async registerWebhook(url, secret, options = {}) {
      webhookCount += 1;
      const id = options.id ?? `webhook_${webhookCount}`;
      const response = await fetch(`${baseUrl}/_config/webhooks/${encodeURIComponent(id)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          url,
          secret,
          ...(options.events ? { events: options.events } : {}),
        }),
      });
      if (!response.ok) throw new Error(`localstripe webhook: ${response.status}`);
    },
    async authenticate(paymentIntentId, success) {
      // Its _authenticate takes the client secret, as Stripe.js would send it.
      const intent = await client.paymentIntents.retrieve(paymentIntentId);
      if (!intent.client_secret) throw new Error(`no client secret on ${paymentIntentId}`);
      await call(
        'POST',
        `/v1/payment_intents/${encodeURIComponent(paymentIntentId)}/_authenticate`,
        {
          client_secret: intent.client_secret,
          success: String(success),
        },
      );
    },
    stop: () => stopChild(child),
  };
}

function readPort(child: ChildProcess, stderr: () => string): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(
      () => fail(new Error('localstripe did not start in time')),
      START_LIMIT_MS,
    );
    function fail(error: Error) {
      clearTimeout(timer);
      reject(new Error(`${error.message}\n${stderr()}`));
    }
    child.once('exit', (code) => fail(new Error(`localstripe exited (${code}) before it started`)));
    child.once('error', fail);
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      out += chunk;
      const match = /LOCALSTRIPE_PORT=(\d+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        child.stdout?.resume();
        resolve(Number(match[1]));
      }
    });
  });
}

/** The port is bound before the server accepts: wait for an HTTP answer. */
async function waitUntilAnswering(port: number): Promise<void> {
  const deadline = Date.now() + START_LIMIT_MS;
  for (;;) {
    try {
      const response = await fetch(`http://127.0.0.1:${port}/v1/customers?limit=1`, {
        headers: { authorization: `Bearer ${LOCALSTRIPE_SECRET_KEY}` },
      });
      await response.arrayBuffer();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error('localstripe did not answer', { cause: error });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
