import type { createActivities } from '../src/activities';

/** Workflows see activities by type only. */
export type Activities = ReturnType<typeof createActivities>;
