-- Budgets per key and per project, in nano-units per calendar month and per day (gateway/admission/budgets.ts), and
-- an index for a project's spend in a window, which rebuilds its budget's count.
ALTER TABLE "api_keys" ADD COLUMN "monthly_budget_nanos" bigint;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "daily_budget_nanos" bigint;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "monthly_budget_nanos" bigint;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "daily_budget_nanos" bigint;--> statement-breakpoint
CREATE INDEX "usage_project_time_idx" ON "usage_records" USING btree ("project_id","created_at");