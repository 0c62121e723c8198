import { agentScenarios, SAME_BYTES } from './agent-scenarios.js';
import { cpuPerRequestUs, type ScenarioResult } from './report.js';

const fixed = (value: number | null, digits: number) => (value === null ? '–' : value.toFixed(digits));
const signed = (value: number | null) => (value === null ? '–' : `${value >= 0 ? '+' : ''}${value.toFixed(2)}`);
const addedTtft = (r: ScenarioResult | undefined) =>
  r && r.gateway.ttftP50Ms !== null && r.direct.ttftP50Ms !== null ? r.gateway.ttftP50Ms - r.direct.ttftP50Ms : null;
const cpu = (r: ScenarioResult | undefined) => (r ? cpuPerRequestUs(r, 'subject') : null);
const over = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : a / b);

/**
 * The agent scenarios as one Markdown table (docs/benchmark.md takes it as it is): per scenario and
 * connection count, the body's bytes, Tollgate's and the floor's CPU a request and their ratio, the
 * added p50 and the added first token of each (over the same load sent straight to the simulator),
 * and for a Messages or Responses request its CPU over that of the chat request of the same bytes.
 * Then how Tollgate's CPU grows per KB of chat JSON.
 *
 * @example
 * process.stdout.write(formatAgentTable(results, floorResults, 64));
 */
export function formatAgentTable(tollgate: ScenarioResult[], floor: ScenarioResult[], tokens: number): string {
  const bytes = new Map(agentScenarios(tokens).map((s) => [s.name, JSON.stringify(s.body).length]));
  const ours = tollgate.filter((r) => bytes.has(r.scenario));
  if (ours.length === 0) return '';
  const find = (list: ScenarioResult[], name: string, concurrency: number) =>
    list.find((o) => o.scenario === name && o.concurrency === concurrency);
  const rows = ours.map((r) => {
    const relayed = find(floor, r.scenario, r.concurrency);
    const pair = SAME_BYTES[r.scenario];
    const sameBytes = pair === undefined ? null : over(cpu(r), cpu(find(tollgate, pair, r.concurrency)));
    const cells = [
      `${r.scenario} × ${r.concurrency}`,
      (bytes.get(r.scenario) ?? 0).toLocaleString('en-US'),
      `${fixed(cpu(r), 0)} / ${fixed(cpu(relayed), 0)}`,
      relayed ? `${fixed(over(cpu(r), cpu(relayed)), 1)}x` : '–',
      `${signed(r.addedP50Ms)} / ${signed(relayed?.addedP50Ms ?? null)}`,
      `${signed(addedTtft(r))} / ${signed(addedTtft(relayed))}`,
      sameBytes === null ? '' : `${sameBytes.toFixed(2)}x`,
    ];
    return `| ${cells.join(' | ')} |`;
  });
  const growth = [...new Set(ours.map((r) => r.concurrency))].flatMap((concurrency) => {
    const small = cpu(find(tollgate, 'chat-json-2k', concurrency));
    const large = cpu(find(tollgate, 'chat-json-200k', concurrency));
    const floorSmall = cpu(find(floor, 'chat-json-2k', concurrency));
    const floorLarge = cpu(find(floor, 'chat-json-200k', concurrency));
    if (small === null || large === null) return [];
    const perKb = (a: number | null, b: number | null) => (a === null || b === null ? null : (b - a) / 198);
    return [
      `chat JSON × ${concurrency}: Tollgate's CPU grows ${fixed(perKb(small, large), 1)} µs a KB from 2 KB to 200 KB (the floor's ${fixed(perKb(floorSmall, floorLarge), 1)} µs)`,
    ];
  });
  return [
    'Agent-sized requests (CPU µs a request and added ms: Tollgate / floor; "÷ same-bytes chat": CPU over the chat stream of the same bytes)',
    '',
    '| scenario × connections | body bytes | CPU a request (µs) | ÷ floor | added p50 (ms) | added first token (ms) | ÷ same-bytes chat |',
    '|---|---|---|---|---|---|---|',
    ...rows,
    '',
    ...growth,
  ].join('\n');
}
