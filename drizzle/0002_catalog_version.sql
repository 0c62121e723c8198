-- The catalog version: one number that every change to what the request path
-- caches (keys, models, prices, projects, organizations) moves forward, from a
-- trigger, so a change made by any replica, the management API or plain SQL
-- is seen. Each gateway polls it and drops its in-process cache when it moves
-- (src/catalog/admission-cache.ts).
CREATE TABLE "catalog_version" (
	"id" integer PRIMARY KEY DEFAULT 1 NOT NULL,
	"version" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "catalog_version_single_row" CHECK ("catalog_version"."id" = 1)
);

--> statement-breakpoint
INSERT INTO "catalog_version" ("id", "version") VALUES (1, 0);
--> statement-breakpoint
CREATE FUNCTION "tollgate_bump_catalog_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE "catalog_version" SET "version" = "version" + 1 WHERE "id" = 1;
	RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER "api_keys_catalog_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "api_keys" FOR EACH STATEMENT EXECUTE FUNCTION "tollgate_bump_catalog_version"();
--> statement-breakpoint
CREATE TRIGGER "models_catalog_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "models" FOR EACH STATEMENT EXECUTE FUNCTION "tollgate_bump_catalog_version"();
--> statement-breakpoint
CREATE TRIGGER "prices_catalog_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "prices" FOR EACH STATEMENT EXECUTE FUNCTION "tollgate_bump_catalog_version"();
--> statement-breakpoint
CREATE TRIGGER "projects_catalog_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "projects" FOR EACH STATEMENT EXECUTE FUNCTION "tollgate_bump_catalog_version"();
--> statement-breakpoint
CREATE TRIGGER "organizations_catalog_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "organizations" FOR EACH STATEMENT EXECUTE FUNCTION "tollgate_bump_catalog_version"();
