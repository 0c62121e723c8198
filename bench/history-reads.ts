import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { rssMiB } from './processes.js';

/** The middle of three (or more) timings. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

/** One GET read to its end: its time in ms; throws on any status but 200. */
export async function timedGet(url: string, headers: Record<string, string>): Promise<number> {
  const startedAt = performance.now();
  const response = await fetch(url, { headers });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}`);
  return performance.now() - startedAt;
}

/** A first (cold) read, then the median of three more. */
export async function coldAndMedian(read: () => Promise<number>): Promise<{ cold: number; median: number }> {
  const cold = await read();
  const times = [await read(), await read(), await read()];
  return { cold, median: median(times) };
}

/**
 * The portal's session cookie of a signed-in user (`POST /auth/sign-in`, as the portal's form
 * does).
 */
export async function signIn(base: string, email: string, password: string): Promise<string> {
  const response = await fetch(`${base}/auth/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  await response.arrayBuffer();
  const cookie = response.headers.getSetCookie().find((c) => c.startsWith('tollgate_session='));
  if (response.status !== 200 || !cookie) throw new Error(`sign-in answered ${response.status}`);
  return cookie.split(';')[0]!;
}

export interface ExportRun {
  firstRowMs: number;
  totalMs: number;
  rows: number;
  bytes: number;
  rssBeforeMiB: number;
  rssPeakMiB: number;
  rssAfterMiB: number;
}

/**
 * A ledger export read whole as it streams: time to its first row (the line after the header), the
 * rows and bytes, and the gateway's resident memory before, at its highest (sampled every 50 ms)
 * and after.
 */
export async function streamExport(url: string, headers: Record<string, string>, pid: number): Promise<ExportRun> {
  const rssBeforeMiB = (await rssMiB(pid)) ?? NaN;
  let rssPeakMiB = rssBeforeMiB;
  const sampler = setInterval(() => {
    void rssMiB(pid).then((mib) => {
      if (mib !== null && mib > rssPeakMiB) rssPeakMiB = mib;
    });
  }, 50);
  const startedAt = performance.now();
  let firstRowMs = NaN;
  let lines = 0;
  let bytes = 0;
  try {
    const response = await fetch(url, { headers });
    if (response.status !== 200 || !response.body) throw new Error(`GET ${url} answered ${response.status}`);
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      bytes += chunk.byteLength;
      for (const byte of chunk) if (byte === 10) lines++;
      if (lines >= 2 && Number.isNaN(firstRowMs)) firstRowMs = performance.now() - startedAt;
    }
  } finally {
    clearInterval(sampler);
  }
  const totalMs = performance.now() - startedAt;
  const rssAfterMiB = (await rssMiB(pid)) ?? NaN;
  return { firstRowMs, totalMs, rows: lines - 1, bytes, rssBeforeMiB, rssPeakMiB, rssAfterMiB };
}

/** `tollgate wallet verify --org ID` run as an operator runs it: its time in ms and its output. */
export function timedVerify(
  cwd: string,
  env: NodeJS.ProcessEnv,
  orgId: string,
): Promise<{ ms: number; code: number | null; output: string }> {
  const startedAt = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/tollgate.mjs', 'wallet', 'verify', '--org', orgId], { cwd, env });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ ms: performance.now() - startedAt, code, output: output.trim() }));
  });
}

/**
 * A process's CPU time so far (user + system), in ms, from /proc/PID/stat (100 clock ticks a
 * second).
 */
async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

interface ChatPhase {
  p50: number;
  p99: number;
  requests: number;
  refused503: number;
  /** The gateway's CPU time over the phase's wall time: 1 is one core busy all along. */
  gatewayCores: number;
}

export interface Contention {
  alone: ChatPhase;
  during: ChatPhase;
  views: { count: number; p50: number; max: number; refused503: number; other: number };
}

/**
 * Another organization's chat requests (`clients` loops on its new key), first alone for `seconds`,
 * then as long again while ten of the big organization's portal views run at once, round after
 * round.
 */
export async function contention(
  base: string,
  chatKey: string,
  views: Array<{ url: string; headers: Record<string, string> }>,
  seconds: number,
  gatewayPid: number,
  clients = 4,
): Promise<Contention> {
  const headers = { authorization: `Bearer ${chatKey}`, 'content-type': 'application/json' };
  const body = JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 });
  const phase = async (withViews: boolean) => {
    const [cpuBefore, startedAt] = [await cpuMs(gatewayPid), performance.now()];
    const until = startedAt + seconds * 1000;
    const times: number[] = [];
    let refused503 = 0;
    const chat = async () => {
      while (performance.now() < until) {
        const startedAt = performance.now();
        const response = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers, body });
        await response.arrayBuffer();
        if (response.status === 503) refused503++;
        else if (response.status !== 200) throw new Error(`chat answered ${response.status}`);
        times.push(performance.now() - startedAt);
      }
    };
    const viewTimes: number[] = [];
    const viewStatus = { refused503: 0, other: 0 };
    const view = async (first: number) => {
      for (let i = first; performance.now() < until; i++) {
        const { url, headers: h } = views[i % views.length]!;
        const startedAt = performance.now();
        const response = await fetch(url, { headers: h });
        await response.arrayBuffer();
        if (response.status === 503) viewStatus.refused503++;
        else if (response.status !== 200) viewStatus.other++;
        viewTimes.push(performance.now() - startedAt);
      }
    };
    await Promise.all([
      ...Array.from({ length: clients }, chat),
      ...(withViews ? Array.from({ length: 10 }, (_, i) => view(i)) : []),
    ]);
    const gatewayCores = ((await cpuMs(gatewayPid)) - cpuBefore) / (performance.now() - startedAt);
    const summary = {
      p50: percentile(times, 50),
      p99: percentile(times, 99),
      requests: times.length,
      refused503,
      gatewayCores,
    };
    return { summary, viewTimes, viewStatus };
  };
  const alone = await phase(false);
  const during = await phase(true);
  return {
    alone: alone.summary,
    during: during.summary,
    views: {
      count: during.viewTimes.length,
      p50: percentile(during.viewTimes, 50),
      max: Math.max(...during.viewTimes),
      ...during.viewStatus,
    },
  };
}
