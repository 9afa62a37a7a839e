import { bundleWorkflowCode } from '@temporalio/worker';

const silent = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/**
 * The modules evaluated once in the workflow thread's context and shared by every workflow it
 * runs, instead of once a workflow: the SDK's workflow API and the workflows themselves, whose
 * modules keep no state of their own (only constants, proxies and definitions).
 */
export const preloadedModules = (workflowsPath: string): string[] => [
  '@temporalio/workflow',
  workflowsPath,
];

/**
 * The webpack bundle of the workflows at `workflowsPath` (with `interceptorModules`, for
 * tracing), without the bundler's chatter.
 */
export async function bundleWorkflows(
  workflowsPath: string,
  interceptorModules: readonly string[] = [],
): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    preloadModules: preloadedModules(workflowsPath),
    ...(interceptorModules.length ? { workflowInterceptorModules: [...interceptorModules] } : {}),
    logger: silent,
  });
  return code;
}
