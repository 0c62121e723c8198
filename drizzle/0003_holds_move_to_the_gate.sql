-- Holds of requests in flight moved to the admission gate (Redis, or memory in the embedded default):
-- the table and the column are no longer read or written. A hold is transient, so none is lost.
DROP TABLE "wallet_holds" CASCADE;--> statement-breakpoint
ALTER TABLE "wallets" DROP COLUMN "reserved_nanos";