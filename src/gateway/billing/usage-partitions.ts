import { sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import type { Logger } from '../../shared/http/log.js';
import { rowsOf } from '../../shared/db/rows.js';

/**
 * Usage records are partitioned by month of `created_at`, UTC (migration 0025):
 * `usage_records_y2026m11` holds November 2026, `usage_records_default` whatever falls in no
 * month's partition. The gateway creates the months ahead (`ensureUsagePartitions`) and drops whole
 * months past the detail's retention (`dropExpiredUsageDetail`): a partition dropped is a file
 * removed, not a long DELETE that bloats the table and holds its locks. The daily rollups
 * (`usage_daily`) and the ledger are other tables, kept. Any replica may run either, at any time:
 * each runs in one transaction under an advisory lock, and does nothing when there is nothing to
 * do.
 */

/** Any fixed number: replicas take turns creating and dropping partitions. */
const PARTITIONS_LOCK_ID = 7_110_472_069;
/**
 * Months created ahead of the current one: a gateway that stops its maintenance for weeks still
 * writes to its month.
 */
export const MONTHS_AHEAD = 2;
/**
 * A drop waits this long for the table's lock, then gives up until the next run, rather than queue
 * writers behind it.
 */
const DROP_LOCK_TIMEOUT = '5s';

/** How often a gateway keeps the months: the next ones created, those past retention dropped. */
const KEEP_INTERVAL_MS = 86_400_000;

const PARTITION_NAME = /^usage_records_y(\d{4})m(\d{2})$/;

/** The first instant of the UTC month `months` after `at`'s. */
export function monthStart(at: Date, months = 0): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + months, 1));
}

/** The partition's name for the UTC month starting at `month`. */
export function partitionName(month: Date): string {
  return `usage_records_y${month.getUTCFullYear()}m${String(month.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The month partitions there are, oldest first, each with its month's first instant. */
export async function usagePartitions(db: Database): Promise<Array<{ name: string; month: Date }>> {
  const rows = rowsOf<{ name: string }>(
    await db.execute(sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = 'usage_records'::regclass`),
  );
  return rows
    .map(({ name }) => ({ name, match: PARTITION_NAME.exec(name) }))
    .filter((p) => p.match !== null)
    .map(({ name, match }) => ({ name, month: new Date(Date.UTC(Number(match![1]), Number(match![2]) - 1, 1)) }))
    .sort((a, b) => a.month.getTime() - b.month.getTime());
}

/**
 * Creates the partitions of `now`'s month and the `MONTHS_AHEAD` after it that are missing. Rows
 * already written to the default partition for such a month (the maintenance stopped longer than
 * that) move into the new one. Returns the partitions created.
 */
export async function ensureUsagePartitions(db: Database, now = new Date()): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(${PARTITIONS_LOCK_ID})`);
    const existing = new Set((await usagePartitions(tx)).map((p) => p.name));
    const created: string[] = [];
    for (let i = 0; i <= MONTHS_AHEAD; i++) {
      const from = monthStart(now, i);
      const name = partitionName(from);
      if (existing.has(name)) continue;
      await createMonth(tx, name, from, monthStart(from, 1));
      created.push(name);
    }
    return created;
  });
}

async function createMonth(db: Database, name: string, from: Date, to: Date): Promise<void> {
  const table = sql.identifier(name);
  const bounds = sql.raw(`for values from ('${from.toISOString()}') to ('${to.toISOString()}')`);
  const inMonth = sql`created_at >= ${from.toISOString()}::timestamptz and created_at < ${to.toISOString()}::timestamptz`;
  const [strays] = rowsOf<{ n: number }>(
    await db.execute(sql`select count(*)::int as n from usage_records_default where ${inMonth}`),
  );
  if (Number(strays?.n ?? 0) === 0) {
    await db.execute(sql`create table if not exists ${table} partition of usage_records ${bounds}`);
    return;
  }
  // Attaching checks that the default partition holds none of the month's rows: they move first.
  await db.execute(sql`create table ${table} (like usage_records including defaults including constraints)`);
  await db.execute(sql`insert into ${table} select * from usage_records_default where ${inMonth}`);
  await db.execute(sql`delete from usage_records_default where ${inMonth}`);
  await db.execute(sql`alter table usage_records attach partition ${table} ${bounds}`);
}

/**
 * Drops the months of usage records that ended more than `retentionMonths` months before `now`'s
 * month began (0: none), oldest first: with 12, on any day of November 2026 the months up to
 * October 2025 go. Before each drop, `usage_detail_horizon` moves past it: from then on a charge up
 * to the last one of the month's records may name a record no longer there (`wallet verify` accepts
 * it), and reports read the month from its rollups. Bodies still stored for the month's requests go
 * with it. Returns the partitions dropped.
 */
export async function dropExpiredUsageDetail(db: Database, retentionMonths: number, now = new Date()) {
  if (retentionMonths <= 0) return [];
  const keptFrom = monthStart(now, -retentionMonths);
  const dropped: string[] = [];
  for (const partition of await usagePartitions(db)) {
    const end = monthStart(partition.month, 1);
    if (end > keptFrom) break;
    const done = await db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${PARTITIONS_LOCK_ID})`);
      await tx.execute(sql.raw(`set local lock_timeout = '${DROP_LOCK_TIMEOUT}'`));
      const table = sql.identifier(partition.name);
      // Another replica dropped it meanwhile.
      const [there] = rowsOf<{ ok: boolean }>(
        await tx.execute(sql`select to_regclass(${partition.name}) is not null as ok`),
      );
      if (!there?.ok) return false;
      await tx.execute(sql`insert into usage_detail_horizon (id, kept_from, through_entry_id)
        select 1, ${end.toISOString()}::timestamptz, coalesce(max(l.id), 0)
          from ${table} u join ledger_entries l on l.request_id = u.id
        on conflict (id) do update set kept_from = greatest(usage_detail_horizon.kept_from, excluded.kept_from),
          through_entry_id = greatest(usage_detail_horizon.through_entry_id, excluded.through_entry_id)`);
      await tx.execute(sql`delete from request_data where request_id in (select id from ${table})`);
      await tx.execute(sql`drop table ${table}`);
      return true;
    });
    if (done) dropped.push(partition.name);
  }
  return dropped;
}

/**
 * Keeps the months now and then daily (a failure is logged and tried again the next day: the months
 * ahead leave weeks to spare). Returns what stops it.
 */
export async function keepUsageMonths(db: Database, retentionMonths: number, log: Logger) {
  const keep = async () => {
    try {
      await ensureUsagePartitions(db);
      const dropped = await dropExpiredUsageDetail(db, retentionMonths);
      if (dropped.length > 0) log.info('usage records past retention dropped', { partitions: dropped.join(' ') });
    } catch (error) {
      log.warn('keeping the usage records by month failed', { detail: (error as Error).message });
    }
  };
  await keep();
  const timer = setInterval(() => void keep(), KEEP_INTERVAL_MS);
  timer.unref();
  return async () => clearInterval(timer);
}
