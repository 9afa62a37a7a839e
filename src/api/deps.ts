import type { Client } from '@temporalio/client';
import type { CredentialCache } from '../cache/credential-cache';
import type { DatabasePool } from '../db/pool';
import type { WalletMemory } from '../cache/wallet-memory';
import type { Config } from '../config';
import type { Providers } from '../providers';
import type { Logger } from '../observability/logger';

export type ApiDeps = {
  config: Config;
  pool: DatabasePool;
  temporal: Client;
  /**
   * A client on the connection of a worker running in this process (`npm start`), when it is
   * running: a payment started through it is started eagerly, its first workflow task handed
   * to that worker in the start call's answer instead of through the server's task queue.
   */
  eagerTemporal?: () => Client | null;
  /** Credentials accepted before, kept in memory and confirmed by each request (src/cache/credential-cache.ts). */
  credentials?: CredentialCache;
  /** Wallets this process found active, for payments' checks (src/cache/wallet-memory.ts). */
  wallets?: WalletMemory;
  logger: Logger;
  providers: Providers;
  /** True once the process is stopping (src/api/server.ts `drain`): readiness then answers 503. */
  draining?: () => boolean;
};
