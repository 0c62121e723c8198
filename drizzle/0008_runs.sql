-- Runs: stacks applied to clusters (queue, states, outputs, public URL), their logs, each
-- cluster's SSH key pair, and each stack's OpenTofu state per cluster.
CREATE TABLE "cluster_keys" (
	"cluster_id" text PRIMARY KEY NOT NULL,
	"public_key" text NOT NULL,
	"private_key" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "run_log_chunks" (
	"run_id" text NOT NULL,
	"seq" integer NOT NULL,
	"data" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "runs" (
	"id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"cluster_id" text NOT NULL,
	"stack_name" text NOT NULL,
	"package_sha256" text NOT NULL,
	"node_id" text,
	"inputs" jsonb NOT NULL,
	"state" text DEFAULT 'QUEUED' NOT NULL,
	"created_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"claimed_by" text,
	"lease_until" timestamp with time zone,
	"cancel_requested_at" timestamp with time zone,
	"exit_code" integer,
	"failure" text,
	"outputs" jsonb,
	"public_url" text,
	"web_target" text,
	CONSTRAINT "runs_state_check" CHECK ("runs"."state" in ('QUEUED', 'RUNNING', 'APPLIED', 'FAILED', 'CANCELED'))
);
--> statement-breakpoint
CREATE TABLE "stack_states" (
	"cluster_id" text NOT NULL,
	"stack_name" text NOT NULL,
	"state" "bytea" NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "cluster_keys" ADD CONSTRAINT "cluster_keys_cluster_id_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."clusters"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "run_log_chunks" ADD CONSTRAINT "run_log_chunks_run_id_runs_id_fk" FOREIGN KEY ("run_id") REFERENCES "public"."runs"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_cluster_id_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."clusters"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_node_id_nodes_id_fk" FOREIGN KEY ("node_id") REFERENCES "public"."nodes"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "runs" ADD CONSTRAINT "runs_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "stack_states" ADD CONSTRAINT "stack_states_cluster_id_clusters_id_fk" FOREIGN KEY ("cluster_id") REFERENCES "public"."clusters"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "run_log_chunks_run_seq_idx" ON "run_log_chunks" USING btree ("run_id","seq");--> statement-breakpoint
CREATE INDEX "runs_cluster_idx" ON "runs" USING btree ("cluster_id","created_at");--> statement-breakpoint
CREATE INDEX "runs_queue_idx" ON "runs" USING btree ("state","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "runs_one_active_idx" ON "runs" USING btree ("cluster_id","stack_name") WHERE "runs"."state" in ('QUEUED', 'RUNNING');--> statement-breakpoint
CREATE UNIQUE INDEX "stack_states_key_idx" ON "stack_states" USING btree ("cluster_id","stack_name");