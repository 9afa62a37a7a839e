import { BATCH_LIMITS } from '../../src/domain/batches';
import { parseMajorDecimal } from '../../src/domain/money';
import type { BatchRequest } from '../../clients/typescript/src/index';

/**
 * A bulk payment's CSV file, read in the browser: one item a row under a header naming
 * `to_wallet_id` (transfers) or `phone_number` (mobile-money cashouts), `amount`, and optionally
 * `reference` and `description`. Only the shape is checked here; the API judges the rest.
 */
export type FileKind = 'transfer' | 'mobile_money_cashout';

type BatchItemBody<K extends FileKind> = Extract<BatchRequest, { kind: K }>['items'][number];

export type FileRow = {
  /** The row's line in the file (the header is line 1). */
  line: number;
  cells: Record<string, string>;
  errors: string[];
};

export type ParsedFile =
  | { kind: FileKind; rows: FileRow[]; bad: number }
  | { refused: string; rows: FileRow[]; bad: number };

export const FILE_COLUMNS = ['to_wallet_id', 'phone_number', 'amount', 'reference', 'description'];

/** Whether a cashout's amount is a whole number of SLE cents, as its single request takes it. */
const WHOLE_CENTS = /^\d+$/;

function rowErrors(
  kind: FileKind,
  line: number,
  cells: Record<string, string>,
  seen: Map<string, number>,
): string[] {
  const errors: string[] = [];
  const target = kind === 'transfer' ? 'to_wallet_id' : 'phone_number';
  if (!cells[target]) errors.push(`${target} is required`);
  const amount = cells.amount ?? '';
  if (!amount) {
    errors.push('amount is required');
  } else if (kind === 'transfer') {
    const minor = parseMajorDecimal(amount);
    if (minor === null || minor === 0n) {
      errors.push('amount must be a positive number with at most 2 decimals');
    }
  } else if (!WHOLE_CENTS.test(amount) || BigInt(amount) === 0n) {
    errors.push('amount must be a positive whole number of SLE cents');
  }
  const reference = cells.reference ?? '';
  if (reference.length > BATCH_LIMITS.referenceLength) {
    errors.push(`reference must be 1 to ${BATCH_LIMITS.referenceLength} characters`);
  } else if (reference) {
    const first = seen.get(reference);
    if (first !== undefined) errors.push(`reference is the same as line ${first}'s`);
    else seen.set(reference, line);
  }
  return errors;
}

/** Reads a file's text into its rows, each with what is wrong with its shape. */
export async function parseBatchFile(text: string): Promise<ParsedFile> {
  // Loaded when a file is read, so that the other pages never download the parser.
  const { parse } = await import('csv-parse/browser/esm/sync');
  let records: string[][];
  try {
    records = parse(text, {
      bom: true,
      trim: true,
      skip_empty_lines: true,
      relax_column_count: true,
    });
  } catch (error) {
    return { refused: `The file is not CSV: ${(error as Error).message}`, rows: [], bad: 0 };
  }
  const [header = [], ...body] = records;
  const names = header.map((name) => name.toLowerCase());
  const unknown = names.filter((name) => !FILE_COLUMNS.includes(name));
  const hasWallet = names.includes('to_wallet_id');
  const hasPhone = names.includes('phone_number');
  let refused: string | null = null;
  if (unknown.length > 0) refused = `Unknown columns: ${unknown.join(', ')}`;
  else if (hasWallet === hasPhone) refused = 'The header names to_wallet_id or phone_number';
  else if (!names.includes('amount')) refused = 'The header names amount';
  else if (hasPhone && names.includes('description')) {
    refused = 'A cashout takes no description: only a file of transfers has that column';
  } else if (body.length === 0) refused = 'The file has no rows';
  else if (body.length > BATCH_LIMITS.items) {
    refused = `The file has ${body.length} rows: a batch holds at most ${BATCH_LIMITS.items}`;
  }
  const kind: FileKind = hasPhone ? 'mobile_money_cashout' : 'transfer';
  const seen = new Map<string, number>();
  const rows = body.map((record, index) => {
    const line = index + 2;
    const cells = Object.fromEntries(names.map((name, i) => [name, record[i] ?? '']));
    const errors = refused ? [] : rowErrors(kind, line, cells, seen);
    if (record.length !== names.length) {
      errors.push(`${record.length} cells where the header has ${names.length}`);
    }
    return { line, cells, errors };
  });
  const bad = rows.filter((row) => row.errors.length > 0).length;
  return refused ? { refused, rows, bad } : { kind, rows, bad };
}

/** The request of a checked file: its rows as items from `walletId`, in the file's order. */
export function batchRequest(
  kind: FileKind,
  walletId: string,
  rows: FileRow[],
  atomic: boolean,
): BatchRequest {
  const reference = (cells: Record<string, string>) =>
    cells.reference ? { reference: cells.reference } : {};
  if (kind === 'transfer') {
    const items: BatchItemBody<'transfer'>[] = rows.map(({ cells }) => ({
      from_wallet_id: walletId,
      to_wallet_id: cells.to_wallet_id!,
      amount: Number(cells.amount),
      ...(cells.description ? { description: cells.description } : {}),
      ...reference(cells),
    }));
    return { kind, items, ...(atomic ? { atomic } : {}) };
  }
  const items: BatchItemBody<'mobile_money_cashout'>[] = rows.map(({ cells }) => ({
    wallet_id: walletId,
    phone_number: cells.phone_number!,
    amount: Number(cells.amount),
    ...reference(cells),
  }));
  return { kind, items };
}

/** The item indexes a 422's detail names (`items[3].amount`): the lines to point at. */
export function namedItems(detail: string): Set<number> {
  return new Set(Array.from(detail.matchAll(/items\[(\d+)\]/g), (m) => Number(m[1])));
}
