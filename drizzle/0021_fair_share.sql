ALTER TABLE "api_keys" ADD COLUMN "band" text DEFAULT 'default' NOT NULL;--> statement-breakpoint
ALTER TABLE "organizations" ADD COLUMN "share_weight" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_band_check" CHECK ("api_keys"."band" in ('interactive', 'default', 'background', 'batch'));--> statement-breakpoint
ALTER TABLE "organizations" ADD CONSTRAINT "organizations_share_weight_check" CHECK ("organizations"."share_weight" between 1 and 1000);