import type { DatabasePool } from '../db/pool';
import type { Config } from '../config';
import type { Mode } from '../domain/types';
import { sandboxWebhookSecret } from '../crypto/secret-box';
import type { CardProvider, PayoutAccountProvider } from './card';
import { ProviderNotConfiguredError, type MobileMoneyProvider } from './mobile-money';
import { monimeFromConfig } from './monime';
import { SandboxCardProvider } from './sandbox-card';
import { SandboxConnectProvider } from './sandbox-connect';
import { SandboxMobileMoneyProvider } from './sandbox-mobile-money';
import { stripeCardFromConfig } from './stripe-card';
import { stripeConnectFromConfig } from './stripe-connect';

/** The providers of each mode: the sandbox in Test Mode, the live adapters in Live Mode. */
export type Providers = {
  sandboxMobileMoney: SandboxMobileMoneyProvider;
  liveMobileMoney: MobileMoneyProvider | null;
  mobileMoney(mode: Mode): MobileMoneyProvider;
  sandboxCard: SandboxCardProvider;
  liveCard: CardProvider | null;
  /** Throws ProviderNotConfiguredError in Live Mode without the Stripe keys (503). */
  card(mode: Mode): CardProvider;
  sandboxConnect: SandboxConnectProvider;
  liveConnect: PayoutAccountProvider | null;
  /** Connected payout accounts and payouts; 503 in Live Mode without the Stripe keys. */
  connect(mode: Mode): PayoutAccountProvider;
};

/** Live adapters come from the configuration: without credentials, Live Mode answers 503. */
export function createProviders(options: { config: Config; pool: DatabasePool }): Providers {
  const sandboxSecret = sandboxWebhookSecret(options.config);
  const sandboxMobileMoney = new SandboxMobileMoneyProvider(options.pool, sandboxSecret);
  const liveMobileMoney = monimeFromConfig(options.config);
  const sandboxCard = new SandboxCardProvider(options.pool, sandboxSecret);
  const liveCard = stripeCardFromConfig(options.config);
  const sandboxConnect = new SandboxConnectProvider(options.pool);
  const liveConnect = stripeConnectFromConfig(options.config);
  return {
    sandboxMobileMoney,
    liveMobileMoney,
    mobileMoney: (mode) =>
      forMode<MobileMoneyProvider>(
        mode,
        sandboxMobileMoney,
        liveMobileMoney,
        'Live mobile-money payments are not available: the provider credentials are not configured',
      ),
    sandboxCard,
    liveCard,
    card: (mode) =>
      forMode<CardProvider>(
        mode,
        sandboxCard,
        liveCard,
        'Live card payments are not available: the Stripe keys are not configured',
      ),
    sandboxConnect,
    liveConnect,
    connect: (mode) =>
      forMode<PayoutAccountProvider>(
        mode,
        sandboxConnect,
        liveConnect,
        'Live payout accounts are not available: the Stripe keys are not configured',
      ),
  };
}

/** Test Mode's sandbox, or the live adapter, which without credentials is a 503. */
function forMode<P>(mode: Mode, sandbox: P, live: P | null, notConfigured: string): P {
  if (mode === 'test') return sandbox;
  if (!live) throw new ProviderNotConfiguredError(notConfigured);
  return live;
}
