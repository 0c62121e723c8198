import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';

/**
 * Issue 72: how PostgreSQL reads a batch's open lines. A database of its own, migrated, holds a
 * batch of `LINES` lines in progress, most done (lines run in order), 1,000 running under a live
 * lease and the rest waiting, beside 20 finished batches of 1,000 lines; each query of the batch
 * stores that reads open lines is EXPLAINed (ANALYZE, BUFFERS), its third run shown. `MIGRATIONS`
 * picks the migrations folder (a checkout's before a change, to compare).
 *
 * @example
 * npx tsx bench/batch-lines-plans.ts            # LINES=50000 DONE=45000
 */
const ADMIN_URL = process.env.DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const LINES = Number(process.env.LINES ?? 50_000);
const DONE = Number(process.env.DONE ?? 45_000);
const MIGRATIONS = process.env.MIGRATIONS ?? 'drizzle';
const CLAIM = 64;

/** The statements of `LineStore` and `BatchStore` that read open lines, as they send them. */
const QUERIES: Record<string, string> = {
  // LineStore.claim: the update's choice of lines.
  claim: `select open.batch_id, open.line
    from (select id, created_at from batches
      where status = 'in_progress' and ending = 'completed' order by created_at) b
    cross join lateral (
      select l.batch_id, l.line from batch_lines l
      where l.batch_id = b.id
        and ((l.status = 'waiting' and (l.lease_until is null or l.lease_until < now()))
          or (l.status = 'running' and l.lease_until < now()))
      limit ${CLAIM}
      for update of l skip locked) open
    limit ${CLAIM}`,
  // BatchStore.claimFinished: is a batch's every line done?
  finished: `select id from batches where status in ('in_progress', 'cancelling', 'finalizing')
    and not exists (select 1 from batch_lines l where l.batch_id = batches.id
      and l.status in ('waiting', 'running'))`,
  // LineStore.failUnrun: the lines that will not run.
  failUnrun: `select line from batch_lines where batch_id = 'batch_big'
    and (status = 'waiting' or (status = 'running' and lease_until < now())) for update skip locked`,
  // LineStore.waiting: the gauge.
  waiting: `select count(*) from batch_lines l inner join batches b on b.id = l.batch_id
    where l.status = 'waiting' and b.status = 'in_progress'`,
};

const name = `tollgate_bench_lines_${Math.random().toString(36).slice(2, 8)}`;
const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
await admin.unsafe(`create database ${name}`);
const url = new URL(ADMIN_URL);
url.pathname = `/${name}`;
const sql = postgres(url.toString(), { max: 1, onnotice: () => {} });
try {
  await migrate(drizzle(sql), { migrationsFolder: MIGRATIONS });
  await fill();
  const indexes = await sql`select indexrelname as name, pg_size_pretty(pg_relation_size(indexrelid)) as size
    from pg_stat_user_indexes where relname = 'batch_lines' order by indexrelname`;
  console.log(`batch_lines' indexes: ${indexes.map((row) => `${row.name} ${row.size}`).join(', ')}`);
  for (const [label, query] of Object.entries(QUERIES)) console.log(`-- ${label}\n${await plan(query)}`);
} finally {
  await sql.end();
  await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.end();
}

async function fill(): Promise<void> {
  await sql`insert into organizations (id, name) values ('org_bench', 'Bench')`;
  const batch = (id: string, status: string, created: Date) =>
    sql`insert into batches (id, org_id, key_id, key_hash, endpoint, input_file_id, completion_window, status,
        created_at, expires_at)
      values (${id}, 'org_bench', 'key', 'hash', '/v1/chat/completions', 'file-bench', '24h', ${status},
        ${created.toISOString()}, ${new Date(Date.now() + 86_400_000).toISOString()})`;
  for (let b = 0; b < 20; b++) {
    await batch(`batch_old${b}`, 'completed', new Date(Date.now() - 86_400_000 + b * 1000));
    await sql.unsafe(`insert into batch_lines (batch_id, line, custom_id, url, body, status, request_id, response)
      select 'batch_old${b}', i, 'req-' || i, '/v1/chat/completions', repeat('x', 200), 'done',
        'req_old${b}_' || i, repeat('y', 400)
      from generate_series(1, 1000) i`);
  }
  await batch('batch_big', 'in_progress', new Date(Date.now() - 3_600_000));
  await sql.unsafe(`insert into batch_lines (batch_id, line, custom_id, url, body, status, request_id, response,
      claimed_by, lease_until)
    select 'batch_big', i, 'req-' || i, '/v1/chat/completions', repeat('x', 200),
      case when i <= ${DONE} then 'done' when i <= ${DONE + 1000} then 'running' else 'waiting' end,
      'req_big_' || i, case when i <= ${DONE} then repeat('y', 400) end,
      case when i > ${DONE} and i <= ${DONE + 1000} then 'replica-a' end,
      case when i > ${DONE} and i <= ${DONE + 1000} then now() + interval '1 minute' end
    from generate_series(1, ${LINES}) i`);
  await sql`vacuum analyze batch_lines`;
  await sql`analyze batches`;
}

/** The query's plan with its times and buffers, the third run's (the first two warm the cache). */
async function plan(query: string): Promise<string> {
  const undone = new Error('rolled back: the rows locked let go');
  let lines: string[] = [];
  for (let run = 0; run < 3; run++) {
    await sql
      .begin(async (tx) => {
        const rows = await tx.unsafe(`explain (analyze, buffers, costs off) ${query}`);
        lines = rows.map((row) => row['QUERY PLAN'] as string);
        throw undone;
      })
      .catch((error: unknown) => {
        if (error !== undone) throw error;
      });
  }
  return lines.join('\n');
}
