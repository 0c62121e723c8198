/**
 * How long `tollgate wallet verify` takes on a long ledger (docs/billing.md, "Reconciling"): an
 * organization with ENTRIES charges (each a usage record and its ledger entry, loaded with
 * generate_series), then a full verify, then NEW more charges and the incremental verify that reads
 * only them. Both go through the CLI and the operator API, as an operator runs them. Meanwhile a
 * probe reads the wallet on the billed path's connections every 5 ms: its slowest read says whether
 * the verification held them.
 *
 *   npx tsx bench/verify-books.ts [--store pglite|postgres] [--entries 1000000] [--new 10000]
 *
 * PostgreSQL: a database of its own on DATABASE_URL's server (default
 * postgres://postgres@127.0.0.1:5432/postgres), dropped at the end. PGlite: a data folder under the
 * system's temp folder, removed at the end.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { loadConfig } from '../src/config/index.js';
import { startGateway } from '../src/server/start.js';
import { main } from '../src/surfaces/cli/main.js';
import { createLogger } from '../src/shared/http/log.js';

const { values } = parseArgs({
  options: {
    store: { type: 'string', default: 'pglite' },
    entries: { type: 'string', default: '1000000' },
    new: { type: 'string', default: '10000' },
  },
});
const ENTRIES = Number(values.entries);
const NEW = Number(values.new);
const TOKEN = 'bench-operator-token-0123456789';
const serverUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-bench-verify-'));
const dbName = `tollgate_bench_verify_${process.pid}`;
let databaseUrl: string | undefined;
if (values.store === 'postgres') {
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${dbName}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${dbName}`;
  databaseUrl = url.toString();
}

const gateway = await startGateway(
  loadConfig({
    PORT: '0',
    TOLLGATE_HOST: '127.0.0.1',
    TOLLGATE_DATA_DIR: dataDir,
    TOLLGATE_SEED_DEMO: 'false',
    TOLLGATE_ADMIN_TOKEN: TOKEN,
    DATABASE_URL: databaseUrl,
  }),
  { log: createLogger('silent') },
);
try {
  const { orgs, keys, db } = gateway.services;
  const org = await orgs.create('verify bench');
  const { key } = await keys.create({ orgId: org.id, name: 'bench' });
  const since = Date.now();

  /** `count` charges after the `done` already there: usage records, their entries, the wallet. */
  const load = async (done: number, count: number, dated: 'past' | 'now') => {
    for (let from = done + 1; from <= done + count; from += 100_000) {
      const to = Math.min(done + count, from + 99_999);
      const at = dated === 'past' ? sql`now() - interval '2 days' + g * interval '100 microseconds'` : sql`now()`;
      await db.execute(sql`insert into usage_records (id, org_id, key_id, model_id, endpoint, prompt_tokens,
          completion_tokens, cost_nanos, status, streamed, usage_source, latency_ms, created_at)
        select 'req_bench_' || g, ${org.id}, ${key.id}, 'sim-chat', 'chat.completions', 10, 10, 1000, 200, false,
          'upstream', 5, ${at} from generate_series(${from}::int, ${to}::int) g`);
      await db.execute(sql`insert into ledger_entries (org_id, kind, amount_nanos, balance_after_nanos, request_id,
          created_at)
        select ${org.id}, 'charge', -1000, -1000 * g::bigint, 'req_bench_' || g, ${at}
        from generate_series(${from}::int, ${to}::int) g order by g`);
    }
    await db.execute(sql`update wallets set balance_nanos = -1000 * ${done + count}::bigint where org_id = ${org.id}`);
  };

  /** The slowest of the billed path's wallet reads while `run` runs. */
  const probed = async <T>(run: () => Promise<T>) => {
    let running = true;
    let slowest = 0;
    let reads = 0;
    const probe = (async () => {
      while (running) {
        const t = performance.now();
        await db.execute(sql`select balance_nanos from wallets where org_id = ${org.id}`);
        slowest = Math.max(slowest, performance.now() - t);
        reads++;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    const t = performance.now();
    const result = await run();
    const ms = performance.now() - t;
    running = false;
    await probe;
    return { result, ms, slowest, reads };
  };

  const verify = async (...flags: string[]) => {
    let stdout = '';
    const code = await main(['wallet', 'verify', '--org', org.id, '--json', ...flags, '--url', gateway.url], {
      stdout: (text) => (stdout += text),
      stderr: (text) => process.stderr.write(text),
    });
    const v = JSON.parse(stdout) as { ok: boolean; mode: string; entries_read: number; ledger_entries: number };
    if (code !== 0 || !v.ok) throw new Error(`verify failed: ${stdout}`);
    return v;
  };
  process.env.TOLLGATE_ADMIN_TOKEN = TOKEN;

  let t = performance.now();
  await load(0, ENTRIES, 'past');
  console.log(`loaded ${ENTRIES} charges in ${((performance.now() - t) / 1000).toFixed(1)} s (${values.store})`);
  if (process.env.PROFILE) {
    const steps = gateway.services.books.verifying(org.id, { full: true });
    let last = performance.now();
    const spent: Record<string, number> = {};
    for (;;) {
      const step = await steps.next();
      if (step.done) break;
      spent[step.value.phase] = (spent[step.value.phase] ?? 0) + performance.now() - last;
      last = performance.now();
    }
    console.log(spent);
  }
  const full = await probed(() => verify('--full'));
  t = performance.now();
  await load(ENTRIES, NEW, 'now');
  const loadedNew = performance.now() - t;
  const incremental = await probed(() => verify());
  const row = (name: string, r: typeof full) =>
    `${name.padEnd(12)} ${(r.ms / 1000).toFixed(2).padStart(7)} s  ${String(r.result.entries_read).padStart(8)} entries read` +
    `  (${r.result.mode}, ${r.result.ledger_entries} in the books)  billed-path read: slowest ${r.slowest.toFixed(0)} ms of ${r.reads}`;
  console.log(`loaded ${NEW} more in ${(loadedNew / 1000).toFixed(1)} s`);
  console.log(row('full', full));
  console.log(row('incremental', incremental));
  console.log(`since start ${((Date.now() - since) / 1000).toFixed(0)} s`);
} finally {
  await gateway.close();
  await rm(dataDir, { recursive: true, force: true });
  if (databaseUrl) {
    const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists ${dbName} with (force)`);
    await admin.end();
  }
}
