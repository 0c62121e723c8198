ALTER TABLE "prices" ADD COLUMN "batch_input_nanos_per_token" bigint;--> statement-breakpoint
ALTER TABLE "prices" ADD COLUMN "batch_output_nanos_per_token" bigint;