-- A stack gets its own identity (stk_…): runs and OpenTofu states belong to it, not to its name,
-- so a stack added again under a deleted one's name does not inherit the old one's state.
ALTER TABLE "stacks" ADD COLUMN "id" text;--> statement-breakpoint
UPDATE "stacks" SET "id" = 'stk_' || md5(random()::text || clock_timestamp()::text || "name");--> statement-breakpoint
ALTER TABLE "stacks" ALTER COLUMN "id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "stacks" DROP CONSTRAINT "stacks_pkey";--> statement-breakpoint
ALTER TABLE "stacks" ADD PRIMARY KEY ("id");--> statement-breakpoint
CREATE UNIQUE INDEX "stacks_name_idx" ON "stacks" USING btree ("name");--> statement-breakpoint
-- A run names the stack of that name that existed when it was queued; none when that one is gone.
ALTER TABLE "runs" ADD COLUMN "stack_id" text;--> statement-breakpoint
UPDATE "runs" SET "stack_id" = "stacks"."id" FROM "stacks" WHERE "stacks"."name" = "runs"."stack_name" AND "stacks"."created_at" <= "runs"."created_at";--> statement-breakpoint
-- A state belongs to the stack of its name if that stack's runs wrote it (after it was added); a state
-- left by a deleted stack of the same name (written before) belongs to no stack any more and is dropped.
ALTER TABLE "stack_states" ADD COLUMN "stack_id" text;--> statement-breakpoint
UPDATE "stack_states" SET "stack_id" = "stacks"."id" FROM "stacks" WHERE "stacks"."name" = "stack_states"."stack_name" AND "stack_states"."updated_at" >= "stacks"."created_at";--> statement-breakpoint
DELETE FROM "stack_states" WHERE "stack_id" IS NULL;--> statement-breakpoint
ALTER TABLE "stack_states" ALTER COLUMN "stack_id" SET NOT NULL;--> statement-breakpoint
DROP INDEX "stack_states_key_idx";--> statement-breakpoint
ALTER TABLE "stack_states" DROP COLUMN "stack_name";--> statement-breakpoint
CREATE UNIQUE INDEX "stack_states_key_idx" ON "stack_states" USING btree ("cluster_id","stack_id");
