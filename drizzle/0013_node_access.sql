CREATE TABLE "cluster_node_keys" (
	"cluster_id" text NOT NULL,
	"node_id" text NOT NULL,
	"action" text NOT NULL,
	"state" text DEFAULT 'pending' NOT NULL,
	"error" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"claimed_until" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "cluster_node_keys_cluster_id_node_id_pk" PRIMARY KEY("cluster_id","node_id")
);
--> statement-breakpoint
ALTER TABLE "nodes" ADD COLUMN "ssh_user" text;--> statement-breakpoint
ALTER TABLE "nodes" ADD COLUMN "ssh_port" integer;--> statement-breakpoint
ALTER TABLE "nodes" ADD COLUMN "run_user" text;--> statement-breakpoint
ALTER TABLE "nodes" ADD COLUMN "ssh_credential" text;--> statement-breakpoint
ALTER TABLE "nodes" ADD COLUMN "host_key" text;--> statement-breakpoint
ALTER TABLE "nodes" ADD COLUMN "host_key_fingerprint" text;--> statement-breakpoint
ALTER TABLE "nodes" ADD COLUMN "releasing_cluster_id" text;--> statement-breakpoint
ALTER TABLE "cluster_node_keys" ADD CONSTRAINT "cluster_node_keys_cluster_id_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."clusters"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "cluster_node_keys" ADD CONSTRAINT "cluster_node_keys_node_id_nodes_id_fk" FOREIGN KEY ("node_id") REFERENCES "public"."nodes"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "cluster_node_keys_due_idx" ON "cluster_node_keys" USING btree ("state","next_attempt_at");--> statement-breakpoint
-- Public domains are compared lower-case; where two live clusters already share one, the older keeps it and the newer gets an .invalid name its owner must change.
UPDATE "clusters" SET "public_domain" = lower("public_domain");--> statement-breakpoint
UPDATE "clusters" AS "c" SET "public_domain" = "c"."id" || '.taken.invalid' WHERE "c"."state" = 'running' AND EXISTS (SELECT 1 FROM "clusters" AS "o" WHERE "o"."state" = 'running' AND "o"."public_domain" = "c"."public_domain" AND ("o"."created_at", "o"."id") < ("c"."created_at", "c"."id"));--> statement-breakpoint
CREATE UNIQUE INDEX "clusters_live_public_domain_idx" ON "clusters" USING btree ("public_domain") WHERE "clusters"."state" = 'running';