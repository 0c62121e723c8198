import { z } from 'zod';

/** What list routes answer: the page's rows and where the page sits. */
export interface Paged<T> {
  data: T[];
  pagination: { page: number; limit: number; total: number; pages: number };
}

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 100;

const wholeNumber = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,9}$/, 'Must be a whole number.')
    .transform(Number)
    .pipe(z.number().min(min, `Must be at least ${min}.`).max(max, `Must be at most ${max}.`));

/**
 * The query of a list route: `page` (from 1, default 1), `limit` (1-100,
 * default 20), `sort` (one of `sorts`, a leading `-` for descending, default
 * `created_at`). Every bad parameter is reported at once.
 */
export function pageQuery<const S extends readonly string[]>(sorts: S) {
  const allowed = [...sorts, ...sorts.map((sort) => `-${sort}`)] as unknown as [string, ...string[]];
  return z.object({
    page: wholeNumber(1, 100_000_000).default(1),
    limit: wholeNumber(1, MAX_LIMIT).default(DEFAULT_LIMIT),
    sort: z.enum(allowed).default('created_at'),
  }) as unknown as z.ZodType<{ page: number; limit: number; sort: S[number] | `-${S[number]}` }>;
}

/** A page of `total` rows: past the last page, `data` is empty and the counts still tell the truth. */
export function paged<T>(rows: T[], total: number, page: number, limit: number): Paged<T> {
  return { data: rows, pagination: { page, limit, total, pages: Math.ceil(total / limit) } };
}

export function offsetOf(page: number, limit: number): number {
  return (page - 1) * limit;
}
