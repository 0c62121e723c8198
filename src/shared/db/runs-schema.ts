import { sql } from 'drizzle-orm';
import { check, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { bytea } from './bytea.js';
import { createdAt } from './columns.js';
import { organizations, users } from './accounts-schema.js';
import { clusters, nodes } from './clusters-schema.js';

/** A run's states: queued, being applied by a worker, and the three ends. */
export const RUN_STATES = ['QUEUED', 'RUNNING', 'APPLIED', 'FAILED', 'CANCELED'] as const;
export type RunState = (typeof RUN_STATES)[number];

/**
 * A stack applied to a cluster (or one of its nodes): queued by a member of
 * the cluster's organization, claimed by one worker (`FOR UPDATE SKIP
 * LOCKED`), and kept with its exit status, outputs, timings and log.
 */
export const runs = pgTable(
  'runs',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    clusterId: text('cluster_id')
      .notNull()
      .references(() => clusters.id),
    /**
     * The stack by name, as it was queued (no foreign key: a run outlives its stack's deletion),
     * its id, and the package it was queued with.
     */
    stackName: text('stack_name').notNull(),
    /** Null only for runs queued before stacks had ids whose stack had gone by then. */
    stackId: text('stack_id'),
    packageSha256: text('package_sha256').notNull(),
    /** The one node targeted; null: the whole cluster. */
    nodeId: text('node_id').references(() => nodes.id),
    /** The inputs after validation, defaults filled in. */
    inputs: jsonb('inputs').$type<Record<string, number | string>>().notNull(),
    state: text('state', { enum: RUN_STATES }).notNull().default('QUEUED'),
    createdBy: text('created_by').references(() => users.id),
    createdAt: createdAt(),
    startedAt: timestamp('started_at', { withTimezone: true }),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    /**
     * The worker applying it, and until when its claim holds unless renewed (a dead worker's run
     * fails after it).
     */
    claimedBy: text('claimed_by'),
    leaseUntil: timestamp('lease_until', { withTimezone: true }),
    cancelRequestedAt: timestamp('cancel_requested_at', { withTimezone: true }),
    exitCode: integer('exit_code'),
    /** Why a run failed or was canceled, in words for people. */
    failure: text('failure'),
    outputs: jsonb('outputs').$type<Record<string, unknown>>(),
    publicUrl: text('public_url'),
    /**
     * Where requests for the public URL's host go: the node's address and the exposed port
     * (`10.0.0.5:3000`).
     */
    webTarget: text('web_target'),
  },
  (t) => [
    index('runs_cluster_idx').on(t.clusterId, t.createdAt),
    index('runs_queue_idx').on(t.state, t.createdAt),
    uniqueIndex('runs_one_active_idx')
      .on(t.clusterId, t.stackName)
      .where(sql`${t.state} in ('QUEUED', 'RUNNING')`),
    check('runs_state_check', sql`${t.state} in ('QUEUED', 'RUNNING', 'APPLIED', 'FAILED', 'CANCELED')`),
  ],
);

/** A run's log, stored as it is written (secrets already masked), in order. */
export const runLogChunks = pgTable(
  'run_log_chunks',
  {
    runId: text('run_id')
      .notNull()
      .references(() => runs.id),
    seq: integer('seq').notNull(),
    data: text('data').notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('run_log_chunks_run_seq_idx').on(t.runId, t.seq)],
);

/**
 * The OpenTofu state of a stack on a cluster, restored before each run and
 * kept after it. Keyed on the stack's id, not its name: a stack added again
 * under a deleted one's name starts with no state.
 */
export const stackStates = pgTable(
  'stack_states',
  {
    clusterId: text('cluster_id')
      .notNull()
      .references(() => clusters.id),
    /**
     * No foreign key: the state of a deleted stack is kept (what it made may still run on the
     * cluster).
     */
    stackId: text('stack_id').notNull(),
    state: bytea('state').notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('stack_states_key_idx').on(t.clusterId, t.stackId)],
);
