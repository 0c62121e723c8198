-- Stored responses' input items as rows of their own, so input_items reads a page, and each response's output apart
-- from the rest of it, so a conversation's later turns read only what they send (gateway/responses/database-store.ts).
CREATE TABLE "stored_response_input_items" (
	"response_id" text NOT NULL,
	"position" integer NOT NULL,
	"item_id" text NOT NULL,
	"item_json" text NOT NULL,
	CONSTRAINT "stored_response_input_items_response_id_position_pk" PRIMARY KEY("response_id","position")
);
--> statement-breakpoint
ALTER TABLE "stored_response_input_items" ADD CONSTRAINT "stored_response_input_items_response_id_stored_responses_id_fk" FOREIGN KEY ("response_id") REFERENCES "public"."stored_responses"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- The stored input items, each under its own id when it is one (letters, digits, _ and -, its first use in its
-- response), else under a new one; `json` (not `jsonb`) keeps the text as stored, a `\u0000` included.
INSERT INTO "stored_response_input_items" ("response_id", "position", "item_id", "item_json")
SELECT "response_id", "position",
  CASE WHEN row_number() OVER (PARTITION BY "response_id", "candidate" ORDER BY "position") = 1 THEN "candidate"
       ELSE 'item_' || md5("response_id" || ':' || "position") END,
  "item_json"
FROM (
  SELECT r."id" AS "response_id", (e.n - 1)::integer AS "position", e.value::text AS "item_json",
    -- PostgreSQL's `->` refuses a `\u0000` anywhere in the item (it unescapes the strings it meets): such an item
    -- gets a new id without being looked into.
    CASE WHEN strpos(e.value::text, '\u0000') > 0 THEN 'item_' || md5(r."id" || ':' || (e.n - 1))
         ELSE CASE WHEN (e.value -> 'id')::text ~ '^"[A-Za-z0-9_-]+"$' AND length((e.value -> 'id')::text) <= 258
                   THEN e.value ->> 'id'
                   ELSE 'item_' || md5(r."id" || ':' || (e.n - 1)) END END AS "candidate"
  FROM "stored_responses" r, json_array_elements(r."input_json"::json) WITH ORDINALITY AS e(value, n)
) AS "items";--> statement-breakpoint
CREATE UNIQUE INDEX "stored_response_input_items_id_idx" ON "stored_response_input_items" USING btree ("response_id","item_id");--> statement-breakpoint
ALTER TABLE "stored_responses" ADD COLUMN "output_json" text;--> statement-breakpoint
-- Rows stored before keep their output in response_json too: a read puts output_json in its place either way. One
-- whose text holds a `\u0000` (which `->` refuses) keeps output_json null: reads take the output from response_json.
UPDATE "stored_responses" SET "output_json" = coalesce(("response_json"::json -> 'output')::text, '[]')
  WHERE strpos("response_json", '\u0000') = 0;--> statement-breakpoint
ALTER TABLE "stored_responses" DROP COLUMN "input_json";
