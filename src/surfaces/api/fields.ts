import { z } from 'zod';

/** A name as the API takes one: trimmed, 1 to 200 characters. */
export const name = z.string().trim().min(1).max(200);

/** A refinement for a change: at least one of `fields` is sent. */
export const atLeastOne = (fields: string[]) => (body: Record<string, unknown>) =>
  fields.some((field) => body[field] !== undefined);
