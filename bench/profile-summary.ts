import { readdir, readFile, stat } from 'node:fs/promises';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/**
 * `npx tsx bench/profile-summary.ts [--top 25] PROFILE_OR_DIR...`: where a CPU profile's time goes,
 * from the `.cpuprofile` files node writes with `--cpu-prof` (e.g.
 * `BENCH_GATEWAY_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" npm run bench`). Prints the top
 * functions by self time and by total (inclusive) time, each with its file:line (mapped back to
 * src/ through dist/'s source maps), and self time summed by area: a package, a part of Node, a
 * folder of src/, the garbage collector. Several files are summed. `--callers writev` splits a
 * function's self time by the nearest package or gateway frame above it (which socket writes are
 * whose); `--timeline` prints how busy each second was, and `--from S --to S` keep only those
 * seconds (the load, not the start-up).
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}
interface Frame {
  name: string;
  where: string;
  area: string;
}
/** Seconds since each profile's start: samples outside are left out (start-up, idle ends). */
interface Window {
  fromS: number;
  toS: number;
}
interface Totals {
  frame: Frame;
  selfUs: number;
  totalUs: number;
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const maps = new Map<string, SourceMap | null>();

async function sourceMapOf(url: string): Promise<SourceMap | null> {
  if (!maps.has(url)) {
    try {
      const file = fileURLToPath(url);
      maps.set(url, new SourceMap(JSON.parse(await readFile(`${file}.map`, 'utf8'))));
    } catch {
      maps.set(url, null);
    }
  }
  return maps.get(url) ?? null;
}

/**
 * A frame's name, its file:line (through dist/'s source maps for the gateway's own bundle), and its
 * area.
 */
async function describe(frame: CallFrame): Promise<Frame> {
  const name = frame.functionName || '(anonymous)';
  if (!frame.url) return { name, where: '', area: name.startsWith('(') ? name : '(native)' };
  let file = frame.url.startsWith('file://') ? fileURLToPath(frame.url) : frame.url;
  let line = frame.lineNumber;
  // Packages keep their own file names: their maps point into sources they do not ship (drizzle's
  // `src/…`).
  const map = file.startsWith(path.join(ROOT, 'dist') + path.sep) ? await sourceMapOf(frame.url) : null;
  const entry = map?.findEntry(frame.lineNumber, frame.columnNumber);
  if (entry && 'originalSource' in entry && entry.originalSource) {
    file = entry.originalSource.startsWith('file://')
      ? fileURLToPath(entry.originalSource)
      : path.resolve(path.dirname(fileURLToPath(frame.url)), entry.originalSource);
    line = entry.originalLine;
  }
  const relative = path.isAbsolute(file) ? path.relative(ROOT, file) : file;
  return { name, where: `${relative}:${line + 1}`, area: areaOf(relative) };
}

/**
 * A package (`node_modules/<name>`), a part of Node (`node:http`), a folder of src/, or the file
 * itself.
 */
function areaOf(file: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (pkg) return pkg[1]!;
  const internal = /^node:(?:internal\/)?(?:deps\/)?([^/.]+)/.exec(file);
  if (internal) return `node:${internal[1]}`;
  const src = /^src\/(.+)\/[^/]+$/.exec(file);
  return src ? `src/${src[1]}` : file;
}

/** Neither Node's own code nor a native or V8 pseudo-frame: a package's or the gateway's. */
const isUserCode = (frame: Frame) => !frame.area.startsWith('node:') && !frame.area.startsWith('(');

/**
 * Self and total time per function (a recursive function's total counted once per sample), self
 * time per area, and for `--callers NAME` the self time of functions called NAME, by the nearest
 * package or gateway frame that led there.
 */
async function summarize(profiles: Profile[], callersOf: string | undefined, window: Window) {
  const byKey = new Map<string, Totals>();
  const areas = new Map<string, number>();
  const callers = new Map<string, number>();
  let allUs = 0;
  let idleUs = 0;
  for (const profile of profiles) {
    const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
    const parent = new Map<number, number>();
    for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
    const keyOf = new Map<number, string>();
    for (const node of profile.nodes) {
      const frame = await describe(node.callFrame);
      const key = `${frame.name} ${frame.where}`;
      keyOf.set(node.id, key);
      if (!byKey.has(key)) byKey.set(key, { frame, selfUs: 0, totalUs: 0 });
    }
    let atUs = 0;
    profile.samples.forEach((id, i) => {
      // Each sample's time is the delta to the next one (the last sample gets none).
      const us = profile.timeDeltas[i + 1] ?? 0;
      atUs += us;
      if (atUs < window.fromS * 1e6 || atUs >= window.toS * 1e6) return;
      allUs += us;
      const leaf = byKey.get(keyOf.get(id)!)!;
      if (leaf.frame.name === '(idle)') idleUs += us;
      leaf.selfUs += us;
      areas.set(leaf.frame.area, (areas.get(leaf.frame.area) ?? 0) + us);
      if (leaf.frame.name === callersOf) {
        let at = parent.get(id);
        while (at !== undefined && !isUserCode(byKey.get(keyOf.get(at)!)!.frame)) at = parent.get(at);
        const caller = at === undefined ? '(none)' : keyOf.get(at)!;
        callers.set(caller, (callers.get(caller) ?? 0) + us);
      }
      const seen = new Set<string>();
      for (let at: number | undefined = id; at !== undefined && nodes.has(at); at = parent.get(at)) {
        const key = keyOf.get(at)!;
        if (seen.has(key)) continue;
        seen.add(key);
        byKey.get(key)!.totalUs += us;
      }
    });
  }
  return { functions: [...byKey.values()], areas, callers, allUs, idleUs };
}

/** Busy (not idle) per cent of each second of a profile, to choose --from and --to. */
function timeline(profile: Profile): string {
  const idle = new Set(profile.nodes.filter((node) => node.callFrame.functionName === '(idle)').map((node) => node.id));
  const all: number[] = [];
  const busy: number[] = [];
  let atUs = 0;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i + 1] ?? 0;
    atUs += us;
    const second = Math.floor(atUs / 1e6);
    all[second] = (all[second] ?? 0) + us;
    if (!idle.has(id)) busy[second] = (busy[second] ?? 0) + us;
  });
  return all.map((us, second) => `${second}s ${Math.round((100 * (busy[second] ?? 0)) / us)}%`).join('  ');
}

async function profilesIn(inputs: string[]): Promise<string[]> {
  const files: string[] = [];
  for (const input of inputs) {
    if ((await stat(input)).isDirectory()) {
      for (const name of (await readdir(input)).sort())
        if (name.endsWith('.cpuprofile')) files.push(path.join(input, name));
    } else files.push(input);
  }
  return files;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: {
      top: { type: 'string', default: '25' },
      callers: { type: 'string', multiple: true },
      from: { type: 'string', default: '0' },
      to: { type: 'string', default: 'Infinity' },
      timeline: { type: 'boolean', default: false },
    },
    allowPositionals: true,
  });
  const window = { fromS: Number(values.from), toS: Number(values.to) };
  const top = Number(values.top);
  const files = await profilesIn(positionals);
  if (files.length === 0)
    throw new Error(
      'usage: tsx bench/profile-summary.ts [--top N] [--callers NAME]... [--from S] [--to S] [--timeline] PROFILE.cpuprofile|DIR ...',
    );
  const profiles = await Promise.all(files.map(async (file) => JSON.parse(await readFile(file, 'utf8')) as Profile));
  if (values.timeline) return void process.stdout.write(`${profiles.map(timeline).join('\n')}\n`);
  const { functions, areas, allUs, idleUs } = await summarize(profiles, undefined, window);
  const busyUs = allUs - idleUs;
  const pct = (us: number) => `${((100 * us) / busyUs).toFixed(1).padStart(5)} %`;
  const row = (t: Totals) =>
    `  ${pct(t.selfUs)}  ${pct(t.totalUs)}  ${t.frame.name.slice(0, 48).padEnd(48)}  ${t.frame.where}`;
  const ranked = (by: 'selfUs' | 'totalUs') =>
    functions
      .filter((t) => t.frame.name !== '(idle)' && t.frame.name !== '(root)')
      .sort((a, b) => b[by] - a[by])
      .slice(0, top)
      .map(row);
  const lines = [
    `${files.length} profile${files.length === 1 ? '' : 's'}: ${(allUs / 1e6).toFixed(2)} s sampled, ${(busyUs / 1e6).toFixed(2)} s busy (not idle); percentages are of busy time`,
    '',
    `top ${top} by self time:     self     total  function                                          where`,
    ...ranked('selfUs'),
    '',
    `top ${top} by total time:    self     total  function                                          where`,
    ...ranked('totalUs'),
    '',
    'self time by area:',
    ...[...areas.entries()]
      .filter(([area]) => area !== '(idle)')
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([area, us]) => `  ${pct(us)}  ${area}`),
  ];
  for (const name of values.callers ?? []) {
    const { callers } = await summarize(profiles, name, window);
    const sum = [...callers.values()].reduce((a, b) => a + b, 0);
    lines.push('', `self time of ${name} (${pct(sum).trim()}), by the nearest package or gateway frame above it:`);
    for (const [caller, us] of [...callers.entries()].sort((a, b) => b[1] - a[1]).slice(0, top))
      lines.push(`  ${pct(us)}  ${caller}`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
