-- Cached input priced apart: a model's cached-input price (null: its input price, so nothing changes until an
-- operator sets one), and each usage record's cached prompt tokens and reasoning tokens as the engine reported them.
-- Adding a NOT NULL column with a constant default rewrites no row (PostgreSQL 11 and later).
ALTER TABLE "prices" ADD COLUMN "cached_input_nanos_per_token" bigint;--> statement-breakpoint
ALTER TABLE "usage_records" ADD COLUMN "cached_tokens" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "usage_records" ADD COLUMN "reasoning_tokens" integer DEFAULT 0 NOT NULL;