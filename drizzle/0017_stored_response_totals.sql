-- Each organization's stored bytes, for TOLLGATE_RESPONSES_ORG_MAX_BYTES; counted from the responses already stored.
CREATE TABLE "stored_response_totals" (
	"org_id" text PRIMARY KEY NOT NULL,
	"bytes" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "stored_response_totals" ADD CONSTRAINT "stored_response_totals_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
INSERT INTO "stored_response_totals" ("org_id", "bytes") SELECT "org_id", sum("bytes") FROM "stored_responses" GROUP BY "org_id";
