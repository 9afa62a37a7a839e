import { AsyncLocalStorage } from 'node:async_hooks';
import {
  context as otelContext,
  propagation,
  ROOT_CONTEXT,
  type Context,
  type ContextManager,
  type Tracer,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { ClientOptions } from '@temporalio/client';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry/lib/worker';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';
import type { WorkerOptions } from '@temporalio/worker';
import type { Config } from '../config';

/**
 * OpenTelemetry tracing through the Temporal SDK's interceptors, off unless configured (see
 * docs/operations.md, Tracing). One tracer provider per process and endpoint, shared by API and
 * worker: each user releases it; the last release flushes the buffered spans and shuts it down.
 */
export type Tracing = {
  tracer: Tracer;
  resource: Resource;
  processor: SpanProcessor;
  /** Gives the provider back; the last user's release flushes and shuts it down. */
  release: () => Promise<void>;
};

type Shared = {
  provider: BasicTracerProvider;
  tracer: Tracer;
  resource: Resource;
  processor: SpanProcessor;
  users: number;
};

const providers = new Map<string, Shared>();

/** The module the workflow bundle carries for the workflow interceptors (only when tracing). */
export const workflowInterceptorsModule = require.resolve('../workflows/tracing-interceptors');

/** The process's tracing for `config`, or undefined when tracing is off. */
export function acquireTracing(config: Config['tracing']): Tracing | undefined {
  if (!config.endpoint) return undefined;
  const key = `${config.serviceName} ${config.endpoint}`;
  let shared = providers.get(key);
  if (!shared) {
    registerContextPropagation();
    const resource = new Resource({ 'service.name': config.serviceName });
    const processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: config.endpoint }));
    const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
    shared = {
      provider,
      tracer: provider.getTracer('wallet-payments-engine'),
      resource,
      processor,
      users: 0,
    };
    providers.set(key, shared);
  }
  shared.users += 1;
  const { tracer, resource, processor } = shared;
  let released = false;
  return {
    tracer,
    resource,
    processor,
    release: async () => {
      if (released || !shared) return;
      released = true;
      shared.users -= 1;
      if (shared.users > 0) return;
      providers.delete(key);
      await shared.provider.shutdown();
    },
  };
}

/** What a worker adds to its options when tracing: activity interceptors and the span sink. */
export function workerTracingOptions(tracing: Tracing | undefined): Partial<WorkerOptions> {
  if (!tracing) return {};
  const { tracer } = tracing;
  return {
    interceptors: {
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer }),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
    },
    sinks: { exporter: makeWorkflowExporter(tracing.processor, tracing.resource) },
  };
}

/** What a Temporal client adds to its options when tracing: the workflow client interceptor. */
export function clientTracingOptions(tracing: Tracing | undefined): Partial<ClientOptions> {
  if (!tracing) return {};
  const { tracer } = tracing;
  return { interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor({ tracer })] } };
}

/**
 * The interceptors carry the trace in Temporal headers through the global propagator (W3C
 * trace context) and find the current span through the global context manager: both are set
 * once, on the first tracing use, so nothing global changes while tracing is off.
 */
function registerContextPropagation(): void {
  otelContext.setGlobalContextManager(new AsyncLocalContextManager());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
}

/** The active OpenTelemetry context, kept across awaits by node's AsyncLocalStorage. */
class AsyncLocalContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    context: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.storage.run(context, () => fn.call(thisArg, ...args));
  }

  bind<T>(context: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const run = (...args: unknown[]): unknown =>
      this.with(context, () => (target as (...a: unknown[]) => unknown)(...args));
    return run as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.storage.disable();
    return this;
  }
}
