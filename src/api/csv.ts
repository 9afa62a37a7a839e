/**
 * CSV for the statement and the transactions export, RFC 4180: a field is quoted when it holds a
 * comma, a double quote, CR or LF, its quotes doubled; records end with CRLF.
 */
export function csvField(value: CsvCell): string {
  const text = typeof value === 'string' ? neutralised(value) : value.number;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/**
 * A cell is text unless the engine wrote it as a number (`csvNumber`): text is the merchant's
 * words, which a spreadsheet must never run as a formula; an amount like `-5.00` stays a number.
 */
export type CsvCell = string | { readonly number: string };

export function csvNumber(number: string): CsvCell {
  return { number };
}

// OWASP's CSV injection advice: a leading quote makes a spreadsheet read the cell as text.
const FORMULA_START = /^[=+\-@\t\r]/;

function neutralised(text: string): string {
  return FORMULA_START.test(text) ? `'${text}` : text;
}

export function csvRecord(fields: readonly CsvCell[]): string {
  return `${fields.map(csvField).join(',')}\r\n`;
}

export const STATEMENT_CSV_HEADER = [
  'transaction_id',
  'transaction_type',
  'created_at',
  'amount',
  'balance_after',
  'description',
] as const;

/** The transactions export’s header row (docs/api.md, "Export"). */
export const TRANSACTIONS_CSV_HEADER = [
  'id',
  'created_at',
  'transaction_type',
  'status',
  'amount',
  'currency',
  'application_fee',
  'provider_fee',
  'wallet_id',
  'recipient_wallet_id',
  'description',
  'provider_reference',
  'metadata',
] as const;
