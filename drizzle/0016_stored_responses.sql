-- Stored Responses (gateway/responses/database-store.ts): kept per organization until expires_at, then purged.
CREATE TABLE "stored_responses" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"key_id" text NOT NULL,
	"model" text NOT NULL,
	"previous_response_id" text,
	"input_json" text NOT NULL,
	"response_json" text NOT NULL,
	"bytes" integer NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "stored_responses" ADD CONSTRAINT "stored_responses_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "stored_responses" ADD CONSTRAINT "stored_responses_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "stored_responses_org_idx" ON "stored_responses" USING btree ("org_id","created_at");--> statement-breakpoint
CREATE INDEX "stored_responses_expiry_idx" ON "stored_responses" USING btree ("expires_at");