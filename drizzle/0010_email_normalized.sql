-- Emails are stored as people/email.ts normalizes them (NFKC, lower case) and compared as stored.
-- Every email stored so far passed the API's check, which takes ASCII only, where lower() is the same fold
-- in every locale; the old unique index on lower(email) means no two live users fold to the same address.
UPDATE "users" SET "email" = lower("email") WHERE "email" <> lower("email") AND "email" ~ '^[ -~]*$';--> statement-breakpoint
DROP INDEX "users_email_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "users_email_idx" ON "users" USING btree ("email") WHERE "users"."deleted_at" is null;
