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
 * The webpack bundle of the workflows at `workflowsPath` (with `interceptorModules`, for
 * tracing), without the bundler's chatter.
 */
export async function bundleWorkflows(
  workflowsPath: string,
  interceptorModules: readonly string[] = [],
): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    ...(interceptorModules.length ? { workflowInterceptorModules: [...interceptorModules] } : {}),
    logger: silent,
  });
  return code;
}
