CREATE TABLE "background_response_events" (
	"response_id" text NOT NULL,
	"sequence_number" integer NOT NULL,
	"event_text" text NOT NULL,
	CONSTRAINT "background_response_events_response_id_sequence_number_pk" PRIMARY KEY("response_id","sequence_number")
);
--> statement-breakpoint
CREATE TABLE "background_responses" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"key_id" text NOT NULL,
	"key_hash" text NOT NULL,
	"request_id" text NOT NULL,
	"request_json" text NOT NULL,
	"status" text NOT NULL,
	"response_json" text NOT NULL,
	"streamed" boolean NOT NULL,
	"reached_engine" boolean DEFAULT false NOT NULL,
	"prompt_tokens" integer DEFAULT 0 NOT NULL,
	"generated_tokens" integer DEFAULT 0 NOT NULL,
	"cancel_requested" boolean DEFAULT false NOT NULL,
	"claimed_by" text,
	"lease_until" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "background_response_events" ADD CONSTRAINT "background_response_events_response_id_background_responses_id_fk" FOREIGN KEY ("response_id") REFERENCES "public"."background_responses"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "background_responses" ADD CONSTRAINT "background_responses_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "background_responses" ADD CONSTRAINT "background_responses_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "background_responses_org_idx" ON "background_responses" USING btree ("org_id","status");--> statement-breakpoint
CREATE INDEX "background_responses_lease_idx" ON "background_responses" USING btree ("status","lease_until");--> statement-breakpoint
CREATE INDEX "background_responses_expiry_idx" ON "background_responses" USING btree ("expires_at");