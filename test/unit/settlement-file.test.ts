import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  parseSettlementFile,
  SettlementRecords,
  SETTLEMENT_FILE_HEADER,
  SETTLEMENT_FILE_MAX_ERRORS,
} from '../../src/providers/settlement-file';

const HEADER = SETTLEMENT_FILE_HEADER.join(',');
const GOOD_ROW = 'pi_1,2026-03-01T10:00:00Z,12.50,USD,0.36,in,succeeded';

/** A file's text as the upload route hands it over: a byte stream, in small chunks. */
function streamOf(text: string, chunkSize = 7): Readable {
  const bytes = Buffer.from(text, 'utf8');
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += chunkSize) chunks.push(bytes.subarray(i, i + chunkSize));
  return Readable.from(chunks);
}

const fileOf = (...rows: string[]) => [HEADER, ...rows].join('\n') + '\n';
/** The parsed file, its records (kept in columns) as an array of objects. */
const parseText = async (text: string, options?: { maxRows?: number; maxErrors?: number }) => {
  const parsed = await parseSettlementFile(streamOf(text), options);
  return { ...parsed, records: parsed.records.slice() };
};
/** The one row's errors, as `field: message` pairs minus the message. */
const fieldsOf = async (row: string) =>
  (await parseText(fileOf(row))).errors.map((e) => `${e.row}:${e.field}`);

describe('parseSettlementFile', () => {
  it('reads a good file into records in minor units, with the digest of its bytes', async () => {
    const text =
      `\uFEFF${HEADER}\r\n` +
      `${GOOD_ROW}\r\n` +
      're_2,2026-03-01T11:30:00.250+01:00,0.10,sle,0,out,reversed\r\n' +
      '"po,3",2026-03-02T00:00:00Z,100000000000,SLE,1.5,out,failed\r\n';
    const parsed = await parseText(text);
    expect(parsed).toEqual({
      records: [
        {
          providerReference: 'pi_1',
          bookedAt: '2026-03-01T10:00:00.000Z',
          amount: 1250n,
          currency: 'USD',
          fee: 36n,
          direction: 'in',
          status: 'succeeded',
        },
        {
          providerReference: 're_2',
          bookedAt: '2026-03-01T10:30:00.250Z',
          amount: 10n,
          currency: 'SLE',
          fee: 0n,
          direction: 'out',
          status: 'reversed',
        },
        {
          providerReference: 'po,3',
          bookedAt: '2026-03-02T00:00:00.000Z',
          amount: 10_000_000_000_000n,
          currency: 'SLE',
          fee: 150n,
          direction: 'out',
          status: 'failed',
        },
      ],
      rows: 3,
      rowsBad: 0,
      errors: [],
      sha256: createHash('sha256').update(text, 'utf8').digest('hex'),
    });
  });

  it('accepts a file with a header and no rows, and skips empty lines', async () => {
    expect(await parseText(`${HEADER}\n`)).toMatchObject({ records: [], rows: 0, errors: [] });
    expect(await parseText(`${HEADER}\n\n${GOOD_ROW}\n\n`)).toMatchObject({ rows: 1, errors: [] });
  });

  it.each([
    ['1.5', 150n],
    ['0.10', 10n],
    ['0', 0n],
    ['007.01', 701n],
    ['100000000000.00', 10_000_000_000_000n],
  ])('reads the amount %p as %p minor units exactly', async (amount, minor) => {
    const parsed = await parseText(
      fileOf(`pi_1,2026-03-01T10:00:00Z,${amount},USD,0,in,succeeded`),
    );
    expect(parsed.errors).toEqual([]);
    expect(parsed.records[0]?.amount).toBe(minor);
  });

  it.each(['-1', '1e3', '1.005', '1.', '.5', '', ' 1', '"1,5"', '0x10', '100000000000.01', 'NaN'])(
    'refuses the amount %p and the same as a fee',
    async (bad) => {
      expect(await fieldsOf(`pi_1,2026-03-01T10:00:00Z,${bad},USD,0,in,succeeded`)).toEqual([
        '2:amount',
      ]);
      expect(await fieldsOf(`pi_1,2026-03-01T10:00:00Z,1,USD,${bad},in,succeeded`)).toEqual([
        '2:fee',
      ]);
    },
  );

  it.each([
    ['provider_reference', ',2026-03-01T10:00:00Z,1,USD,0,in,succeeded'],
    ['provider_reference', ' pi_1,2026-03-01T10:00:00Z,1,USD,0,in,succeeded'],
    ['provider_reference', `${'x'.repeat(256)},2026-03-01T10:00:00Z,1,USD,0,in,succeeded`],
    ['booked_at', 'pi_1,2026-03-01,1,USD,0,in,succeeded'],
    ['booked_at', 'pi_1,2026-03-01T10:00:00,1,USD,0,in,succeeded'],
    ['booked_at', 'pi_1,2026-02-30T10:00:00Z,1,USD,0,in,succeeded'],
    ['booked_at', 'pi_1,yesterday,1,USD,0,in,succeeded'],
    ['currency', 'pi_1,2026-03-01T10:00:00Z,1,EUR,0,in,succeeded'],
    ['currency', 'pi_1,2026-03-01T10:00:00Z,1,,0,in,succeeded'],
    ['direction', 'pi_1,2026-03-01T10:00:00Z,1,USD,0,IN,succeeded'],
    ['direction', 'pi_1,2026-03-01T10:00:00Z,1,USD,0,sideways,succeeded'],
    ['status', 'pi_1,2026-03-01T10:00:00Z,1,USD,0,in,completed'],
    ['status', 'pi_1,2026-03-01T10:00:00Z,1,USD,0,in,'],
    ['row', 'pi_1,2026-03-01T10:00:00Z,1,USD,0,in'],
    ['row', `${GOOD_ROW},extra`],
  ])('names the bad field %p of row %p', async (field, row) => {
    const parsed = await parseText(fileOf(row));
    expect(parsed).toMatchObject({ records: [], rows: 1, rowsBad: 1 });
    expect(parsed.errors).toEqual([{ row: 2, field, message: expect.any(String) }]);
  });

  it('names every bad field of a row, but counts the row once', async () => {
    const parsed = await parseText(fileOf(GOOD_ROW, ',soon,-1,EUR,x,up,done', GOOD_ROW));
    expect(parsed.rows).toBe(3);
    expect(parsed.rowsBad).toBe(1);
    expect(parsed.records).toHaveLength(2);
    expect(parsed.errors.map((e) => `${e.row}:${e.field}`)).toEqual([
      '3:provider_reference',
      '3:booked_at',
      '3:amount',
      '3:currency',
      '3:fee',
      '3:direction',
      '3:status',
    ]);
  });

  it('refuses a header that is not exactly the contract’s, and reads no row under it', async () => {
    for (const header of [
      'provider_reference,booked_at,amount,currency,fee,direction',
      'Provider_reference,booked_at,amount,currency,fee,direction,status',
      'booked_at,provider_reference,amount,currency,fee,direction,status',
      GOOD_ROW,
    ]) {
      const parsed = await parseText(`${header}\n${GOOD_ROW}\n${GOOD_ROW}\n`);
      expect(parsed).toMatchObject({ records: [], rows: 2, rowsBad: 2 });
      expect(parsed.errors).toEqual([{ row: 1, field: 'header', message: expect.any(String) }]);
    }
    expect((await parseText('')).errors).toEqual([
      { row: 1, field: 'header', message: 'The file is empty: it has no header row' },
    ]);
  });

  it('numbers rows by their line in the file, a quoted field over two lines included', async () => {
    const parsed = await parseText(
      fileOf(GOOD_ROW, '"two\nlines",2026-03-01T10:00:00Z,1,USD,0,in,succeeded', GOOD_ROW, 'bad'),
    );
    expect(parsed.records[1]?.providerReference).toBe('two\nlines');
    expect(parsed.errors).toEqual([{ row: 6, field: 'row', message: expect.any(String) }]);
  });

  it('refuses a file that is not valid CSV from the line where it stops being so', async () => {
    const parsed = await parseText(
      fileOf(GOOD_ROW, 'pi_2,"2026"x,1,USD,0,in,succeeded', GOOD_ROW, GOOD_ROW),
    );
    expect(parsed).toMatchObject({ rows: 2, rowsBad: 1 });
    expect(parsed.errors).toEqual([
      { row: 3, field: 'row', message: expect.stringContaining('not valid CSV') },
    ]);
    const header = await parseText(`"provider_reference"x,booked_at\n${GOOD_ROW}\n`);
    expect(header.errors).toEqual([
      { row: 1, field: 'header', message: expect.stringContaining('not valid CSV') },
    ]);
    expect(header.records).toEqual([]);
  });

  it('keeps at most 100 errors but counts every bad row', async () => {
    const bad = Array.from(
      { length: 150 },
      (_, i) => `pi_${i},2026-03-01T10:00:00Z,x,USD,0,in,succeeded`,
    );
    const parsed = await parseText(fileOf(GOOD_ROW, ...bad));
    expect(parsed.rows).toBe(151);
    expect(parsed.rowsBad).toBe(150);
    expect(parsed.errors).toHaveLength(SETTLEMENT_FILE_MAX_ERRORS);
    expect(parsed.errors[0]).toMatchObject({ row: 3, field: 'amount' });
    expect(parsed.errors[99]).toMatchObject({ row: 102, field: 'amount' });
  });

  it('refuses more rows than allowed, first among the errors, and keeps no record', async () => {
    const rows = Array.from({ length: 6 }, () => GOOD_ROW);
    const parsed = await parseText(fileOf(...rows.slice(0, 2), 'bad', ...rows), {
      maxRows: 5,
      maxErrors: 1,
    });
    expect(parsed.rows).toBe(9);
    expect(parsed.records).toEqual([]);
    expect(parsed.errors).toEqual([
      { row: 7, field: 'file', message: 'The file has more than 5 rows' },
    ]);
    const exact = await parseText(fileOf(...rows.slice(0, 5)), { maxRows: 5 });
    expect(exact).toMatchObject({ rows: 5, errors: [] });
    expect(exact.records).toHaveLength(5);
  });

  it('reads the whole stream even past the limit, so the digest covers every byte', async () => {
    const text = fileOf(...Array.from({ length: 50 }, () => GOOD_ROW));
    const parsed = await parseText(text, { maxRows: 3 });
    expect(parsed.sha256).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
  });

  it('rejects when the stream itself fails', async () => {
    const failing = new Readable({
      read() {
        this.destroy(new Error('connection reset'));
      },
    });
    await expect(parseSettlementFile(failing)).rejects.toThrow('connection reset');
  });
});

describe('SettlementRecords', () => {
  it('gives back each record as it was pushed, past its first columns’ size, a slice at a time', () => {
    const records = new SettlementRecords();
    const made = Array.from({ length: 2_500 }, (_, i) => ({
      providerReference: `ref-${i}`,
      bookedAt: new Date(Date.UTC(2026, 2, 1) + i * 1_001).toISOString(),
      amount: 10n ** 13n - BigInt(i),
      currency: i % 2 ? ('USD' as const) : ('SLE' as const),
      fee: BigInt(i % 7),
      direction: i % 3 ? ('in' as const) : ('out' as const),
      status: (['succeeded', 'failed', 'reversed'] as const)[i % 3]!,
    }));
    for (const record of made) records.push(record);
    expect(records.length).toBe(2_500);
    expect(records.slice()).toEqual(made);
    expect(records.slice(1_020, 1_030)).toEqual(made.slice(1_020, 1_030));
    expect(records.slice(2_490, 9_999)).toEqual(made.slice(2_490));
    expect(records.at(2_499)).toEqual(made[2_499]);
    expect(records.at(2_500)).toBeUndefined();
  });
});
