-- The template (stack) catalog: each stack's manifest fields and its .zip.
CREATE TABLE "stacks" (
	"name" text PRIMARY KEY NOT NULL,
	"visibility" text NOT NULL,
	"owner_id" text NOT NULL,
	"title" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"category" text NOT NULL,
	"icon" text,
	"applicable_profiles" jsonb,
	"inputs" jsonb NOT NULL,
	"root" text DEFAULT '' NOT NULL,
	"package" "bytea" NOT NULL,
	"package_sha256" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "stacks_visibility_check" CHECK ("stacks"."visibility" in ('global', 'private'))
);
--> statement-breakpoint
ALTER TABLE "stacks" ADD CONSTRAINT "stacks_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "stacks_owner_idx" ON "stacks" USING btree ("owner_id");