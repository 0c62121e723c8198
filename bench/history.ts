import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADMIN_TOKEN, forgetGatewayKeys, gatewayEnv } from './gateway-env.js';
import { loadHistory, tableSizes } from './history-load.js';
import { coldAndMedian, contention, median, signIn, streamExport, timedGet, timedVerify } from './history-reads.js';
import * as setup from './history-setup.js';
import { freePort, startBuilt, waitForHealth, type Child } from './processes.js';

/**
 * `npm run bench:history` (docs/benchmark.md, "A year of history"): every read of a long history,
 * timed on PostgreSQL. Makes its own database (BENCH_HISTORY_DB, dropped at the end unless KEEP=1;
 * a kept one is measured again without loading), starts the built gateway on it to make the
 * organizations through the operator API, stops it, loads RECORDS usage records with their charges
 * and rollups in SQL (`history-load.ts`), starts it again, and times the big organization's portal
 * pages, its usage summary for a year, a month's ledger export, `wallet verify`, and another
 * organization's chat requests alone and while ten portal views run at once.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RECORDS = Number(process.env.RECORDS ?? 10_000_000);
const OTHER_ORGS = Number(process.env.OTHER_ORGS ?? 200);
/** The history's span: fewer days put more of the big organization's records in last month's export. */
const HISTORY_DAYS = Number(process.env.HISTORY_DAYS ?? 365);
const KEEP = process.env.KEEP === '1';
const SERVER_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DB_NAME = process.env.BENCH_HISTORY_DB ?? 'tollgate_bench_history';
const DB_URL = SERVER_URL.replace(/\/[^/]*$/, `/${DB_NAME}`);
const REDIS_URL = process.env.BENCH_REDIS_URL;
const CONTENTION_SECONDS = Number(process.env.CONTENTION_SECONDS ?? 10);
/** The reads timed, by name (`pages,export,verify,contention`: all of them). */
const READS = new Set((process.env.READS ?? 'pages,export,verify,contention').split(','));
const DAY_MS = 86_400_000;

const log = (line: string) => console.log(line);
const ms = (value: number) => `${Math.round(value)} ms`;
const verdict = (value: number, target: number) => (value <= target ? 'met' : 'MISSED');

async function startGateway(
  name: string,
  dataDir: string,
  enginesFile: string,
): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const env = gatewayEnv(
    { port, name, dataDir, enginesFile, databaseUrl: DB_URL, redisUrl: REDIS_URL },
    // BENCH_GATEWAY_ENV adds settings, `NAME=value` separated by spaces (a sitting with a setting
    // changed, e.g. TOLLGATE_PORTAL_ORG_PAGES=1000).
    {
      TOLLGATE_KEYS_PER_ACCOUNT: '100',
      ...Object.fromEntries(
        (process.env.BENCH_GATEWAY_ENV ?? '')
          .split(/\s+/)
          .filter(Boolean)
          .map((kv) => kv.split('=', 2)),
      ),
    },
  );
  // BENCH_GATEWAY_NODE_ARGS adds node flags to the gateway, as for `npm run bench` (e.g.
  // --cpu-prof).
  const nodeArgs = process.env.BENCH_GATEWAY_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? [];
  const child = startBuilt(name, 'dist/main.js', [], { cwd: ROOT, env, nodeArgs });
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(child, `${url}/health`, 120_000);
  return { child, url };
}

async function main(): Promise<void> {
  const children: Child[] = [];
  const tempDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-bench-history-'));
  try {
    const simPort = await freePort();
    const simUrl = `http://127.0.0.1:${simPort}`;
    const sim = startBuilt(
      'simulator',
      'dist/sim/main.js',
      ['--port', String(simPort), '--model', 'sim-chat', '--ttft-ms', '20', '--itl-ms', '2'],
      { cwd: ROOT, env: process.env },
    );
    children.push(sim);
    await waitForHealth(sim, `${simUrl}/health`, 60_000);
    const enginesFile = path.join(tempDir, 'engines.json');
    await writeFile(enginesFile, JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: simUrl }] }));

    const kept = (await setup.createDatabase(SERVER_URL, DB_NAME, KEEP)) ? await setup.savedPlan(DB_URL) : null;
    let plan = kept;
    if (plan) {
      log(`${DB_NAME} kept from an earlier run: measuring its history again`);
    } else {
      const first = await startGateway('setup', tempDir, enginesFile);
      children.push(first.child);
      const call = setup.adminClient(first.url, ADMIN_TOKEN);
      await setup.addModels(call);
      plan = await setup.makeOrganizations(call, RECORDS, OTHER_ORGS, HISTORY_DAYS);
      await first.child.stop();
      await forgetGatewayKeys(REDIS_URL);
      log(`loading ${RECORDS.toLocaleString('en')} records into ${DB_NAME}`);
      const startedAt = performance.now();
      await loadHistory(DB_URL, plan, log);
      log(`loaded in ${Math.round((performance.now() - startedAt) / 1000)} s`);
      await setup.savePlan(DB_URL, plan);
    }
    const records = plan.orgs.reduce((sum, org) => sum + org.records, 0);
    const big = plan.orgs[0]!;
    log(`\n${records.toLocaleString('en')} records; the big organization has ${big.records.toLocaleString('en')}`);
    const sizes = await tableSizes(DB_URL);
    for (const s of sizes)
      log(
        `  ${s.table}: ${s.rows.toLocaleString('en')} rows, ${(s.bytes / 2 ** 20).toFixed(0)} MiB with indexes, ` +
          `${s.rows ? Math.round(s.bytes / s.rows) : 0} bytes a row`,
      );

    const { child: gateway, url } = await startGateway('gateway', tempDir, enginesFile);
    children.push(gateway);
    const call = setup.adminClient(url, ADMIN_TOKEN);
    const reader = await call('POST', `/orgs/${big.id}/keys`, { name: 'reader', requests_per_minute: 100_000 });
    const cookie = { cookie: await signIn(url, setup.OWNER.email, setup.OWNER.password) };
    const keyHeaders = { authorization: `Bearer ${reader.secret as string}` };
    const today = new Date().toISOString().slice(0, 10);
    const yearAgo = new Date(Date.now() - 364 * DAY_MS).toISOString().slice(0, 10);
    const pages = [
      ['overview', '/portal/overview'],
      ['usage, this month', '/portal/usage'],
      ['usage, last month', '/portal/usage?window=last-month'],
      ['usage, a year', `/portal/usage?window=custom&from=${yearAgo}&to=${today}`],
      ['wallet', '/portal/wallet'],
    ] as const;
    log(`\nreads of the big organization: the first (cold), then the median of three; targets from issue 69`);
    for (const [name, page] of READS.has('pages') ? pages : []) {
      const t = await coldAndMedian(() => timedGet(`${url}${page}`, cookie));
      log(`  portal ${name}: ${ms(t.median)} (cold ${ms(t.cold)}; target <= 300 ms: ${verdict(t.median, 300)})`);
    }
    const now = new Date();
    const from = new Date(now.getTime() - 365 * DAY_MS).toISOString();
    const summaryUrl = `${url}/v1/usage/summary?from=${from}&to=${now.toISOString()}&group_by=day`;
    if (READS.has('pages')) {
      const summary = await coldAndMedian(() => timedGet(summaryUrl, keyHeaders));
      log(
        `  /v1/usage/summary, a year by day: ${ms(summary.median)} (cold ${ms(summary.cold)}; ` +
          `target <= 200 ms: ${verdict(summary.median, 200)})`,
      );
    }

    const lastMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)).toISOString().slice(0, 7);
    const exportUrl = `${url}/admin/v1/orgs/${big.id}/wallet/ledger.csv?month=${lastMonth}`;
    const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const exports = [];
    for (let i = 0; i < (READS.has('export') ? 3 : 0); i++)
      exports.push(await streamExport(exportUrl, adminHeaders, gateway.pid));
    const firstRow = median(exports.map((e) => e.firstRowMs));
    const growth = Math.max(...exports.map((e) => e.rssPeakMiB - e.rssBeforeMiB));
    const e = exports[0];
    if (e)
      log(
        `  ledger.csv for ${lastMonth}: ${e.rows.toLocaleString('en')} rows, ${(e.bytes / 2 ** 20).toFixed(1)} MiB in ` +
          `${ms(median(exports.map((x) => x.totalMs)))}; first row ${ms(firstRow)} (target <= 1000 ms: ` +
          `${verdict(firstRow, 1000)}); RSS ${exports
            .map(
              (x) =>
                `${x.rssBeforeMiB.toFixed(0)} -> peak ` +
                `${x.rssPeakMiB.toFixed(0)} -> ${x.rssAfterMiB.toFixed(0)} MiB`,
            )
            .join(', ')}; ` +
          `largest growth +${growth.toFixed(1)} MiB (target < 50: ${growth < 50 ? 'met' : 'MISSED'})`,
      );

    const cliEnv = { ...process.env, TOLLGATE_URL: url, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN };
    const verifies = [];
    for (let i = 0; i < (READS.has('verify') ? 3 : 0); i++) verifies.push(await timedVerify(ROOT, cliEnv, big.id));
    if (verifies.some((v) => v.code !== 0)) throw new Error(`wallet verify failed:\n${verifies[0]!.output}`);
    if (verifies[0]) {
      log(
        `  tollgate wallet verify: ${ms(median(verifies.map((v) => v.ms)))} (${verifies.map((v) => ms(v.ms)).join(', ')})`,
      );
      log(`    ${verifies[0].output}`);
    }
    for (const org of READS.has('verify') ? plan.orgs.slice(1, 3) : []) {
      const v = await timedVerify(ROOT, cliEnv, org.id);
      if (v.code !== 0) throw new Error(`wallet verify of ${org.id} failed:\n${v.output}`);
    }

    if (!READS.has('contention')) return;
    const neighbour = await call('POST', '/orgs', { name: 'neighbour' });
    await call('POST', `/orgs/${neighbour.id as string}/wallet/topups`, { amount: '1000' });
    const chatKey = await call('POST', `/orgs/${neighbour.id as string}/keys`, {
      name: 'new',
      requests_per_minute: 1_000_000,
      max_concurrency: 1_000,
    });
    const views = pages.map(([, page]) => ({ url: `${url}${page}`, headers: cookie }));
    const c = await contention(url, chatKey.secret as string, views, CONTENTION_SECONDS, gateway.pid);
    const added = c.during.p99 - c.alone.p99;
    log(
      `  another organization's chat, 4 clients, ${CONTENTION_SECONDS} s each: alone p50 ${ms(c.alone.p50)} p99 ` +
        `${ms(c.alone.p99)} (${c.alone.requests} requests); during ten portal views at once p50 ${ms(c.during.p50)} ` +
        `p99 ${ms(c.during.p99)} (${c.during.requests} requests): +${ms(added)} (target <= +50 ms: ` +
        `${verdict(added, 50)}); 503s: ${c.alone.refused503 + c.during.refused503} (target 0)`,
    );
    log(
      `    the views: ${c.views.count} pages, p50 ${ms(c.views.p50)}, slowest ${ms(c.views.max)}, ` +
        `${c.views.refused503} answered 503, ${c.views.other} another status; the gateway's CPU ` +
        `${c.alone.gatewayCores.toFixed(2)} cores alone, ${c.during.gatewayCores.toFixed(2)} during`,
    );
  } finally {
    for (const child of children.reverse()) await child.stop();
    await forgetGatewayKeys(REDIS_URL);
    await rm(tempDir, { recursive: true, force: true });
    if (!KEEP) await setup.dropDatabase(SERVER_URL, DB_NAME);
  }
}

await main();
