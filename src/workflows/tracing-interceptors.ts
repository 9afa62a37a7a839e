import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';
import {
  OpenTelemetryInboundInterceptor,
  OpenTelemetryInternalsInterceptor,
  OpenTelemetryOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/workflow';

/**
 * The workflow interceptors of OpenTelemetry tracing (src/observability/tracing.ts): a span for
 * each workflow run, update and activity start, exported from the sandbox by the worker's
 * `exporter` sink. Bundled into the workflows only when tracing is configured; not a workflow.
 */
export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [new OpenTelemetryInboundInterceptor()],
  outbound: [new OpenTelemetryOutboundInterceptor()],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
