import { z } from 'zod';
import { KEY_LIMIT_MAX, KEY_NAME_MAX } from './bounds.js';
import { BANDS } from '../flow/bands.js';

const limit = (max: number) => z.int().min(1).max(max);

/**
 * A key's settings as JSON sends them (the operator API's bodies), each within the bounds of
 * `bounds.ts`; the portal's form reads the same bounds from form fields.
 */
export const keySettingsFields = {
  name: z.string().trim().min(1).max(KEY_NAME_MAX),
  requests_per_minute: limit(KEY_LIMIT_MAX.requests_per_minute),
  max_concurrency: limit(KEY_LIMIT_MAX.max_concurrency),
  tokens_per_minute: limit(KEY_LIMIT_MAX.tokens_per_minute).nullable(),
  monthly_tokens: limit(KEY_LIMIT_MAX.monthly_tokens).nullable(),
  store_request_data: z.boolean(),
  response_cache: z.boolean(),
  band: z.enum(BANDS),
};
