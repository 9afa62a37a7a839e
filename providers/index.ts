import type { DatabasePool } from '../db/pool';
import type { Config } from '../config';
import type { Mode } from '../domain/types';
import { ProviderNotConfiguredError, type MobileMoneyProvider } from './mobile-money';
import { monimeFromConfig } from './monime';
import { SandboxMobileMoneyProvider } from './sandbox-mobile-money';

/** The providers of each mode: the sandbox in Test Mode, the live adapters in Live Mode. */
export type Providers = {
  sandboxMobileMoney: SandboxMobileMoneyProvider;
  liveMobileMoney: MobileMoneyProvider | null;
  mobileMoney(mode: Mode): MobileMoneyProvider;
};

/** Live adapters come from the configuration: without credentials, Live Mode answers 503. */
export function createProviders(options: { config: Config; pool: DatabasePool }): Providers {
  const sandboxMobileMoney = new SandboxMobileMoneyProvider(
    options.pool,
    options.config.sandbox.webhookSecret,
  );
  const liveMobileMoney = monimeFromConfig(options.config);
  return {
    sandboxMobileMoney,
    liveMobileMoney,
    mobileMoney(mode) {
      if (mode === 'test') return sandboxMobileMoney;
      if (!liveMobileMoney) {
        throw new ProviderNotConfiguredError(
          'Live mobile-money payments are not available: the provider credentials are not configured',
        );
      }
      return liveMobileMoney;
    },
  };
}
