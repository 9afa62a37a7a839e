import {
  allHandlersFinished,
  condition,
  defineUpdate,
  proxyLocalActivities,
  setHandler,
} from '@temporalio/workflow';

export type TakeActivities = { take(id: string): Promise<'taken' | 'gone'> };

export const takeUpdate = defineUpdate<'taken' | 'gone', [string]>('take');

const { take } = proxyLocalActivities<TakeActivities>({ startToCloseTimeout: '10 seconds' });

/**
 * One unit to take, by updates that each run the local activity `take`; ends once it is taken
 * and every update has been answered (the escrow workflow's shape, reduced).
 */
export async function takeOnce(): Promise<string> {
  let taken = false;
  setHandler(takeUpdate, async (id) => {
    const answer = await take(id);
    if (answer === 'taken') taken = true;
    return answer;
  });
  await condition(() => taken);
  await condition(allHandlersFinished);
  return 'done';
}
