CREATE TABLE "ledger_checkpoints" (
	"org_id" text PRIMARY KEY NOT NULL,
	"last_entry_id" bigint NOT NULL,
	"entries" bigint NOT NULL,
	"balance_nanos" bigint NOT NULL,
	"digest" text NOT NULL,
	"usage_from" timestamp with time zone NOT NULL,
	"made_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "ledger_checkpoints" ADD CONSTRAINT "ledger_checkpoints_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;