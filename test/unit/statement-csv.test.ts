import { filterInstant, isInstant, parseInstant } from '../../src/domain/instant';
import { csvField, csvNumber, csvRecord, STATEMENT_CSV_HEADER } from '../../src/api/csv';

describe('csvField quotes as RFC 4180 says', () => {
  it.each([
    ['plain', 'plain'],
    ['', ''],
    ['Rent, May', '"Rent, May"'],
    ['say "hi"', '"say ""hi"""'],
    ['Rent, "May"', '"Rent, ""May"""'],
    ['two\nlines', '"two\nlines"'],
    ['cr\rhere', '"cr\rhere"'],
    ['"', '""""'],
    ['  spaced  ', '  spaced  '],
  ])('%p -> %p', (value, written) => {
    expect(csvField(value)).toBe(written);
  });

  it.each([
    ['=HYPERLINK("http://x.test","pay")', `"'=HYPERLINK(""http://x.test"",""pay"")"`],
    ['+1+cmd|calc', "'+1+cmd|calc"],
    ['-2+3', "'-2+3"],
    ['-12.50', "'-12.50"],
    ['@SUM(A1:A2)', "'@SUM(A1:A2)"],
    ['\t=1', "'\t=1"],
    ['\r=1', `"'\r=1"`],
    ['a=1', 'a=1'],
    [' =1', ' =1'],
  ])('starts merchant text %p that a spreadsheet would run with a quote: %p', (value, written) => {
    expect(csvField(value)).toBe(written);
  });

  it('writes the engine’s numbers as they are, a negative amount included', () => {
    expect(csvField(csvNumber('-12.50'))).toBe('-12.50');
    expect(csvRecord([csvNumber('-5.00'), csvNumber('+1'), '-5.00'])).toBe("-5.00,+1,'-5.00\r\n");
  });

  it('ends each record with CRLF; the header is exactly the contract’s', () => {
    expect(csvRecord(['a', 'b,c', ''])).toBe('a,"b,c",\r\n');
    expect(csvRecord(STATEMENT_CSV_HEADER)).toBe(
      'transaction_id,transaction_type,created_at,amount,balance_after,description\r\n',
    );
  });
});

describe('parseInstant reads ISO 8601 instants to the millisecond', () => {
  it.each([
    ['2026-01-31T12:00:00Z', '2026-01-31T12:00:00.000Z'],
    ['2026-01-31T12:00:00.5Z', '2026-01-31T12:00:00.500Z'],
    ['2026-01-31T12:00:00.123Z', '2026-01-31T12:00:00.123Z'],
    // Finer digits are cut, never rounded up past an instant the API showed.
    ['2026-01-31T12:00:00.123999Z', '2026-01-31T12:00:00.123Z'],
    ['2026-01-31T12:00Z', '2026-01-31T12:00:00.000Z'],
    ['2026-01-31t12:00:00z', '2026-01-31T12:00:00.000Z'],
    ['2026-01-31T12:00:00+01:00', '2026-01-31T11:00:00.000Z'],
    ['2026-01-01T00:30:00-05:30', '2026-01-01T06:00:00.000Z'],
    ['2026-01-31', '2026-01-31T00:00:00.000Z'],
    ['2024-02-29', '2024-02-29T00:00:00.000Z'],
    ['1970-01-01', '1970-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
  ])('%p -> %p', (text, iso) => {
    expect(parseInstant(text)?.toISOString()).toBe(iso);
  });

  it.each([
    'yesterday',
    '',
    '1700000000',
    '2026-01-31T12:00:00', // no offset: which clock's noon?
    '2026-01-31 12:00:00Z',
    '2026-02-30',
    '2025-02-29',
    '2026-13-01T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2026-01-31T24:00:00Z',
    '2026-01-31T12:60:00Z',
    '2026-01-31T12:00:00+24:00',
    '2026-1-31',
    '+002026-01-31T00:00:00Z',
    '0000-01-01',
    '1969-12-31T23:59:59.999Z',
    '1970-01-01T00:30:00+01:00',
  ])('refuses %p', (text) => {
    expect(parseInstant(text)).toBeNull();
  });
});

describe('filterInstant hands Postgres a list filter in UTC, every digit kept', () => {
  it.each([
    ['2026-01-31', '2026-01-31T00:00:00.000Z'],
    ['2026-01-31t12:00:00z', '2026-01-31T12:00:00.000Z'],
    ['2026-01-31T12:00:00.123456Z', '2026-01-31T12:00:00.123456Z'],
    ['2026-01-31T12:00:00.123456+01:00', '2026-01-31T11:00:00.123456Z'],
    // Offsets past 15:59 are valid RFC 3339, yet Postgres refuses them as written.
    ['7370-05-20T13:07:47.324+17:02', '7370-05-19T20:05:47.324Z'],
    ['0253-04-17T08:09:10-23:59', '0253-04-18T08:08:10.000Z'],
    ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
  ])('%p -> %p', (text, utc) => {
    expect(isInstant(text)).toBe(true);
    expect(filterInstant(text)).toBe(utc);
  });

  it.each([
    '0001-01-01T00:00:00+00:01', // year 0 in UTC
    '9999-12-31T23:00:00-23:00', // year 10000 in UTC
    '2026-01-31T12:00:00+24:00',
    '0000-01-01',
  ])('isInstant refuses %p', (text) => {
    expect(isInstant(text)).toBe(false);
  });
});
