import { z } from 'zod';
import { majorNumberToMinor, MAX_MINOR_UNITS } from '../domain/money';

/** Error body of every failure. */
export const ErrorBody = z.object({ detail: z.string() }).meta({ id: 'Error' });
export const MessageBody = z.object({ message: z.string() }).meta({ id: 'Message' });

/** A money amount in major units, > 0, at most 2 decimals; parsed into bigint minor units. */
export const PositiveAmount = z
  .number({ error: 'amount must be a number' })
  .transform((value, ctx) => {
    const minor = majorNumberToMinor(value);
    if (minor === null) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a number with at most 2 decimals, no larger than ${MAX_MINOR_UNITS / 100n}`,
      });
      return z.NEVER;
    }
    if (minor <= 0n) {
      ctx.addIssue({ code: 'custom', message: 'must be greater than 0' });
      return z.NEVER;
    }
    return minor;
  })
  .meta({
    description: 'Major units of the base currency, greater than 0, at most 2 decimals',
    example: 12.5,
  });

/** Path ids are UUIDs; anything else names nothing, so it is a 404, not a 422. */
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const PageQuery = z.object({
  page: z.coerce.number().int().min(1, 'page must be at least 1').default(1),
  per_page: z.coerce
    .number()
    .int()
    .min(1, 'per_page must be between 1 and 100')
    .max(100, 'per_page must be between 1 and 100')
    .default(20),
});

export const BooleanQuery = z
  .enum(['true', 'false', '1', '0'])
  .transform((v) => v === 'true' || v === '1');

export function pageEnvelope<T extends z.ZodType>(item: T) {
  return z.object({
    data: z.array(item),
    page: z.number().int(),
    per_page: z.number().int(),
    total: z.number().int(),
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
