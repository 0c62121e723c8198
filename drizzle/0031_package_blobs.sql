ALTER TABLE "stacks" ALTER COLUMN "package" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "stacks" ADD COLUMN "package_blob_id" text;--> statement-breakpoint
ALTER TABLE "stacks" ADD COLUMN "package_bytes" integer;--> statement-breakpoint
-- Sizes of the rows there are (octet_length reads a bytea's size, not its bytes); their bytes are
-- copied into the blob store at start-up, a row at a time (src/platform/stacks/package-blobs.ts).
UPDATE "stacks" SET "package_bytes" = octet_length("package");--> statement-breakpoint
ALTER TABLE "stacks" ALTER COLUMN "package_bytes" SET NOT NULL;
