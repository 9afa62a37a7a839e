import { DefaultLogger, type LogEntry, type Logger } from '@temporalio/worker';
import { LoggerWithComposedMetadata } from '@temporalio/common/lib/logger';
import { withoutDroppedLevels } from '../../worker/engine-worker';

/** A DefaultLogger at `level` whose entries land in `entries`. */
function recording(level: 'TRACE' | 'DEBUG' | 'INFO' | 'WARN') {
  const entries: LogEntry[] = [];
  return { entries, logger: new DefaultLogger(level, (entry) => entries.push(entry)) };
}

/** The worker's logger as the SDK builds it: metadata composed over the runtime's logger. */
function composed(runtime: Logger) {
  let resolved = 0;
  const logger = LoggerWithComposedMetadata.compose(runtime, () => {
    resolved += 1;
    return { sdkComponent: 'worker' };
  });
  return { logger, resolved: () => resolved };
}

describe('withoutDroppedLevels (the worker logger of worker/engine-worker.ts)', () => {
  it('drops TRACE and DEBUG before their metadata is resolved when the runtime logs at WARN', () => {
    const runtime = recording('WARN');
    const worker = composed(runtime.logger);
    const logger = withoutDroppedLevels(worker.logger, runtime.logger);

    logger.trace('Got workflow activation', { jobs: [{ a: 1 }] });
    logger.debug('Creating workflow');
    logger.log('TRACE', 'Completed activation');
    expect(worker.resolved()).toBe(0);

    logger.warn('careful', { runId: 'r1' });
    logger.error('broken');
    logger.log('ERROR', 'broken again');
    expect(worker.resolved()).toBe(3);
    expect(runtime.entries.map((e) => [e.level, e.message, e.meta?.sdkComponent])).toEqual([
      ['WARN', 'careful', 'worker'],
      ['ERROR', 'broken', 'worker'],
      ['ERROR', 'broken again', 'worker'],
    ]);
    expect(runtime.entries[0]!.meta).toMatchObject({ runId: 'r1' });
  });

  it('keeps DEBUG when the runtime logs at DEBUG, and everything at TRACE', () => {
    const atDebug = recording('DEBUG');
    const debugWorker = composed(atDebug.logger);
    const logger = withoutDroppedLevels(debugWorker.logger, atDebug.logger);
    logger.trace('dropped');
    logger.debug('kept');
    logger.log('DEBUG', 'kept too');
    expect(atDebug.entries.map((e) => e.message)).toEqual(['kept', 'kept too']);
    expect(debugWorker.resolved()).toBe(2);

    const atTrace = recording('TRACE');
    const traceWorker = composed(atTrace.logger);
    expect(withoutDroppedLevels(traceWorker.logger, atTrace.logger)).toBe(traceWorker.logger);
  });

  it('passes every call on to a logger that does not say its level', () => {
    const calls: string[] = [];
    const custom: Logger = {
      log: (level, message) => calls.push(`${level} ${message}`),
      trace: (message) => calls.push(`trace ${message}`),
      debug: (message) => calls.push(`debug ${message}`),
      info: (message) => calls.push(`info ${message}`),
      warn: (message) => calls.push(`warn ${message}`),
      error: (message) => calls.push(`error ${message}`),
    };
    const logger = withoutDroppedLevels(custom, custom);
    expect(logger).toBe(custom);
    logger.trace('t');
    expect(calls).toEqual(['trace t']);
  });
});
