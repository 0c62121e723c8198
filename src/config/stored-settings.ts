import { z } from 'zod';

/**
 * The settings of what the gateway keeps for its clients: stored Responses, conversations and files
 * (TOLLGATE_RESPONSES_*, TOLLGATE_CONVERSATIONS_*, TOLLGATE_FILES_*) and batches
 * (TOLLGATE_BATCHES_*), part of `settingsSchema`.
 */
export const storedSettings = {
  TOLLGATE_RESPONSES_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  TOLLGATE_RESPONSES_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(8 * 1024 * 1024),
  TOLLGATE_RESPONSES_ORG_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024 * 1024),
  TOLLGATE_RESPONSES_CHAIN_MAX_TURNS: z.coerce.number().int().min(1).max(100_000).default(1000),
  TOLLGATE_RESPONSES_CHAIN_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(16 * 1024 * 1024),
  TOLLGATE_RESPONSES_SAVE_WAIT_MS: z.coerce.number().int().min(0).max(1000).default(10),
  TOLLGATE_RESPONSES_MAX_BACKGROUND: z.coerce.number().int().min(1).max(100_000).default(100),
  TOLLGATE_RESPONSES_BACKGROUND_MAX_EVENTS: z.coerce.number().int().min(100).max(1_000_000).default(50_000),
  TOLLGATE_RESPONSES_BACKGROUND_LEASE_MS: z.coerce.number().int().min(500).max(600_000).default(30_000),
  TOLLGATE_RESPONSES_MAX_REFERENCES: z.coerce.number().int().min(0).max(100_000).default(1000),
  TOLLGATE_CONVERSATIONS_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  TOLLGATE_CONVERSATIONS_ORG_MAX: z.coerce.number().int().min(1).default(10_000),
  TOLLGATE_CONVERSATIONS_MAX_ITEMS: z.coerce.number().int().min(20).max(1_000_000).default(10_000),
  TOLLGATE_CONVERSATIONS_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(16 * 1024 * 1024),
  TOLLGATE_FILES_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(200 * 1024 * 1024),
  TOLLGATE_FILES_MAX_LINES: z.coerce.number().int().min(1).max(10_000_000).default(50_000),
  TOLLGATE_FILES_ORG_MAX: z.coerce.number().int().min(1).default(1000),
  TOLLGATE_FILES_ORG_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(10 * 1024 * 1024 * 1024),
  TOLLGATE_BATCHES_ORG_MAX: z.coerce.number().int().min(1).max(10_000).default(10),
  TOLLGATE_BATCHES_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(32),
  TOLLGATE_BATCHES_LEASE_MS: z.coerce.number().int().min(500).max(600_000).default(60_000),
  TOLLGATE_BATCHES_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(86_400),
  TOLLGATE_BATCHES_VALIDATING_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900),
};
