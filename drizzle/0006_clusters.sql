-- Clusters: hardware profiles, nodes, organizations' clusters, and each node's allocation
-- to a cluster from when to when (what cost reports meter).
CREATE TABLE "clusters" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"name" text NOT NULL,
	"profile" text NOT NULL,
	"public_domain" text NOT NULL,
	"state" text DEFAULT 'running' NOT NULL,
	"created_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone,
	CONSTRAINT "clusters_state_check" CHECK ("clusters"."state" in ('running', 'deleted'))
);
--> statement-breakpoint
CREATE TABLE "hardware_profiles" (
	"name" text PRIMARY KEY NOT NULL,
	"gpus_per_node" integer NOT NULL,
	"gpu_model" text DEFAULT '' NOT NULL,
	"cpu_cores" integer DEFAULT 0 NOT NULL,
	"memory_gib" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "hardware_profiles_gpus_check" CHECK ("hardware_profiles"."gpus_per_node" >= 0)
);
--> statement-breakpoint
CREATE TABLE "node_allocations" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"cluster_id" text NOT NULL,
	"node_id" text NOT NULL,
	"profile" text NOT NULL,
	"allocated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"released_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "nodes" (
	"id" text PRIMARY KEY NOT NULL,
	"profile" text NOT NULL,
	"address" text NOT NULL,
	"access" text DEFAULT '' NOT NULL,
	"cluster_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "clusters" ADD CONSTRAINT "clusters_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "clusters" ADD CONSTRAINT "clusters_profile_hardware_profiles_name_fk" FOREIGN KEY ("profile") REFERENCES "public"."hardware_profiles"("name") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "clusters" ADD CONSTRAINT "clusters_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "node_allocations" ADD CONSTRAINT "node_allocations_cluster_id_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."clusters"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "node_allocations" ADD CONSTRAINT "node_allocations_node_id_nodes_id_fk" FOREIGN KEY ("node_id") REFERENCES "public"."nodes"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "nodes" ADD CONSTRAINT "nodes_profile_hardware_profiles_name_fk" FOREIGN KEY ("profile") REFERENCES "public"."hardware_profiles"("name") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "clusters_org_idx" ON "clusters" USING btree ("org_id");--> statement-breakpoint
CREATE INDEX "node_allocations_cluster_idx" ON "node_allocations" USING btree ("cluster_id");--> statement-breakpoint
CREATE INDEX "node_allocations_time_idx" ON "node_allocations" USING btree ("allocated_at");--> statement-breakpoint
CREATE UNIQUE INDEX "nodes_address_idx" ON "nodes" USING btree ("address");--> statement-breakpoint
CREATE INDEX "nodes_free_idx" ON "nodes" USING btree ("profile","cluster_id");