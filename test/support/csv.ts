/**
 * RFC 4180 records as a spreadsheet reads them (quoted fields, doubled quotes, CRLF), and what
 * follows the last CRLF: empty when the text ends a record, as every CSV the engine writes does.
 */
export function csvRecords(text: string): { records: string[][]; rest: string[] } {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      record.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i++;
    } else field += c;
  }
  return { records, rest: field || record.length ? [...record, field] : [] };
}
