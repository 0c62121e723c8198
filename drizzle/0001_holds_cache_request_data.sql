CREATE TABLE "request_data" (
	"request_id" text PRIMARY KEY NOT NULL,
	"request_body" text NOT NULL,
	"response_body" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "wallet_holds" (
	"request_id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"amount_nanos" bigint NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "usage_records" ADD COLUMN "cache_hit" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "wallets" ADD COLUMN "reserved_nanos" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "request_data" ADD CONSTRAINT "request_data_request_id_usage_records_id_fk" FOREIGN KEY ("request_id") REFERENCES "public"."usage_records"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "wallet_holds" ADD CONSTRAINT "wallet_holds_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "request_data_time_idx" ON "request_data" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "wallet_holds_expiry_idx" ON "wallet_holds" USING btree ("expires_at");