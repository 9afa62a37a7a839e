import { z } from 'zod';
import { filterInstant, isInstant } from '../domain/instant';
import {
  METADATA_MAX_KEYS,
  METADATA_MAX_KEY_LENGTH,
  METADATA_MAX_VALUE_LENGTH,
} from '../domain/metadata';
import { MAX_MINOR_UNITS, parseMajorDecimal } from '../domain/money';
import { InexactNumber, plainDecimal } from './middleware/json-number';
import { TOTAL_COUNTED_AHEAD } from '../db/pages';

/** Error body of every failure. */
export const ErrorBody = z.object({ detail: z.string() }).meta({ id: 'Error' });
export const MessageBody = z.object({ message: z.string() }).meta({ id: 'Message' });

/** A JSON number from a request body: plain when exact, else as written (see InexactNumber). */
const jsonNumber = (error: string) =>
  z.custom<number | InexactNumber>(
    (value) => typeof value === 'number' || value instanceof InexactNumber,
    { error },
  );

/** The exact value the client wrote, in plain decimal notation; null if it is not a number. */
function writtenDecimal(value: number | InexactNumber): string | null {
  if (value instanceof InexactNumber) return plainDecimal(value.source);
  return Number.isFinite(value) ? plainDecimal(String(value)) : null;
}

const MAX_MAJOR = MAX_MINOR_UNITS / 100n;

/**
 * A money amount in major units, > 0, at most 2 decimals; parsed into bigint minor units. The
 * literal is judged as written: `10.10000000000000001` has more than 2 decimals although its
 * double is 10.1; `12.50` and `1.005e1` (10.05) are fine.
 */
export const PositiveAmount = jsonNumber('must be a number')
  .transform((value, ctx) => {
    const decimal = writtenDecimal(value);
    if (decimal !== null && (decimal.startsWith('-') || decimal === '0')) {
      ctx.addIssue({ code: 'custom', message: 'must be greater than 0' });
      return z.NEVER;
    }
    const minor = decimal === null ? null : parseMajorDecimal(decimal);
    if (minor === null || minor > MAX_MINOR_UNITS) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a number with at most 2 decimals, no larger than ${MAX_MAJOR}`,
      });
      return z.NEVER;
    }
    return minor;
  })
  .meta({
    type: 'number',
    exclusiveMinimum: 0,
    maximum: Number(MAX_MAJOR),
    multipleOf: 0.01,
    description:
      'Major units of the base currency, greater than 0, at most 2 decimals (12.5 and 12.50 ' +
      'are the same amount; 12.505 is refused even where a float would round it)',
    example: 12.5,
  });

/**
 * A positive integer count of minor units (the mobile-money deposit's SLE cents), at most
 * MAX_MINOR_UNITS, judged on the literal: `100.0` and `1e2` are 100, `100.5` is refused.
 */
export const PositiveMinorUnits = jsonNumber('must be an integer count of minor units')
  .transform((value, ctx) => {
    const decimal = writtenDecimal(value);
    if (decimal === null || !/^-?\d+$/.test(decimal)) {
      ctx.addIssue({ code: 'custom', message: 'must be an integer count of minor units' });
      return z.NEVER;
    }
    const units = BigInt(decimal);
    if (units <= 0n) {
      ctx.addIssue({ code: 'custom', message: 'must be greater than 0' });
      return z.NEVER;
    }
    if (units > MAX_MINOR_UNITS) {
      ctx.addIssue({ code: 'custom', message: `must be at most ${MAX_MINOR_UNITS}` });
      return z.NEVER;
    }
    return units;
  })
  .meta({
    type: 'integer',
    minimum: 1,
    maximum: Number(MAX_MINOR_UNITS),
    description: 'An integer count of minor units (SLE cents: 1000 is 10.00 SLE), at least 1',
    example: 1000,
  });

/**
 * An object's id in a request body: documented as a UUID, but any other string is taken, since
 * it names nothing and answers 404 like a path id, not 422.
 */
export const BodyId = z.string().min(1).meta({ format: 'uuid' });

/** Path ids are UUIDs; anything else names nothing, so it is a 404, not a 422. */
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A page's size: what `per_page` may ask, and what it is when not asked. */
export const PER_PAGE = { max: 100, default: 20 } as const;

export const PageQuery = z.object({
  page: z.coerce.number().int().min(1, 'page must be at least 1').default(1),
  per_page: z.coerce
    .number()
    .int()
    .min(1, `per_page must be between 1 and ${PER_PAGE.max}`)
    .max(PER_PAGE.max, `per_page must be between 1 and ${PER_PAGE.max}`)
    .default(PER_PAGE.default),
});

export const BooleanQuery = z
  .enum(['true', 'false', '1', '0'])
  .transform((v) => v === 'true' || v === '1');

/** What a list's `total` (and `X-Total-Count`) means: src/db/pages.ts `pageTotal`. */
export const TOTAL_DESCRIPTION =
  `The matching rows, counted exactly up to ${TOTAL_COUNTED_AHEAD} rows past the end of this ` +
  `page; beyond that, this lower bound (the end of this page plus ${TOTAL_COUNTED_AHEAD}), ` +
  'which still shows a next page whenever there is one';

export function pageEnvelope<T extends z.ZodType>(item: T) {
  return z.object({
    data: z.array(item),
    page: z.number().int(),
    per_page: z.number().int(),
    total: z.number().int().meta({ description: TOTAL_DESCRIPTION }),
    total_pages: z.number().int(),
  });
}

export function toPage<T>(
  rows: readonly T[],
  total: number,
  page: { page: number; per_page: number },
) {
  return {
    data: rows,
    page: page.page,
    per_page: page.per_page,
    total,
    total_pages: Math.ceil(total / page.per_page),
  };
}

export function pageWindow(page: { page: number; per_page: number }) {
  return { limit: page.per_page, offset: (page.page - 1) * page.per_page };
}

/**
 * A query parameter of one or several of `values`, comma-separated (`status=pending,held`);
 * parsed into the distinct values. Documented with a pattern, so a client can see the shape.
 */
export function commaListQuery<T extends string>(values: readonly T[], description: string) {
  const one = `(${values.join('|')})`;
  return z
    .string({ error: `must be one of ${values.join(', ')}` })
    .regex(new RegExp(`^${one}(,${one})*$`), `must be one of ${values.join(', ')}`)
    .transform((v) => [...new Set(v.split(','))] as T[])
    .meta({ description: `${description}: one value or several, comma-separated` });
}

/**
 * An instant of a list's filter, valid as `isInstant` says (api/instant.ts), handed to
 * Postgres in UTC with its whole precision kept (`filterInstant`).
 */
export const InstantQuery = (description: string) =>
  z
    .string({ error: 'must be an ISO 8601 date-time such as 2026-01-31T12:00:00Z' })
    .refine(isInstant, 'must be an ISO 8601 date-time such as 2026-01-31T12:00:00Z')
    .transform(filterInstant)
    .meta({
      format: 'date-time',
      description: `${description} (ISO 8601 with Z or an offset; a date alone is its start in UTC)`,
    });

/** An amount bound in major units, at least 0, at most 2 decimals; parsed into minor units. */
export const AmountQuery = (description: string) =>
  z
    .string({ error: 'must be an amount in major units, at least 0, at most 2 decimals' })
    .regex(
      /^\d{1,16}(\.\d{1,2})?$/,
      'must be an amount in major units, at least 0, at most 2 decimals',
    )
    .transform((v) => parseMajorDecimal(v)!)
    .meta({ description: `${description}, in major units (12.50)` });

/** Characters as JSON Schema and Postgres count them: code points, not UTF-16 units. */
function characters(text: string): number {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

const METADATA_KEY_PROBLEM = `keys must be 1 to ${METADATA_MAX_KEY_LENGTH} characters, without [ or ]`;

/** Keys that JavaScript objects treat as their own machinery: lost or misread once assigned. */
const RESERVED_METADATA_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
const RESERVED_KEY_PROBLEM = 'is a reserved key name (__proto__, constructor, prototype)';

/** Whether `key` breaks the key limits: the one rule for stored keys and filter keys alike. */
function badMetadataKey(key: string): boolean {
  const length = characters(key);
  return length < 1 || length > METADATA_MAX_KEY_LENGTH || /[[\]]/.test(key);
}

/**
 * Metadata keys checked on the object as received, before a record schema copies it (a copy
 * by assignment drops `__proto__`): a reserved name is refused with its key in the detail.
 */
function withoutReservedKeys<T extends z.ZodType>(schema: T) {
  return z
    .unknown()
    .superRefine((value, ctx) => {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) return;
      for (const key of Object.keys(value)) {
        if (RESERVED_METADATA_KEYS.has(key)) {
          ctx.addIssue({ code: 'custom', path: [key], message: RESERVED_KEY_PROBLEM });
        }
      }
    })
    .pipe(schema);
}

/**
 * Metadata as given: each problem is reported at its key (`metadata.order_id: ...`), so the
 * detail names the key. `removable` lets a value be "" or null, which a merge reads as removal.
 */
function metadataSchema(removable: boolean) {
  const record = z
    .record(z.string(), z.unknown(), { error: 'must be an object of string values' })
    .superRefine((value, ctx) => {
      const keys = Object.keys(value);
      if (keys.length > METADATA_MAX_KEYS) {
        ctx.addIssue({ code: 'custom', message: `at most ${METADATA_MAX_KEYS} keys` });
      }
      for (const key of keys) {
        const v = value[key];
        if (badMetadataKey(key)) {
          ctx.addIssue({ code: 'custom', path: [key], message: METADATA_KEY_PROBLEM });
        } else if (v === null && removable) {
          continue;
        } else if (typeof v !== 'string') {
          ctx.addIssue({ code: 'custom', path: [key], message: 'must be a string' });
        } else if (characters(v) > METADATA_MAX_VALUE_LENGTH) {
          ctx.addIssue({
            code: 'custom',
            path: [key],
            message: `at most ${METADATA_MAX_VALUE_LENGTH} characters`,
          });
        }
      }
    });
  return withoutReservedKeys(record);
}

const METADATA_DOC =
  `At most ${METADATA_MAX_KEYS} keys, each 1 to ${METADATA_MAX_KEY_LENGTH} characters ` +
  `without [ or ], each value a string of at most ${METADATA_MAX_VALUE_LENGTH} characters`;

// No NUL either: a Postgres text cannot hold it (refused at the edge, src/api/middleware/body.ts).
const METADATA_KEY_DOC = {
  minLength: 1,
  maxLength: METADATA_MAX_KEY_LENGTH,
  pattern: '^[^\\[\\]\\u0000]*$',
  not: { enum: [...RESERVED_METADATA_KEYS] },
};
const METADATA_VALUE_DOC = {
  type: 'string',
  maxLength: METADATA_MAX_VALUE_LENGTH,
  pattern: '^[^\\u0000]*$',
};

/** Merchant metadata on creation: string values only. */
export const Metadata = metadataSchema(false)
  .transform((v) => v as Record<string, string>)
  .meta({
    type: 'object',
    maxProperties: METADATA_MAX_KEYS,
    propertyNames: METADATA_KEY_DOC,
    additionalProperties: METADATA_VALUE_DOC,
    description: METADATA_DOC,
    example: { order_id: '6735' },
  });

/**
 * Metadata merged into what is stored: a key set to "" or null is removed. The limits hold for
 * each key here and for the merged whole in the statement that writes it (src/db/metadata.ts).
 */
export const MetadataPatch = metadataSchema(true)
  .transform((v) => v as Record<string, string | null>)
  .meta({
    type: 'object',
    propertyNames: METADATA_KEY_DOC,
    additionalProperties: { anyOf: [METADATA_VALUE_DOC, { type: 'null' }] },
    description: `${METADATA_DOC}, merged into the stored metadata; a key set to "" or null is removed; the limits apply to the merged result`,
    example: { order_id: '6736', coupon: '' },
  });

/** The detail of a merge refused because its merged result would hold too many keys. */
export const METADATA_TOO_MANY_KEYS = `metadata: at most ${METADATA_MAX_KEYS} keys once merged`;

/**
 * The `metadata[KEY]=VALUE` filters of a list, gathered into one object (src/api/pipeline.ts
 * `gatherMetadataQuery`) as an OpenAPI deepObject is sent: exact matches of stored keys, all of
 * them (AND). A malformed key, or a key given twice, is named in the 422.
 */
export const MetadataFilter = withoutReservedKeys(
  z
    .record(z.string(), z.unknown(), { error: 'must be given as metadata[KEY]=VALUE' })
    .superRefine((value, ctx) => {
      for (const [key, v] of Object.entries(value)) {
        if (badMetadataKey(key)) {
          ctx.addIssue({ code: 'custom', path: [key], message: METADATA_KEY_PROBLEM });
        } else if (typeof v !== 'string') {
          ctx.addIssue({ code: 'custom', path: [key], message: 'must be given once' });
        }
      }
    }),
)
  .transform((v) => v as Record<string, string>)
  .meta({
    type: 'object',
    propertyNames: METADATA_KEY_DOC,
    additionalProperties: { type: 'string', pattern: '^[^\\u0000]*$' },
    description:
      'metadata[KEY]=VALUE: only those whose metadata holds KEY with exactly VALUE; several combine (AND)',
    example: { order_id: '6735' },
  });

/** The body of a PATCH that changes an object's metadata: nothing else. */
export const MetadataPatchBody = z.strictObject({ metadata: MetadataPatch });
