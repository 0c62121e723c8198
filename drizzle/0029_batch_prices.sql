-- A batch line's prices per model (issue 72); null: the input and output prices.
ALTER TABLE "prices" ADD COLUMN "batch_input_nanos_per_token" bigint;--> statement-breakpoint
ALTER TABLE "prices" ADD COLUMN "batch_output_nanos_per_token" bigint;