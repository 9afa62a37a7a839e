import type { Client } from '@temporalio/client';
import type { DatabasePool } from '../db/pool';
import type { Config } from '../config';
import type { Providers } from '../providers';
import type { Logger } from '../observability/logger';

export type ApiDeps = {
  config: Config;
  pool: DatabasePool;
  temporal: Client;
  logger: Logger;
  providers: Providers;
};
