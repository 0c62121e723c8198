import { isCluster, type RedisClient } from '../../shared/db/redis.js';

/**
 * A Redis failover (Sentinel promoting a replica, or a Redis Cluster's replica taking over a slot
 * range) keeps the keys the replica had: the epoch survives, but the last writes the old master
 * acknowledged and had not yet sent its replica are lost, a few holds, releases or charges. The
 * gate learns of it from the masters' replication IDs (`master_replid`, new on every promotion and
 * every restart), and then does what a Redis that lost everything makes it do: it reports its holds
 * and unwritten charges again (`REPORT`), and forgets every spendable amount and budget count
 * (`forgetCounts`), which the next admission rebuilds from PostgreSQL.
 */

/**
 * The replication IDs of the masters the client talks to, as one string: it changes with a failover
 * or restart.
 */
export async function masterIds(redis: RedisClient): Promise<string> {
  const masters = isCluster(redis) ? redis.nodes('master') : [redis];
  const ids = await Promise.all(
    masters.map(async (node) => /master_replid:(\w+)/.exec(await node.info('replication'))?.[1] ?? ''),
  );
  return ids.sort().join(',');
}

/**
 * Forgets every spendable amount and budget count under `prefix` (on each master of a cluster):
 * each moves its version too, so a rebuild under way when it ran is not kept.
 */
export async function forgetCounts(redis: RedisClient, prefix: string): Promise<number> {
  const masters = isCluster(redis) ? redis.nodes('master') : [redis];
  let forgotten = 0;
  for (const node of masters) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `${globEscape(prefix)}{org:*}:*`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        const field = key.endsWith(':wallet') ? 'avail' : /\}:budget:/.test(key) ? 'spent' : null;
        if (!field) continue;
        await node.multi().hdel(key, field).hincrby(key, 'ver', 1).exec();
        forgotten++;
      }
    } while (cursor !== '0');
  }
  return forgotten;
}

/** `text` matched literally by a SCAN pattern. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

/**
 * Watches the masters for a failover: at each heartbeat, and at once when the connection is ready
 * again after losing it (ioredis reconnects to the master the sentinels now name). Until that check
 * is done the gate's calls wait for it, so no admission is decided on counts the failover left
 * short.
 */
export class FailoverWatch {
  /** The masters' IDs at the last check; null before the first. */
  private last: string | null = null;
  private lost = false;
  /** The check under way, if any. */
  checking: Promise<void> | null = null;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {
    // Ready again: connected before (perhaps before this watch was made), so a reconnection.
    let connected = redis.status === 'ready';
    redis.on('ready', () => {
      if (connected) void this.check();
      connected = true;
    });
  }

  /** Compares the masters' IDs with the last seen; changed, forgets the counts (`forgetCounts`). */
  check(): Promise<void> {
    return (this.checking ??= this.run().finally(() => (this.checking = null)));
  }

  /**
   * Whether a failover was seen since the last call: the replica then reports again as after a
   * loss.
   */
  takeLoss(): boolean {
    const lost = this.lost;
    this.lost = false;
    return lost;
  }

  private async run(): Promise<void> {
    // A Redis that refuses INFO (some managed ones rename it) only loses this check.
    const ids = await masterIds(this.redis).catch(() => null);
    if (ids === null) return;
    if (this.last !== null && ids !== this.last) {
      await forgetCounts(this.redis, this.prefix).catch(() => {
        throw new Error('counts not forgotten after a failover: tried again at the next heartbeat');
      });
      this.lost = true;
    }
    this.last = ids;
  }
}
