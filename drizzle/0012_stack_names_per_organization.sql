-- A private stack's name is unique within its organization (its owner's), a global one's platform-wide;
-- that no private stack takes a global one's name is checked by the catalog under a lock on the name.
ALTER TABLE "stacks" ADD COLUMN "org_id" text;--> statement-breakpoint
UPDATE "stacks" SET "org_id" = "users"."org_id" FROM "users" WHERE "users"."id" = "stacks"."owner_id" AND "stacks"."visibility" = 'private';--> statement-breakpoint
ALTER TABLE "stacks" ADD CONSTRAINT "stacks_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
DROP INDEX "stacks_name_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "stacks_global_name_idx" ON "stacks" USING btree ("name") WHERE "stacks"."visibility" = 'global';--> statement-breakpoint
CREATE UNIQUE INDEX "stacks_private_name_idx" ON "stacks" USING btree ("org_id","name") WHERE "stacks"."visibility" = 'private';--> statement-breakpoint
ALTER TABLE "stacks" ADD CONSTRAINT "stacks_scope_check" CHECK (("stacks"."visibility" = 'global') = ("stacks"."org_id" is null));
