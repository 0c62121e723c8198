import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { fixedProbe, namedProbe, type CpuProbe } from './cpu.js';
import { measureLanes, type Lane } from './measure.js';
import { freePort, rssMiB, startBuilt, startChild, waitForHealth, type Child } from './processes.js';
import { formatCpuSummary, formatScenario, type ScenarioResult } from './report.js';
import { provision } from './setup.js';
import { startOtlpSink } from './otlp-sink.js';
import { ADMIN_TOKEN, cleanEnv, forgetGatewayKeys, gatewayEnv } from './gateway-env.js';
import { allScenarios, type Scenario } from './scenarios.js';
import { AGENT_SCENARIOS, SAME_BYTES } from './agent-scenarios.js';
import { formatAgentTable } from './agent-report.js';

/**
 * `npm run bench`: the gateway's cost as a ratio against the same load sent
 * straight to a vLLM simulator. A report, never a pass/fail test.
 */

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH_DIR, '..');
const START_TIMEOUT_MS = 60_000;
/**
 * Portkey 1.15.2 appends its own headers to the upstream's fetch Response, whose headers are
 * immutable on Node 20's undici: every stream and embedding answered 500 (`TypeError: immutable`).
 * Loaded into Portkey's process only, this wraps each answer of `fetch` in a new Response with a
 * copy of its headers (a few µs a request), so all three scenarios run through Portkey.
 */
const PORTKEY_FETCH_SHIM =
  'data:text/javascript,const f=globalThis.fetch;globalThis.fetch=async(...a)=>{const r=await f(...a);return new Response(r.body,{status:r.status,statusText:r.statusText,headers:r.headers})}';

interface Settings {
  ttftMs: number;
  itlMs: number;
  tokens: number;
  /** Floats in each embedding the simulator answers (null: the simulator's default, 64). */
  dimensions: number | null;
  seconds: number;
  rounds: number;
  /**
   * The scenarios run (`--scenarios`, all by default) and the connection counts (`--concurrency`, 1
   * and 32).
   */
  only: string[] | null;
  concurrencies: number[];
  /**
   * 'direct': the simulator itself; 'limits-off' / 'billing-off' / 'metrics-off' / 'flow-off': a
   * second gateway with TOLLGATE_LIMITS / TOLLGATE_BILLING / TOLLGATE_METRICS /
   * TOLLGATE_FLOW_CONTROL off.
   */
  baseline: Baseline;
  /** The measured gateway sends traces (to a stand-in OTLP collector); the baseline never does. */
  tracing: boolean;
  store: string;
  limits: string;
}

/** What the gateway is compared against, and the second gateway's settings when it is one. */
const BASELINES = {
  direct: null,
  'limits-off': { TOLLGATE_LIMITS: 'off' },
  'billing-off': { TOLLGATE_BILLING: 'off' },
  'metrics-off': { TOLLGATE_METRICS: 'off' },
  'flow-off': { TOLLGATE_FLOW_CONTROL: 'off' },
} as const;
type Baseline = keyof typeof BASELINES;

function readSettings(): Omit<Settings, 'store' | 'limits'> {
  const { values } = parseArgs({
    options: {
      'ttft-ms': { type: 'string', default: '20' },
      'itl-ms': { type: 'string', default: '2' },
      tokens: { type: 'string', default: '32' },
      dimensions: { type: 'string' },
      scenarios: { type: 'string' },
      concurrency: { type: 'string', default: '1,32' },
      seconds: { type: 'string', default: '3' },
      rounds: { type: 'string', default: '3' },
      baseline: { type: 'string', default: 'direct' },
      tracing: { type: 'boolean', default: false },
    },
  });
  if (!(values.baseline in BASELINES))
    throw new Error(`--baseline must be one of ${Object.keys(BASELINES).join(', ')}, got ${values.baseline}`);
  const number = (name: keyof typeof values, integer: boolean, min: number) => {
    const value = Number(values[name]);
    if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
      throw new Error(`--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got ${values[name]}`);
    }
    return value;
  };
  return {
    ttftMs: number('ttft-ms', true, 0),
    itlMs: number('itl-ms', true, 0),
    tokens: number('tokens', true, 1),
    dimensions: values.dimensions === undefined ? null : number('dimensions', true, 1),
    only: values.scenarios?.split(',').filter(Boolean) ?? null,
    concurrencies: values.concurrency.split(',').map((text) => {
      const value = Number(text);
      if (!Number.isInteger(value) || value < 1)
        throw new Error(`--concurrency must be integers >= 1, comma-separated, got ${values.concurrency}`);
      return value;
    }),
    seconds: number('seconds', false, 0.1),
    rounds: number('rounds', true, 1),
    baseline: values.baseline as Baseline,
    tracing: values.tracing,
  };
}

/** The scenarios `--scenarios` names (all by default). */
function scenarios(settings: Settings): Scenario[] {
  const all = allScenarios(settings.tokens);
  // `agents` names the agent-sized scenarios (bench/agent-scenarios.ts), which run only when named.
  const only = settings.only?.flatMap((name) => (name === 'agents' ? AGENT_SCENARIOS : [name])) ?? null;
  const unknown = only?.filter((name) => !all.some((scenario) => scenario.name === name)) ?? [];
  if (unknown.length > 0)
    throw new Error(
      `--scenarios: unknown ${unknown.join(', ')} (known: ${all.map((scenario) => scenario.name).join(', ')})`,
    );
  return all.filter((scenario) => (only === null ? !scenario.onlyWhenNamed : only.includes(scenario.name)));
}

async function main(): Promise<number> {
  const base = readSettings();
  const children: Child[] = [];
  const tempDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-bench-'));
  let cleaning: Promise<void> | undefined;
  const cleanups: Array<() => Promise<void>> = [];
  const cleanup = () =>
    (cleaning ??= (async () => {
      await Promise.all(children.map((child) => child.stop()));
      await Promise.all(cleanups.map((close) => close()));
      await forgetGatewayKeys(process.env.BENCH_REDIS_URL);
      await rm(tempDir, { recursive: true, force: true });
    })());
  const interrupt = (signal: NodeJS.Signals) => {
    process.stderr.write(`\nbench: ${signal}, stopping children\n`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);

  try {
    const databaseUrl = process.env.BENCH_DATABASE_URL;
    const dataDir = path.join(tempDir, 'data');
    const redisUrl = process.env.BENCH_REDIS_URL;
    const settings: Settings = {
      ...base,
      store: databaseUrl ? 'postgres (BENCH_DATABASE_URL)' : `pglite on disk (${dataDir})`,
      limits: redisUrl ? 'redis (BENCH_REDIS_URL)' : 'memory',
    };
    scenarios(settings); // an unknown --scenarios name fails here, before anything starts

    const simPort = await freePort();
    const simUrl = `http://127.0.0.1:${simPort}`;
    // --default-max-tokens: a request without ignore_eos (the Messages scenario's) is answered
    // `tokens` tokens too.
    const simArgs = [
      '--port',
      String(simPort),
      '--model',
      'sim-chat',
      '--model',
      'sim-embed:embedding',
      '--ttft-ms',
      String(settings.ttftMs),
      '--itl-ms',
      String(settings.itlMs),
    ];
    simArgs.push('--default-max-tokens', String(settings.tokens));
    // A context that holds the agent scenarios' 200 KB prompts (the simulator's default is 4,096
    // tokens).
    simArgs.push('--max-model-len', '262144');
    if (settings.dimensions !== null) simArgs.push('--embedding-dimensions', String(settings.dimensions));
    const sim = startBuilt('simulator', 'dist/sim/main.js', simArgs, { cwd: ROOT, env: cleanEnv() });
    children.push(sim);
    await waitForHealth(sim, `${simUrl}/health`, START_TIMEOUT_MS);

    const enginesFile = path.join(tempDir, 'engines.json');
    // BENCH_ROUTED=1 serves the simulator as a list of one server (`urls`), so every request goes
    // through the replica router (prefix hashes, load scores) as on a fleet; by default it is one
    // fixed URL, which skips it.
    const served = process.env.BENCH_ROUTED === '1' ? { urls: [simUrl] } : { url: simUrl };
    const engines = ['sim-chat', 'sim-embed'].map((model) => ({ kind: 'static', model, ...served }));
    await writeFile(enginesFile, JSON.stringify({ engines }));
    // BENCH_GATEWAY_NODE_ARGS adds node flags to the gateway only, e.g. "--cpu-prof
    // --cpu-prof-dir=/tmp/prof".
    const nodeArgs = process.env.BENCH_GATEWAY_NODE_ARGS?.split(/\s+/).filter(Boolean) ?? [];
    const startGateway = async (name: string, extra: Record<string, string>) => {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const env = gatewayEnv({ port, name, dataDir, enginesFile, databaseUrl, redisUrl }, extra);
      const child = startBuilt(name, 'dist/main.js', [], {
        cwd: ROOT,
        env,
        nodeArgs: name === 'gateway' ? nodeArgs : [],
      });
      children.push(child);
      await waitForHealth(child, `${url}/health`, START_TIMEOUT_MS);
      return { child, url, secret: await provision(url, ADMIN_TOKEN) };
    };
    // --tracing: the measured gateway sends every request's spans to a stand-in collector.
    const sink = settings.tracing ? await startOtlpSink() : null;
    if (sink) cleanups.push(() => sink.close());
    const subject = await startGateway('gateway', sink ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } : {});
    const gateway = subject.child;
    const gwUrl = subject.url;
    const secret = subject.secret;
    const rssStart = await rssMiB(gateway.pid);
    const baselineEnv = BASELINES[settings.baseline];
    const baseline = baselineEnv
      ? await startGateway(`gateway-${settings.baseline}`, { ...baselineEnv })
      : { url: simUrl, secret: null, child: sim };
    // CPU read around every slice: the process measured, what the direct slices went to, the
    // simulator, and the servers the gateway uses when they are this machine's (every redis-server,
    // every postgres process).
    const services = [
      ...(redisUrl ? [namedProbe('redis', 'redis-server')] : []),
      ...(databaseUrl ? [namedProbe('postgres', 'postgres')] : []),
    ];
    const probesFor = (subject: Child, directTo: Child): CpuProbe[] => [
      fixedProbe('subject', subject.pid),
      fixedProbe('baseline', directTo.pid),
      ...(directTo === sim ? [] : [fixedProbe('simulator', sim.pid)]),
      ...services,
    ];

    // The relays are started before anything is measured: each scenario's slices through them are
    // taken in the same rounds as the gateway's (bench/measure.ts), so the gateway / floor ratio is
    // not moved by the machine's drift.
    const relays: Array<{
      who: 'portkey' | 'floor' | 'rules floor';
      child: Child;
      url: string;
      headers: Record<string, string>;
    }> = [];

    // BENCH_PORTKEY names Portkey's open gateway
    // (node_modules/@portkey-ai/gateway/build/start-server.js of an `npm install
    // @portkey-ai/gateway`): the same scenarios through it, against the same simulator, for
    // comparison.
    const portkeyEntry = process.env.BENCH_PORTKEY;
    if (portkeyEntry) {
      const port = await freePort();
      const portkey = startChild(
        'portkey',
        process.execPath,
        ['--import', PORTKEY_FETCH_SHIM, path.resolve(portkeyEntry), `--port=${port}`, '--headless'],
        {
          cwd: tempDir,
          env: cleanEnv({ NODE_ENV: 'production' }),
        },
      );
      children.push(portkey);
      await waitForHealth(portkey, `http://127.0.0.1:${port}/`, START_TIMEOUT_MS);
      const headers = {
        authorization: 'Bearer unused',
        'x-portkey-provider': 'openai',
        'x-portkey-custom-host': `${simUrl}/v1`,
      };
      relays.push({ who: 'portkey', child: portkey, url: `http://127.0.0.1:${port}`, headers });
    }

    // BENCH_FLOOR=1: the same scenarios through bench/floor-proxy.ts, a bare node:http relay (no
    // parsing, auth, limits or billing): what Node's HTTP stack alone costs on this machine, the
    // floor under any Node.js gateway.
    if (process.env.BENCH_FLOOR === '1') {
      const port = await freePort();
      const floor = startChild(
        'floor-proxy',
        process.execPath,
        ['--import', 'tsx', path.join(BENCH_DIR, 'floor-proxy.ts'), '--port', String(port), '--upstream', simUrl],
        {
          cwd: ROOT,
          env: cleanEnv(),
        },
      );
      children.push(floor);
      await waitForHealth(floor, `http://127.0.0.1:${port}/health`, START_TIMEOUT_MS);
      relays.push({ who: 'floor', child: floor, url: `http://127.0.0.1:${port}`, headers: {} });
    }

    // BENCH_RULES_FLOOR=1 (with BENCH_REDIS_URL): the same scenarios through bench/rules-floor.ts,
    // the floor relay plus the money rules' own work (a key, an admit and a settle in Redis, a
    // durable charge): what any Node.js gateway keeping those rules costs on this machine, before
    // its design adds anything.
    let rulesFloorUrl: string | null = null;
    if (process.env.BENCH_RULES_FLOOR === '1') {
      if (!redisUrl)
        throw new Error('BENCH_RULES_FLOOR=1 needs BENCH_REDIS_URL: the rules floor admits and settles in Redis');
      const port = await freePort();
      const rulesKey = 'rules-floor-key';
      const rulesArgs = [
        '--port',
        String(port),
        '--upstream',
        simUrl,
        '--redis',
        redisUrl,
        '--journal',
        path.join(tempDir, 'rules-floor.jsonl'),
        '--key',
        rulesKey,
      ];
      const rulesFloor = startChild(
        'rules-floor',
        process.execPath,
        ['--import', 'tsx', path.join(BENCH_DIR, 'rules-floor.ts'), ...rulesArgs],
        {
          cwd: ROOT,
          env: cleanEnv(),
        },
      );
      children.push(rulesFloor);
      rulesFloorUrl = `http://127.0.0.1:${port}`;
      await waitForHealth(rulesFloor, `${rulesFloorUrl}/health`, START_TIMEOUT_MS);
      relays.push({
        who: 'rules floor',
        child: rulesFloor,
        url: rulesFloorUrl,
        headers: { authorization: `Bearer ${rulesKey}` },
      });
    }

    /**
     * The gateway's lane for a scenario, and one for each relay when the scenario is plain chat or
     * embeddings.
     */
    const lanesOf = (scenario: Scenario): Lane[] => [
      {
        who: 'gateway',
        scenario,
        direct: {
          url: `${baseline.url}${settings.baseline === 'direct' ? (scenario.direct?.path ?? scenario.path) : scenario.path}`,
          headers: baseline.secret ? { authorization: `Bearer ${baseline.secret}` } : {},
        },
        subject: { url: `${gwUrl}${scenario.path}`, headers: { authorization: `Bearer ${secret}` } },
        baseline: settings.baseline,
        directSendsEngineBody: settings.baseline === 'direct' && scenario.direct !== undefined,
        probes: probesFor(gateway, baseline.child),
      },
      // A relay passes the request through as it is: a scenario of the gateway's own protocol has
      // nothing to reach.
      ...(scenario.direct !== undefined ? [] : relays).map((relay) => ({
        who: relay.who,
        scenario,
        direct: { url: `${simUrl}${scenario.path}`, headers: {} },
        subject: { url: `${relay.url}${scenario.path}`, headers: relay.headers },
        baseline: 'direct',
        directSendsEngineBody: false,
        probes: probesFor(relay.child, sim),
      })),
    ];

    const byWho = new Map<string, ScenarioResult[]>([
      ['gateway', []],
      ...relays.map((r) => [r.who, []] as [string, ScenarioResult[]]),
    ]);
    for (const group of measuredTogether(scenarios(settings))) {
      for (const concurrency of settings.concurrencies) {
        process.stderr.write(`bench: ${group.map((s) => s.name).join(' with ')} × ${concurrency} …\n`);
        const lanes = group.flatMap(lanesOf);
        const measured = await measureLanes(lanes, concurrency, settings);
        lanes.forEach((lane, i) => byWho.get(lane.who)!.push(measured[i]!));
        if (gateway.exited()) throw new Error(`the gateway exited during the run:\n${gateway.output()}`);
      }
    }
    const order = scenarios(settings).map((s) => s.name);
    const inOrder = (who: string) =>
      byWho
        .get(who)!
        .sort((a, b) => order.indexOf(a.scenario) - order.indexOf(b.scenario) || a.concurrency - b.concurrency);
    const results = inOrder('gateway');
    const relayed = (who: string) => (byWho.has(who) ? inOrder(who) : []);
    const portkeyResults = relayed('portkey');
    const floorResults = relayed('floor');
    const rulesResults = relayed('rules floor');
    const rssEnd = await rssMiB(gateway.pid);
    // Proof the traced gateway really exported (its batches leave every few seconds).
    if (sink)
      process.stderr.write(
        `bench: the OTLP sink received ${sink.stats().exports} exports, ${sink.stats().bytes} bytes\n`,
      );
    if (rulesFloorUrl) {
      // Proof the rules floor did the rules' work: every answer charged, with the engine's own
      // counts.
      const stats = (await (await fetch(`${rulesFloorUrl}/stats`)).json()) as Record<string, number>;
      process.stderr.write(
        `bench: the rules floor answered ${stats.answered}, charged ${stats.charged} (${stats.completionTokens} completion tokens) in ${stats.journalWrites} durable writes, refused ${stats.refused}, settles failed ${stats.settleFailed}\n`,
      );
    }
    // Portkey's failures are its own (shown in its rows); they do not void the gateway's figures.
    const totalErrors = results.reduce((sum, r) => sum + r.direct.errors + r.gateway.errors, 0);
    printReport(settings, results, rssStart, rssEnd, totalErrors);
    const others: Array<[string, ScenarioResult[]]> = [
      [
        "Portkey's open gateway (no auth, limits or billing) / direct to the same simulator; its rows read 'gateway' for Portkey",
        portkeyResults,
      ],
      [
        "The floor: a bare node:http relay (bench/floor-proxy.ts: no parsing, auth, limits or billing) / direct; its rows read 'gateway' for the relay",
        floorResults,
      ],
      [
        "The rules floor: the floor plus a key, an admit and a settle in Redis and a durable charge (bench/rules-floor.ts) / direct; its rows read 'gateway' for it",
        rulesResults,
      ],
    ];
    for (const [title, list] of others) {
      if (list.length > 0)
        process.stdout.write(`\n${[title, '', ...list.flatMap((r) => [formatScenario(r), ''])].join('\n')}`);
    }
    if (results.some((r) => r.cpu))
      process.stdout.write(`\n${formatCpuSummary(results, floorResults, portkeyResults, rulesResults)}\n`);
    const agents = formatAgentTable(results, floorResults, settings.tokens);
    if (agents) process.stdout.write(`\n${agents}\n`);
    const json = {
      date: new Date().toISOString(),
      node: process.version,
      settings,
      gatewayRssMiB: { start: rssStart, end: rssEnd },
      totalErrors,
      scenarios: results,
      portkey: portkeyResults,
      floor: floorResults,
      rulesFloor: rulesResults,
    };
    await mkdir(path.join(BENCH_DIR, 'results'), { recursive: true });
    await writeFile(path.join(BENCH_DIR, 'results', 'latest.json'), `${JSON.stringify(json, null, 2)}\n`);
    // Failed requests make the ratios meaningless, so such a run does not count as a success.
    return totalErrors === 0 ? 0 : 1;
  } finally {
    await cleanup();
  }
}

/**
 * The scenarios in the groups measured together: an agent's request with the chat stream of its
 * bytes (the ratio issue 50 judges it by), every other scenario alone. Relays join each group's
 * rounds on their own.
 */
function measuredTogether(list: Scenario[]): Scenario[][] {
  const names = new Set(list.map((s) => s.name));
  const partners = new Set(
    Object.entries(SAME_BYTES)
      .filter(([agent]) => names.has(agent))
      .map(([, chat]) => chat),
  );
  return list
    .filter((s) => !partners.has(s.name))
    .map((s) => {
      const partner = SAME_BYTES[s.name];
      return partner !== undefined && names.has(partner) ? [s, list.find((o) => o.name === partner)!] : [s];
    });
}

function printReport(
  settings: Settings,
  results: ScenarioResult[],
  rssStart: number | null,
  rssEnd: number | null,
  totalErrors: number,
): void {
  const mib = (value: number | null) => (value === null ? 'n/a' : `${value.toFixed(1)} MiB`);
  const warning = `!!! ${totalErrors} REQUESTS FAILED: the numbers below are not a valid measurement !!!`;
  const lines = [
    {
      direct: 'Tollgate gateway overhead (gateway / direct to the simulator)',
      'limits-off': 'Cost of per-key limits (gateway / the same gateway with TOLLGATE_LIMITS=off)',
      'billing-off':
        'Cost of billing: holds, charges, usage records (gateway / the same gateway with TOLLGATE_BILLING=off)',
      'flow-off': 'Cost of flow control, unsaturated (gateway / the same gateway with TOLLGATE_FLOW_CONTROL=off)',
      'metrics-off': `Cost of metrics${settings.tracing ? ' and tracing' : ''} (gateway${settings.tracing ? ' sending traces' : ''} / the same gateway with TOLLGATE_METRICS=off and no tracing)`,
    }[settings.baseline],
    `settings: ttft ${settings.ttftMs} ms, itl ${settings.itlMs} ms, ${settings.tokens} tokens per chat, embeddings of ${settings.dimensions ?? 64} floats, ${settings.seconds} s per slice, ${settings.rounds} rounds, store ${settings.store}, limits ${settings.limits}, tracing ${settings.tracing ? 'on (OTLP to a local sink)' : 'off'}`,
    ...(totalErrors > 0 ? ['', warning] : []),
    '',
    ...results.flatMap((r) => [formatScenario(r), '']),
    `gateway RSS: ${mib(rssStart)} at start, ${mib(rssEnd)} at the end`,
    ...(totalErrors > 0 ? ['', warning] : []),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

try {
  process.exitCode = await main();
} catch (error) {
  process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
