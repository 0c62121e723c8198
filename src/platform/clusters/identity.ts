import { and, eq, isNotNull, isNull, lt, ne, or, sql } from 'drizzle-orm';
import { readableKeyPair } from './key-pair.js';
import type { Config } from '../../config/index.js';
import type { Database } from '../../shared/db/client.js';
import { clusterKeys, clusterNodeKeys, nodes } from '../../shared/db/schema.js';
import { describeError, type Logger } from '../../shared/http/log.js';
import type { NodeKeyRow } from './node-keys.js';
import { keysCommand, keysScript, NodeAccessError, openCredential, runOnNode, sealCredential } from './node-access.js';

/** How long a process holds a row it works on; past it (the process died) another may take it. */
const CLAIM_MS = 60_000;
const MAX_BACKOFF_MS = 5 * 60_000;

/**
 * Each cluster's access identity on its nodes: the cluster's SSH key pair
 * (made with the cluster, kept in the database sealed), installed in the run
 * user's `authorized_keys` on every node the operator gave SSH access to,
 * and removed when the cluster is deleted, before the node can be
 * allocated again. Every gateway process works on what is due (`poll`),
 * one process per node at a time (a claim), retrying failures with
 * exponential backoff up to five minutes.
 *
 * @example
 * const identity = new ClusterIdentity({ db, config: config.nodeAccess, log });
 * identity.start();
 * await identity.removeNow(clusterId); // after deleting it
 */
export class ClusterIdentity {
  private timer: NodeJS.Timeout | null = null;
  private working: Promise<void> | null = null;

  constructor(private readonly deps: { db: Database; config: Config['nodeAccess']; log: Logger; pollMs?: number }) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.poke(), this.deps.pollMs ?? 1000);
    this.timer.unref();
    this.poke();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.working;
  }

  /** Works on what is due now (a cluster was just created) rather than at the next poll. */
  poke(): void {
    this.working ??= this.workDue()
      .catch((error: unknown) => this.deps.log.warn('cluster keys: the store could not be read', describeError(error)))
      .finally(() => (this.working = null));
  }

  /**
   * The cluster's SSH key pair, opened: made and stored sealed (bound to the
   * cluster's id) the first time; two processes at once keep the first one
   * stored. Without TOLLGATE_NODE_CREDENTIALS_KEY no node can hold a
   * cluster's key (nodes cannot be given SSH access), so nothing is kept:
   * each call makes a pair of its own, unless one was stored in clear before
   * keys were sealed. A sealed key this gateway cannot open is a
   * `NodeAccessError` saying so.
   */
  async keyOf(clusterId: string): Promise<{ publicKey: string; privateKey: string }> {
    const { db, config } = this.deps;
    const stored = async () => (await db.select().from(clusterKeys).where(eq(clusterKeys.clusterId, clusterId)))[0];
    const existing = await stored();
    if (existing) return this.opened(existing);
    const pair = readableKeyPair(`tollgate ${clusterId}`);
    if (!config.credentialsKey) return { publicKey: pair.public, privateKey: pair.private };
    await db
      .insert(clusterKeys)
      .values({
        clusterId,
        publicKey: pair.public,
        sealedPrivateKey: sealCredential(config.credentialsKey, clusterId, pair.private),
      })
      .onConflictDoNothing();
    return this.opened((await stored())!);
  }

  /**
   * Seals the cluster keys stored in clear (by gateways before keys were
   * sealed), once, at start; without TOLLGATE_NODE_CREDENTIALS_KEY, says how
   * many are left in clear. Safe in several processes at once.
   */
  async sealClearKeys(): Promise<void> {
    const { db, config, log } = this.deps;
    const clear = await db
      .select({ clusterId: clusterKeys.clusterId, privateKey: clusterKeys.privateKey })
      .from(clusterKeys)
      .where(isNotNull(clusterKeys.privateKey));
    if (clear.length === 0) return;
    if (!config.credentialsKey) {
      log.warn('cluster keys are stored in clear: set TOLLGATE_NODE_CREDENTIALS_KEY and the next start seals them', {
        count: clear.length,
      });
      return;
    }
    for (const row of clear) {
      await db
        .update(clusterKeys)
        .set({
          sealedPrivateKey: sealCredential(config.credentialsKey, row.clusterId, row.privateKey!),
          privateKey: null,
        })
        .where(and(eq(clusterKeys.clusterId, row.clusterId), isNotNull(clusterKeys.privateKey)));
    }
    log.info('cluster keys stored in clear were sealed', { count: clear.length });
  }

  private opened(row: typeof clusterKeys.$inferSelect): { publicKey: string; privateKey: string } {
    const key = this.deps.config.credentialsKey;
    if (row.privateKey !== null) return { publicKey: row.publicKey, privateKey: row.privateKey };
    if (!key)
      throw new NodeAccessError(
        `Cluster ${row.clusterId}'s key is sealed, and this gateway has no TOLLGATE_NODE_CREDENTIALS_KEY to open it with.`,
      );
    try {
      return { publicKey: row.publicKey, privateKey: openCredential(key, row.clusterId, row.sealedPrivateKey ?? '') };
    } catch {
      throw new NodeAccessError(
        `Cluster ${row.clusterId}'s key does not open with this gateway's TOLLGATE_NODE_CREDENTIALS_KEY (it was sealed with another).`,
      );
    }
  }

  /** Each node's row for a cluster (installing, installed, failed; or removing after deletion). */
  rowsOf(clusterId: string): Promise<NodeKeyRow[]> {
    return this.deps.db.select().from(clusterNodeKeys).where(eq(clusterNodeKeys.clusterId, clusterId));
  }

  /**
   * Removes a deleted cluster's key from its nodes now, waiting for each
   * (at most the SSH timeout); a node that cannot be reached stays
   * `releasing` and is retried in the background.
   */
  async removeNow(clusterId: string): Promise<void> {
    const pending = () =>
      this.deps.db
        .select()
        .from(clusterNodeKeys)
        .where(
          and(
            eq(clusterNodeKeys.clusterId, clusterId),
            eq(clusterNodeKeys.action, 'remove'),
            eq(clusterNodeKeys.state, 'pending'),
          ),
        );
    await Promise.all((await pending()).map((row) => this.work(row)));
    // A row another worker held (a retry of the install under way) is removed by that worker as
    // soon as it is done: wait for it.
    const deadline = Date.now() + this.deps.config.sshTimeoutMs * 2 + 2_000;
    for (let rows = await pending(); rows.length > 0 && Date.now() < deadline; rows = await pending()) {
      await Promise.all(rows.map((row) => this.work(row)));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  private async workDue(): Promise<void> {
    const due = await this.deps.db
      .select()
      .from(clusterNodeKeys)
      .where(
        and(
          ne(clusterNodeKeys.state, 'done'),
          lt(clusterNodeKeys.nextAttemptAt, sql`now()`),
          or(isNull(clusterNodeKeys.claimedUntil), lt(clusterNodeKeys.claimedUntil, sql`now()`)),
        ),
      )
      .limit(20);
    await Promise.all(due.map((row) => this.work(row)));
  }

  /**
   * Does what one node's row asks now, backoff or not (an operator fixed the
   * node's access, or asks to release it); waits for another process that
   * holds the row, at most two SSH timeouts. Answers the row as it is after.
   */
  async retryNow(clusterId: string, nodeId: string): Promise<NodeKeyRow | undefined> {
    const current = async () =>
      (
        await this.deps.db
          .select()
          .from(clusterNodeKeys)
          .where(and(eq(clusterNodeKeys.clusterId, clusterId), eq(clusterNodeKeys.nodeId, nodeId)))
      )[0];
    const deadline = Date.now() + this.deps.config.sshTimeoutMs * 2 + 2_000;
    for (let row = await current(); row && row.state !== 'done'; row = await current()) {
      if ((await this.work(row)) || Date.now() > deadline) return current();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return current();
  }

  /**
   * Claims one row, does what it asks on its node, and records how it went; false when another
   * process holds it.
   */
  private async work(row: NodeKeyRow): Promise<boolean> {
    const { db, log } = this.deps;
    const where = and(eq(clusterNodeKeys.clusterId, row.clusterId), eq(clusterNodeKeys.nodeId, row.nodeId));
    const [claimed] = await db
      .update(clusterNodeKeys)
      .set({ claimedUntil: sql`now() + ${CLAIM_MS} * interval '1 millisecond'` })
      .where(
        and(
          where,
          ne(clusterNodeKeys.state, 'done'),
          or(isNull(clusterNodeKeys.claimedUntil), lt(clusterNodeKeys.claimedUntil, sql`now()`)),
        ),
      )
      .returning();
    if (!claimed) return false;
    try {
      await this.apply(claimed);
      // Recorded done only if nobody changed the action meanwhile (a delete during an install):
      // else it is due again.
      const [done] = await db
        .update(clusterNodeKeys)
        .set({ state: 'done', error: null, claimedUntil: null, updatedAt: sql`now()` })
        .where(and(where, eq(clusterNodeKeys.action, claimed.action)))
        .returning();
      if (!done)
        await db
          .update(clusterNodeKeys)
          .set({ claimedUntil: null, nextAttemptAt: sql`now()` })
          .where(where);
      else if (claimed.action === 'remove')
        await db
          .update(nodes)
          .set({ releasingClusterId: null })
          .where(and(eq(nodes.id, row.nodeId), eq(nodes.releasingClusterId, row.clusterId)));
    } catch (error) {
      const message =
        error instanceof NodeAccessError
          ? error.message
          : "The node's access could not be used (see the gateway's log).";
      if (!(error instanceof NodeAccessError))
        log.error('cluster keys: a node could not be worked on', {
          clusterId: row.clusterId,
          nodeId: row.nodeId,
          ...describeError(error),
        });
      else
        log.warn(`cluster keys: ${claimed.action} failed`, {
          clusterId: row.clusterId,
          nodeId: row.nodeId,
          reason: message,
        });
      const backoffMs = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(claimed.attempts, 16));
      const [failed] = await db
        .update(clusterNodeKeys)
        .set({
          state: 'failed',
          error: message,
          attempts: claimed.attempts + 1,
          nextAttemptAt: sql`now() + ${backoffMs} * interval '1 millisecond'`,
          claimedUntil: null,
          updatedAt: sql`now()`,
        })
        // Not over a row an operator released meanwhile (done): its node is free, nothing is
        // retried.
        .where(and(where, eq(clusterNodeKeys.action, claimed.action), ne(clusterNodeKeys.state, 'done')))
        .returning();
      // The action changed while this one ran (a delete during an install): released, and due at
      // once for the new one.
      if (!failed)
        await db
          .update(clusterNodeKeys)
          .set({ claimedUntil: null, nextAttemptAt: sql`now()` })
          .where(where);
    }
    return true;
  }

  private async apply(row: NodeKeyRow): Promise<void> {
    const { db, config } = this.deps;
    const [node] = await db.select().from(nodes).where(eq(nodes.id, row.nodeId));
    if (!node?.sshCredential || !node.sshUser || !node.sshPort || !node.runUser || !node.hostKeyFingerprint)
      throw new NodeAccessError(`Node ${row.nodeId} has no SSH access registered.`);
    if (!config.credentialsKey)
      throw new NodeAccessError(
        "This gateway has no TOLLGATE_NODE_CREDENTIALS_KEY to open the node's credential with.",
      );
    const { publicKey } = await this.keyOf(row.clusterId);
    const access = {
      host: node.address,
      port: node.sshPort,
      user: node.sshUser,
      privateKey: openCredential(config.credentialsKey, node.id, node.sshCredential),
      hostKeyFingerprint: node.hostKeyFingerprint,
    };
    await runOnNode(
      access,
      keysCommand(node.runUser),
      keysScript(row.action, node.runUser, row.clusterId, publicKey),
      config.sshTimeoutMs,
    );
  }
}
