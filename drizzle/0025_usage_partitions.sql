-- Usage records partitioned by month of created_at (UTC), so a month past the detail's retention is dropped whole
-- (`billing/usage-partitions.ts`). The existing table is copied into the partitioned one in this migration's
-- transaction: a partitioned table's key must include its partition column, so the key becomes (id, created_at)
-- and request_data's foreign key to the record's id goes. The ledger is not partitioned (docs/production.md).
CREATE TABLE "usage_detail_horizon" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"kept_from" timestamp with time zone NOT NULL,
	"through_entry_id" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "request_data" DROP CONSTRAINT "request_data_request_id_usage_records_id_fk";
--> statement-breakpoint
ALTER TABLE "usage_records" RENAME TO "usage_records_unpartitioned";
--> statement-breakpoint
DROP INDEX "usage_org_time_idx";
--> statement-breakpoint
DROP INDEX "usage_key_time_idx";
--> statement-breakpoint
DROP INDEX "usage_project_time_idx";
--> statement-breakpoint
CREATE TABLE "usage_records" (
	"id" text NOT NULL,
	"org_id" text NOT NULL,
	"key_id" text NOT NULL,
	"project_id" text,
	"model_id" text NOT NULL,
	"endpoint" text NOT NULL,
	"prompt_tokens" integer NOT NULL,
	"completion_tokens" integer NOT NULL,
	"cached_tokens" integer DEFAULT 0 NOT NULL,
	"reasoning_tokens" integer DEFAULT 0 NOT NULL,
	"cost_nanos" bigint NOT NULL,
	"status" integer NOT NULL,
	"streamed" boolean NOT NULL,
	"usage_source" text NOT NULL,
	"latency_ms" integer NOT NULL,
	"ttft_ms" integer,
	"cache_hit" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
) PARTITION BY RANGE ("created_at");
--> statement-breakpoint
CREATE TABLE "usage_records_default" PARTITION OF "usage_records" DEFAULT;
--> statement-breakpoint
-- A partition for every month from the oldest record's to two months ahead (the gateway keeps creating them).
-- Month arithmetic on UTC wall times (timestamp without time zone), whatever the session's time zone.
DO $$
DECLARE
  month timestamp;
  last timestamp := date_trunc('month', now() at time zone 'UTC') + interval '2 months';
BEGIN
  SELECT coalesce(date_trunc('month', min(created_at) at time zone 'UTC'), last - interval '2 months')
    INTO month FROM "usage_records_unpartitioned";
  WHILE month <= last LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF "usage_records" FOR VALUES FROM (%L) TO (%L)',
      'usage_records_' || to_char(month, '"y"YYYY"m"MM'),
      to_char(month, 'YYYY-MM-DD"T00:00:00Z"'),
      to_char(month + interval '1 month', 'YYYY-MM-DD"T00:00:00Z"'));
    month := month + interval '1 month';
  END LOOP;
END $$;
--> statement-breakpoint
INSERT INTO "usage_records" ("id", "org_id", "key_id", "project_id", "model_id", "endpoint", "prompt_tokens",
  "completion_tokens", "cached_tokens", "reasoning_tokens", "cost_nanos", "status", "streamed", "usage_source",
  "latency_ms", "ttft_ms", "cache_hit", "created_at")
SELECT "id", "org_id", "key_id", "project_id", "model_id", "endpoint", "prompt_tokens",
  "completion_tokens", "cached_tokens", "reasoning_tokens", "cost_nanos", "status", "streamed", "usage_source",
  "latency_ms", "ttft_ms", "cache_hit", "created_at"
FROM "usage_records_unpartitioned";
--> statement-breakpoint
DROP TABLE "usage_records_unpartitioned";
--> statement-breakpoint
ALTER TABLE "usage_records" ADD CONSTRAINT "usage_records_id_created_at_pk" PRIMARY KEY("id","created_at");
--> statement-breakpoint
ALTER TABLE "usage_records" ADD CONSTRAINT "usage_records_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "usage_records" ADD CONSTRAINT "usage_records_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "usage_records" ADD CONSTRAINT "usage_records_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;
--> statement-breakpoint
CREATE INDEX "usage_org_time_idx" ON "usage_records" USING btree ("org_id","created_at");
--> statement-breakpoint
CREATE INDEX "usage_key_time_idx" ON "usage_records" USING btree ("key_id","created_at");
--> statement-breakpoint
CREATE INDEX "usage_project_time_idx" ON "usage_records" USING btree ("project_id","created_at");
