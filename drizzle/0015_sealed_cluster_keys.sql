-- Keys kept in clear before are sealed by the gateway itself at its first start with TOLLGATE_NODE_CREDENTIALS_KEY (SQL has no key to seal with).
ALTER TABLE "cluster_keys" ALTER COLUMN "private_key" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "cluster_keys" ADD COLUMN "sealed_private_key" text;
