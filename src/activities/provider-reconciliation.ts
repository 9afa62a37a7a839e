import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Config } from '../config';
import type { DatabasePool, DatabaseTransactionConnection } from '../db/pool';
import {
  completeReconRun,
  failReconRun,
  insertExceptionEvent,
  insertExceptionOpenedEvents,
  insertRunRecords,
  listOpenedExceptions,
  matchRun,
} from '../db/recon-matching';
import { getReconException } from '../db/recon-exceptions';
import { getReconRun, insertScheduledReconRuns, type ReconProvider } from '../db/recon-runs';
import { RECON_CHUNK_RECORDS } from '../domain/recon';
import type { Mode } from '../domain/types';
import type { Providers } from '../providers';
import { ProviderNotConfiguredError, ProviderRefusedError } from '../providers/mobile-money';
import { booksFor } from '../providers/recon-books';
import { startReconExceptionTimer } from '../temporal/recon-runs';
import { taskQueueOf } from '../temporal/task-queues';
import { whileBeating } from './heartbeat';

/** How many exceptions' events one page writes, and timers one activity starts. */
const EXCEPTIONS_PAGE = 1_000;
/**
 * How many stale timers' starts are in flight at once: each is one round trip to the server
 * (there is no batch start) and, started delayed, no work for a worker.
 */
const TIMER_STARTS_AT_ONCE = 64;

/** A refusal that no retry can change ends the run `failed` with its message. */
function permanent(error: unknown): never {
  if (error instanceof ProviderNotConfiguredError || error instanceof ProviderRefusedError) {
    throw ApplicationFailure.create({
      type: 'ReconRunFailed',
      message: error.message,
      nonRetryable: true,
    });
  }
  throw error;
}

/** The provider reconciliation's activities (src/workflows/provider-reconciliation.ts). */
export function createProviderReconciliationActivities(deps: {
  pool: DatabasePool;
  config: Config;
  providers: Providers;
}) {
  const { pool, config, providers } = deps;

  /**
   * Loads one chunk of the provider's records from `cursor` into the run's staging rows, the
   * first at `loaded` (its place): a chunk loaded again writes nothing twice.
   */
  async function loadReconRecords(input: {
    runId: string;
    cursor: string | null;
    loaded: number;
  }): Promise<{ cursor: string | null; loaded: number }> {
    return whileBeating(() => loadChunk(input));
  }

  async function loadChunk(input: Parameters<typeof loadReconRecords>[0]) {
    const run = await getReconRun(pool, input.runId);
    if (run.status !== 'running') return { cursor: null, loaded: input.loaded };
    const window = { applicationId: run.applicationId, mode: run.mode, from: run.from, to: run.to };
    let page;
    try {
      const books = booksFor(deps, run);
      if (books.copyRecords) {
        // Copied inside the database: rows read through the worker would be garbage it must hold.
        const copy = await books.copyRecords(window, input.cursor, RECON_CHUNK_RECORDS, {
          runId: run.id,
          firstSeq: input.loaded,
        });
        return { cursor: copy.cursor, loaded: input.loaded + copy.copied };
      }
      page = await books.listRecords(window, input.cursor, RECON_CHUNK_RECORDS);
    } catch (error) {
      permanent(error);
    }
    await insertRunRecords(pool, run.id, input.loaded, page.records);
    return { cursor: page.cursor, loaded: input.loaded + page.records.length };
  }

  /**
   * Matches the loaded records and ends the run, in one transaction: exceptions, their opened
   * events, the counts, `reconciliation.run.completed`. A run already ended is left alone.
   */
  async function matchReconRun(input: { runId: string }): Promise<void> {
    await whileBeating(() => pool.transaction((trx) => matchInside(trx, input.runId)));
  }

  /** The run locked first: an attempt begun while a lost one's transaction ends then finds it ended. */
  async function matchInside(trx: DatabaseTransactionConnection, runId: string): Promise<void> {
    const run = await getReconRun(trx, runId, { lock: true });
    if (run.status !== 'running') return;
    const counts = await matchRun(trx, run, config.reconciliation.graceSeconds);
    for (let after: string | null = null; ;) {
      const opened = await listOpenedExceptions(trx, run, after, EXCEPTIONS_PAGE);
      await insertExceptionOpenedEvents(trx, opened);
      if (opened.length < EXCEPTIONS_PAGE) break;
      after = opened.at(-1)!.id;
    }
    await completeReconRun(trx, run.id, counts);
  }

  /** Starts the stale timers of a page of the exceptions the run opened; answers where next. */
  async function startReconExceptionTimers(input: {
    runId: string;
    after: string | null;
  }): Promise<{ after: string | null }> {
    return whileBeating(() => startTimers(input));
  }

  async function startTimers(input: Parameters<typeof startReconExceptionTimers>[0]) {
    const run = await getReconRun(pool, input.runId);
    const opened = await listOpenedExceptions(pool, run, input.after, EXCEPTIONS_PAGE);
    const context = Context.current();
    const queue = taskQueueOf(config, 'maintenance');
    // Lanes rather than rounds: a slow start holds up only its own lane.
    let next = 0;
    const lane = async () => {
      while (next < opened.length) {
        await startReconExceptionTimer(context.client, queue, opened[next++]!);
      }
    };
    await Promise.all(Array.from({ length: Math.min(TIMER_STARTS_AT_ONCE, opened.length) }, lane));
    return { after: opened.length < EXCEPTIONS_PAGE ? null : opened.at(-1)!.id };
  }

  async function failReconRunStep(input: { runId: string; failure: string }): Promise<void> {
    await pool.transaction((trx) => failReconRun(trx, input.runId, input.failure));
  }

  /** The exception's mode and whether it is still open (its timer's first question). */
  async function findReconExceptionState(input: {
    exceptionId: string;
  }): Promise<{ mode: Mode; open: boolean } | null> {
    const e = await getReconException(pool, input.exceptionId);
    return e ? { mode: e.mode, open: e.status === 'open' } : null;
  }

  /** Sends `reconciliation.exception.stale` if the exception is still open; answers whether. */
  async function markReconExceptionStale(input: {
    exceptionId: string;
    eventId: string;
  }): Promise<boolean> {
    return pool.transaction(async (trx) => {
      const e = await getReconException(trx, input.exceptionId, { lock: true });
      if (!e || e.status !== 'open') return false;
      await insertExceptionEvent(trx, e, 'reconciliation.exception.stale', input.eventId);
      return true;
    });
  }

  /**
   * The schedule's runs of the UTC day before `firedAt`, one per application, mode and provider
   * whose books can be read (Live Mode: its provider configured); answers those to run.
   */
  async function scheduleDailyReconRuns(input: { firedAt: string }): Promise<string[]> {
    const to = new Date(input.firedAt);
    to.setUTCHours(0, 0, 0, 0);
    const from = new Date(to.getTime() - 24 * 60 * 60 * 1000);
    const books: Array<{ mode: Mode; provider: ReconProvider }> = [
      { mode: 'test', provider: 'mobile_money' },
      { mode: 'test', provider: 'card' },
    ];
    if (providers.liveMobileMoney) books.push({ mode: 'live', provider: 'mobile_money' });
    if (providers.liveCard) books.push({ mode: 'live', provider: 'card' });
    return insertScheduledReconRuns(
      pool,
      { from: from.toISOString(), to: to.toISOString() },
      books,
    );
  }

  return {
    loadReconRecords,
    matchReconRun,
    startReconExceptionTimers,
    failReconRun: failReconRunStep,
    findReconExceptionState,
    markReconExceptionStale,
    scheduleDailyReconRuns,
  };
}
