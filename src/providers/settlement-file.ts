import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { CsvError, parse, type Parser } from 'csv-parse';
import { parseInstant } from '../domain/instant';
import { CURRENCIES, MAX_MINOR_UNITS, parseMajorDecimal, type Currency } from '../domain/money';
import type { BookedStatus, ProviderRecord } from './books';

/**
 * A settlement file an application uploads instead of the provider's list (docs/api.md,
 * Reconciliation): a CSV whose header row is exactly `SETTLEMENT_FILE_HEADER`, amounts and fees
 * in major units. A file with any bad row is refused whole, so every row is checked and named.
 */
export const SETTLEMENT_FILE_HEADER = [
  'provider_reference',
  'booked_at',
  'amount',
  'currency',
  'fee',
  'direction',
  'status',
] as const;

/** Data rows a file may hold, the header not counted. */
export const SETTLEMENT_FILE_MAX_ROWS = 200_000;
/** Errors kept for the answer; `rowsBad` still counts every bad row. */
export const SETTLEMENT_FILE_MAX_ERRORS = 100;
/** Longest provider reference kept (providers' ids are far shorter). */
export const MAX_REFERENCE_LENGTH = 255;

/**
 * `row` is the line of the file as a spreadsheet numbers it, the header being line 1 (a quoted
 * field spanning lines: the line it ends on); `field` is a column of the header, or `header`,
 * `row` (its field count) or `file` (the file as a whole).
 */
export type SettlementFileError = { row: number; field: string; message: string };

export type SettlementFile = {
  /** The good rows, in file order; empty when the file has more rows than allowed. */
  records: SettlementRecords;
  /** Data rows read, the header not counted. */
  rows: number;
  rowsBad: number;
  /** At most `maxErrors`, in file order but for a file-wide error, which comes first. */
  errors: SettlementFileError[];
  /** SHA-256 of the bytes, hex: the same file uploaded again has the same one. */
  sha256: string;
};

const DIRECTIONS: readonly string[] = ['in', 'out'] satisfies ProviderRecord['direction'][];
const STATUSES: readonly string[] = ['succeeded', 'failed', 'reversed'] satisfies BookedStatus[];

/**
 * A file's good rows in columns (typed arrays, the short texts as codes): an object a row would
 * hold several times the memory while the largest file is read (docs/benchmarks.md, row 9b).
 */
export class SettlementRecords {
  #references: string[] = [];
  #bookedAt = new Float64Array(1024);
  #amounts = new BigInt64Array(1024);
  #fees = new BigInt64Array(1024);
  /** The currency, direction and status's places in their lists, a byte each. */
  #codes = new Uint8Array(3 * 1024);

  get length(): number {
    return this.#references.length;
  }

  push(record: ProviderRecord): void {
    const i = this.#references.length;
    if (i === this.#bookedAt.length) this.#grow(2 * i);
    this.#references.push(record.providerReference);
    this.#bookedAt[i] = Date.parse(record.bookedAt);
    this.#amounts[i] = record.amount;
    this.#fees[i] = record.fee;
    this.#codes[3 * i] = CURRENCIES.indexOf(record.currency as Currency);
    this.#codes[3 * i + 1] = DIRECTIONS.indexOf(record.direction);
    this.#codes[3 * i + 2] = STATUSES.indexOf(record.status);
  }

  /** The record at `i`, or undefined past the end. */
  at(i: number): ProviderRecord | undefined {
    if (i < 0 || i >= this.length) return undefined;
    return {
      providerReference: this.#references[i]!,
      bookedAt: new Date(this.#bookedAt[i]!).toISOString(),
      amount: this.#amounts[i]!,
      currency: CURRENCIES[this.#codes[3 * i]!]!,
      fee: this.#fees[i]!,
      direction: DIRECTIONS[this.#codes[3 * i + 1]!] as ProviderRecord['direction'],
      status: STATUSES[this.#codes[3 * i + 2]!] as BookedStatus,
    };
  }

  /** The records from `start` up to `end` (excluded), as objects. */
  slice(start = 0, end = this.length): ProviderRecord[] {
    const out: ProviderRecord[] = [];
    for (let i = Math.max(0, start); i < Math.min(end, this.length); i++) out.push(this.at(i)!);
    return out;
  }

  #grow(size: number): void {
    const bookedAt = new Float64Array(size);
    const amounts = new BigInt64Array(size);
    const fees = new BigInt64Array(size);
    const codes = new Uint8Array(3 * size);
    bookedAt.set(this.#bookedAt);
    amounts.set(this.#amounts);
    fees.set(this.#fees);
    codes.set(this.#codes);
    [this.#bookedAt, this.#amounts, this.#fees, this.#codes] = [bookedAt, amounts, fees, codes];
  }
}

type Row = { record: string[]; info: { lines: number } };
type FieldCheck = { field: string; message: string };

/**
 * Reads the whole stream (so that the digest covers every byte and the sender is never cut off),
 * checking each row; rows past `maxRows` are counted, not kept. A stream that fails rejects.
 */
export async function parseSettlementFile(
  input: Readable,
  options: { maxRows?: number; maxErrors?: number } = {},
): Promise<SettlementFile> {
  const maxRows = options.maxRows ?? SETTLEMENT_FILE_MAX_ROWS;
  const maxErrors = options.maxErrors ?? SETTLEMENT_FILE_MAX_ERRORS;
  const hash = createHash('sha256');
  const errors: SettlementFileError[] = [];
  let records = new SettlementRecords();
  let rows = 0;
  let rowsBad = 0;
  let header = 'expected' as 'expected' | 'good' | 'bad';

  const keep = (error: SettlementFileError) => {
    if (errors.length < maxErrors) errors.push(error);
  };
  // CSV that does not parse (a stray quote) ends the reading: csv-parse cannot find the next
  // row reliably after it, and the file is refused anyway.
  const unparsable = (error: CsvError) => {
    const row = lineOf(error);
    const message = `The file is not valid CSV from this line on: ${error.message}`;
    if (header === 'expected') {
      header = 'bad';
      keep({ row, field: 'header', message });
      return;
    }
    rows += 1;
    rowsBad += 1;
    keep({ row, field: 'row', message });
  };
  const parser = parse({ bom: true, info: true, relax_column_count: true, skip_empty_lines: true });

  const read = ({ record, info }: Row) => {
    if (header === 'expected') {
      header = isHeader(record) ? 'good' : 'bad';
      if (header === 'bad') {
        keep({
          row: info.lines,
          field: 'header',
          message: `The header row must be exactly ${SETTLEMENT_FILE_HEADER.join(',')}`,
        });
      }
      return;
    }
    rows += 1;
    if (rows === maxRows + 1) {
      records = new SettlementRecords();
      errors.unshift({
        row: info.lines,
        field: 'file',
        message: `The file has more than ${maxRows} rows`,
      });
      errors.length = Math.min(errors.length, maxErrors);
    }
    if (rows > maxRows || header === 'bad') return;
    const checked = checkRow(record);
    if ('record' in checked) {
      records.push(checked.record);
      return;
    }
    rowsBad += 1;
    for (const problem of checked.problems) keep({ row: info.lines, ...problem });
  };

  // Rows are read as the parser gives them, so that an error comes after the rows before it.
  const reading = new Promise<void>((resolve, reject) => {
    parser.on('data', read);
    parser.on('end', resolve);
    parser.on('error', (error) => {
      if (!(error instanceof CsvError)) return reject(error);
      unparsable(error);
      resolve();
    });
  });
  try {
    for await (const chunk of input as AsyncIterable<Buffer | string>) {
      hash.update(chunk);
      if (!parser.destroyed && !parser.write(chunk)) await drained(parser);
    }
  } catch (error) {
    parser.destroy();
    void reading.catch(() => undefined);
    throw error;
  }
  if (!parser.destroyed) parser.end();
  await reading;
  if (header === 'expected') {
    keep({ row: 1, field: 'header', message: 'The file is empty: it has no header row' });
  }
  // A file whose header cannot be read has no row that could be read either.
  if (header === 'bad') rowsBad = Math.max(rowsBad, rows);
  return { records, rows, rowsBad, errors, sha256: hash.digest('hex') };
}

function isHeader(record: string[]): boolean {
  return (
    record.length === SETTLEMENT_FILE_HEADER.length &&
    SETTLEMENT_FILE_HEADER.every((name, i) => record[i] === name)
  );
}

/** One data row as a record, or every problem it has. */
function checkRow(record: string[]): { record: ProviderRecord } | { problems: FieldCheck[] } {
  if (record.length !== SETTLEMENT_FILE_HEADER.length) {
    return {
      problems: [
        {
          field: 'row',
          message: `The row has ${record.length} fields; the header has ${SETTLEMENT_FILE_HEADER.length}`,
        },
      ],
    };
  }
  const [reference, bookedAtText, amountText, currencyText, feeText, direction, status] =
    record as [string, string, string, string, string, string, string];
  const problems: FieldCheck[] = [];
  const problem = (field: string, message: string) => problems.push({ field, message });

  if (
    reference === '' ||
    reference.length > MAX_REFERENCE_LENGTH ||
    reference !== reference.trim()
  ) {
    problem(
      'provider_reference',
      `must be 1 to ${MAX_REFERENCE_LENGTH} characters without surrounding spaces`,
    );
  }
  // RFC 3339 wants a time with its offset: a date alone is refused.
  const bookedAt = /t/i.test(bookedAtText) ? parseInstant(bookedAtText) : null;
  if (!bookedAt) {
    problem('booked_at', 'must be an RFC 3339 time with an offset (2026-01-31T12:00:00Z)');
  }
  const amount = majorUnits(amountText);
  if (amount === null) problem('amount', majorUnitsMessage);
  const currency = currencyText.toUpperCase() as Currency;
  if (!CURRENCIES.includes(currency)) {
    problem('currency', `must be one of ${CURRENCIES.join(', ')}`);
  }
  const fee = majorUnits(feeText);
  if (fee === null) problem('fee', majorUnitsMessage);
  if (!DIRECTIONS.includes(direction)) problem('direction', 'must be in or out');
  if (!STATUSES.includes(status)) problem('status', 'must be succeeded, failed or reversed');

  if (problems.length > 0) return { problems };
  return {
    record: {
      providerReference: reference,
      bookedAt: bookedAt!.toISOString(),
      amount: amount!,
      currency,
      fee: fee!,
      direction: direction as ProviderRecord['direction'],
      status: status as BookedStatus,
    },
  };
}

const majorUnitsMessage =
  'must be a decimal in major units with at most 2 decimals, not negative (12.50)';

/** Major units to minor units, exactly; null when not a plain decimal or beyond the maximum. */
function majorUnits(text: string): bigint | null {
  const minor = parseMajorDecimal(text);
  return minor !== null && minor <= MAX_MINOR_UNITS ? minor : null;
}

function lineOf(error: CsvError): number {
  const lines = (error as { lines?: unknown }).lines;
  return typeof lines === 'number' && lines > 0 ? lines : 1;
}

/** Until the parser takes more, or is gone (it failed, or its reader stopped). */
function drained(parser: Parser): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      parser.off('drain', done);
      parser.off('close', done);
      resolve();
    };
    parser.on('drain', done);
    parser.on('close', done);
  });
}
