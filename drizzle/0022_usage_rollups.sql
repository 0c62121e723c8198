-- Usage summed per organization, UTC day, key, project and model (usage_daily), which every report reads; the
-- charge writes it in the same statement as the usage records (billing/wallet.ts). The history before it is
-- summed into it at the end of this migration. And an index for a window of one organization's ledger, which its
-- export reads in order.
CREATE TABLE "usage_daily" (
	"org_id" text NOT NULL,
	"day" date NOT NULL,
	"key_id" text NOT NULL,
	"project_id" text,
	"model_id" text NOT NULL,
	"batch" boolean DEFAULT false NOT NULL,
	"requests" bigint NOT NULL,
	"cache_hits" bigint NOT NULL,
	"errors" bigint NOT NULL,
	"prompt_tokens" bigint NOT NULL,
	"completion_tokens" bigint NOT NULL,
	"cached_tokens" bigint NOT NULL,
	"reasoning_tokens" bigint NOT NULL,
	"cache_hit_tokens" bigint NOT NULL,
	"cost_nanos" bigint NOT NULL,
	CONSTRAINT "usage_daily_group" UNIQUE NULLS NOT DISTINCT("org_id","day","key_id","project_id","model_id","batch")
);
--> statement-breakpoint
ALTER TABLE "usage_daily" ADD CONSTRAINT "usage_daily_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "usage_daily" ADD CONSTRAINT "usage_daily_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "usage_daily" ADD CONSTRAINT "usage_daily_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "usage_daily_key_idx" ON "usage_daily" USING btree ("key_id","day");--> statement-breakpoint
CREATE INDEX "usage_daily_project_idx" ON "usage_daily" USING btree ("project_id","day");--> statement-breakpoint
CREATE INDEX "ledger_org_time_idx" ON "ledger_entries" USING btree ("org_id","created_at","id");--> statement-breakpoint
-- Backfill: the history written before the rollups, summed the way the charge sums it.
INSERT INTO "usage_daily" ("org_id", "day", "key_id", "project_id", "model_id", "batch", "requests", "cache_hits",
  "errors", "prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens", "cache_hit_tokens", "cost_nanos")
SELECT "org_id", ("created_at" AT TIME ZONE 'UTC')::date, "key_id", "project_id", "model_id", false, count(*),
  count(*) FILTER (WHERE "cache_hit"), count(*) FILTER (WHERE "status" >= 400), sum("prompt_tokens"),
  sum("completion_tokens"), sum("cached_tokens"), sum("reasoning_tokens"),
  coalesce(sum("prompt_tokens" + "completion_tokens") FILTER (WHERE "cache_hit"), 0), sum("cost_nanos")
FROM "usage_records"
GROUP BY 1, 2, 3, 4, 5;
