CREATE TABLE "conversation_items" (
	"conversation_id" text NOT NULL,
	"position" bigint NOT NULL,
	"item_id" text NOT NULL,
	"item_json" text NOT NULL,
	"bytes" integer NOT NULL,
	CONSTRAINT "conversation_items_conversation_id_position_pk" PRIMARY KEY("conversation_id","position")
);
--> statement-breakpoint
CREATE TABLE "conversation_totals" (
	"org_id" text PRIMARY KEY NOT NULL,
	"conversations" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "conversations" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"metadata_json" text NOT NULL,
	"items" integer DEFAULT 0 NOT NULL,
	"bytes" bigint DEFAULT 0 NOT NULL,
	"next_position" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "conversation_items" ADD CONSTRAINT "conversation_items_conversation_id_conversations_id_fk" FOREIGN KEY ("conversation_id") REFERENCES "public"."conversations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversation_totals" ADD CONSTRAINT "conversation_totals_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "conversation_items_id_idx" ON "conversation_items" USING btree ("conversation_id","item_id");--> statement-breakpoint
CREATE INDEX "conversations_org_idx" ON "conversations" USING btree ("org_id");--> statement-breakpoint
CREATE INDEX "conversations_expiry_idx" ON "conversations" USING btree ("expires_at");