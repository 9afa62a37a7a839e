import type { DatabasePool } from 'slonik';
import { createTransferActivities } from './transfer';

export type ActivityDeps = { pool: DatabasePool };

/** Every activity, built from its dependencies (no module-level state). */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createTransferActivities(deps),
  };
}
