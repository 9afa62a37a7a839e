/**
 * CSV for the statement and the transactions export, RFC 4180: a field is quoted when it holds a
 * comma, a double quote, CR or LF, its quotes doubled; records end with CRLF.
 */
export function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

export function csvRecord(fields: readonly string[]): string {
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

/** The transactions export's header row (docs/api.md, Metadata). */
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
