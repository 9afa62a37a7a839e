import type { createActivities } from '../activities';

/** Workflows see activities by type only. */
export type Activities = ReturnType<typeof createActivities>;
