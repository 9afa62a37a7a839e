import { RateLimitedError } from './middleware/errors';

/** What a refused export asks the client to wait: another export may end by then. */
export const EXPORT_RETRY_AFTER_SECONDS = 30;

export type ExportLimits = { perApplication: number; perProcess: number };

/** 429 with `Retry-After`: every export slot of the application, or of the process, is taken. */
export class ExportsBusyError extends RateLimitedError {
  override readonly detail: string;
  constructor(limit: 'application' | 'process', limits: ExportLimits) {
    super(EXPORT_RETRY_AFTER_SECONDS);
    const retry = `retry in ${EXPORT_RETRY_AFTER_SECONDS} seconds`;
    this.detail =
      limit === 'application'
        ? `This application already has ${limits.perApplication} exports streaming, the most it may have at a time: ${retry}`
        : `The API is streaming ${limits.perProcess} exports, the most it runs at a time: ${retry}`;
    this.message = this.detail;
  }
}

/**
 * The exports a process streams at once, each holding a database connection: bounded per
 * application and in all, so that slow readers of one tenant cannot take every tenant's pool.
 */
export class ExportSlots {
  private total = 0;
  private readonly byApplication = new Map<string, number>();

  constructor(private readonly limits: ExportLimits) {}

  /** A slot for the application, or ExportsBusyError; the release it answers may be called twice. */
  take(applicationId: string): () => void {
    const held = this.byApplication.get(applicationId) ?? 0;
    if (held >= this.limits.perApplication) throw new ExportsBusyError('application', this.limits);
    if (this.total >= this.limits.perProcess) throw new ExportsBusyError('process', this.limits);
    this.byApplication.set(applicationId, held + 1);
    this.total += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total -= 1;
      const left = (this.byApplication.get(applicationId) ?? 1) - 1;
      if (left === 0) this.byApplication.delete(applicationId);
      else this.byApplication.set(applicationId, left);
    };
  }
}
