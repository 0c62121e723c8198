import { sql } from 'drizzle-orm';
import {
  bigserial,
  check,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { createdAt } from './columns.js';
import { organizations, users } from './accounts-schema.js';

/**
 * A kind of machine the operator offers: what a cluster is made of, and what the cost reports
 * price.
 */
export const hardwareProfiles = pgTable(
  'hardware_profiles',
  {
    name: text('name').primaryKey(),
    gpusPerNode: integer('gpus_per_node').notNull(),
    gpuModel: text('gpu_model').notNull().default(''),
    /** For display. */
    cpuCores: integer('cpu_cores').notNull().default(0),
    memoryGib: integer('memory_gib').notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [check('hardware_profiles_gpus_check', sql`${t.gpusPerNode} >= 0`)],
);

/** A machine of a profile, free or allocated to one cluster. */
export const nodes = pgTable(
  'nodes',
  {
    id: text('id').primaryKey(),
    profile: text('profile')
      .notNull()
      .references(() => hardwareProfiles.name),
    /** Where it is reached (host name or address), unique. */
    address: text('address').notNull(),
    /**
     * How the platform reaches it, e.g. `ssh://ops@10.0.0.5:22` (a note; `ssh_*` below is what it
     * uses).
     */
    access: text('access').notNull().default(''),
    /**
     * The operator's account the platform logs in as to install and remove clusters' keys; null:
     * the platform has no access.
     */
    sshUser: text('ssh_user'),
    sshPort: integer('ssh_port'),
    /** The account runs log in as, whose `authorized_keys` gets each cluster's key. */
    runUser: text('run_user'),
    /**
     * The operator's private key for `ssh_user`, sealed with TOLLGATE_NODE_CREDENTIALS_KEY
     * (AES-256-GCM); never returned or logged.
     */
    sshCredential: text('ssh_credential'),
    /**
     * The node's SSH host key (`ssh-ed25519 AAAA…`) as pinned when the node was added, and its
     * SHA256 fingerprint.
     */
    hostKey: text('host_key'),
    hostKeyFingerprint: text('host_key_fingerprint'),
    /** The cluster it is allocated to; null: free. */
    clusterId: text('cluster_id'),
    /** A deleted cluster whose key is still on this node: not allocatable until it is removed. */
    releasingClusterId: text('releasing_cluster_id'),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('nodes_address_idx').on(t.address), index('nodes_free_idx').on(t.profile, t.clusterId)],
);

export const NODE_KEY_ACTIONS = ['install', 'remove'] as const;
export const NODE_KEY_STATES = ['pending', 'done', 'failed'] as const;

/**
 * A cluster's key on one of its nodes: installed when the cluster is
 * created, removed when it is deleted, retried with backoff until done.
 * Whoever works on a row claims it until `claimed_until`, so two gateway
 * processes never edit one node's `authorized_keys` at once.
 */
export const clusterNodeKeys = pgTable(
  'cluster_node_keys',
  {
    clusterId: text('cluster_id')
      .notNull()
      .references(() => clusters.id),
    nodeId: text('node_id')
      .notNull()
      .references(() => nodes.id),
    action: text('action', { enum: NODE_KEY_ACTIONS }).notNull(),
    state: text('state', { enum: NODE_KEY_STATES }).notNull().default('pending'),
    error: text('error'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull().defaultNow(),
    claimedUntil: timestamp('claimed_until', { withTimezone: true }),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.clusterId, t.nodeId] }),
    index('cluster_node_keys_due_idx').on(t.state, t.nextAttemptAt),
  ],
);

export const CLUSTER_STATES = ['running', 'deleted'] as const;

/** An organization's cluster: nodes of one profile, allocated from its creation to its deletion. */
export const clusters = pgTable(
  'clusters',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    name: text('name').notNull(),
    profile: text('profile')
      .notNull()
      .references(() => hardwareProfiles.name),
    publicDomain: text('public_domain').notNull(),
    state: text('state', { enum: CLUSTER_STATES }).notNull().default('running'),
    createdBy: text('created_by').references(() => users.id),
    createdAt: createdAt(),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
  },
  (t) => [
    index('clusters_org_idx').on(t.orgId),
    check('clusters_state_check', sql`${t.state} in ('running', 'deleted')`),
    // A public domain belongs to one live cluster platform-wide (stored lower-case).
    uniqueIndex('clusters_live_public_domain_idx')
      .on(t.publicDomain)
      .where(sql`${t.state} = 'running'`),
  ],
);

/**
 * Which node was a cluster's, from when to when (exact to the microsecond):
 * what the cost reports meter. A cluster's rows are closed (`released_at`)
 * when it is deleted; a deleted cluster stays in the history.
 */
export const nodeAllocations = pgTable(
  'node_allocations',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    clusterId: text('cluster_id')
      .notNull()
      .references(() => clusters.id),
    nodeId: text('node_id')
      .notNull()
      .references(() => nodes.id),
    profile: text('profile').notNull(),
    allocatedAt: timestamp('allocated_at', { withTimezone: true }).notNull().defaultNow(),
    releasedAt: timestamp('released_at', { withTimezone: true }),
  },
  (t) => [index('node_allocations_cluster_idx').on(t.clusterId), index('node_allocations_time_idx').on(t.allocatedAt)],
);

/**
 * Each cluster's access identity: an SSH key pair, made with the cluster;
 * the private key is stored sealed and reaches runs only as a file. Kept
 * only when the gateway has TOLLGATE_NODE_CREDENTIALS_KEY to seal it with.
 */
export const clusterKeys = pgTable('cluster_keys', {
  clusterId: text('cluster_id')
    .primaryKey()
    .references(() => clusters.id),
  publicKey: text('public_key').notNull(),
  /**
   * The private key sealed with TOLLGATE_NODE_CREDENTIALS_KEY (AES-256-GCM), bound to the cluster's
   * id; never returned or logged.
   */
  sealedPrivateKey: text('sealed_private_key'),
  /**
   * A private key in clear, as gateways kept them before they were sealed: sealed (and this
   * emptied) at the first start with the key.
   */
  privateKey: text('private_key'),
  createdAt: createdAt(),
});
