/**
 * What the flow-control benches (`fairness.ts`, `fair-shares.ts`) share: the operator calls that
 * set up an organization and its keys, one streamed chat measured, and the figures' medians.
 */

/** The operator token the flow benches' gateways are started with. */
export const FLOW_BENCH_ADMIN = 'fairness-bench-operator-token';

/** Failed streams so far; the first few are printed, so a broken sitting says why. */
const failures = new Map<string, number>();

/** One streamed chat: ms to its first content and the tokens it read and generated (its usage). */
export async function stream(url: string, secret: string, maxTokens: number, prompt = 'Write.') {
  const started = performance.now();
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'sim-chat',
      messages: [{ role: 'user', content: prompt }],
      max_tokens: maxTokens,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    }),
  });
  if (!response.ok) {
    const body = await response.text();
    const code = /"code":"([^"]+)"/.exec(body)?.[1] ?? 'none';
    const seen = `${response.status} ${code}`;
    failures.set(seen, (failures.get(seen) ?? 0) + 1);
    if (failures.get(seen) === 1) console.error(`a stream failed: ${response.status} ${body.slice(0, 300)}`);
    return { firstTokenMs: Infinity, tokens: 0, promptTokens: 0 };
  }
  let firstTokenMs = Infinity;
  let text = '';
  const decoder = new TextDecoder();
  for await (const bytes of response.body!) {
    const chunk = decoder.decode(bytes, { stream: true });
    if (firstTokenMs === Infinity && chunk.includes('"content":"')) firstTokenMs = performance.now() - started;
    text += chunk;
  }
  const completion = /"completion_tokens":(\d+)/.exec(text);
  const prompted = /"prompt_tokens":(\d+)/.exec(text);
  return {
    firstTokenMs,
    tokens: completion ? Number(completion[1]) : 0,
    promptTokens: prompted ? Number(prompted[1]) : 0,
  };
}

export async function admin(url: string, method: string, route: string, body: unknown) {
  const response = await fetch(`${url}/admin/v1${route}`, {
    method,
    headers: { authorization: `Bearer ${FLOW_BENCH_ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

/** The flow benches' model, `sim-chat`, in the catalog with its price. */
export async function addSimChat(url: string): Promise<void> {
  await admin(url, 'POST', '/models', {
    id: 'sim-chat',
    display_name: 'Sim Chat',
    hf_repo_id: 'bench/sim-chat',
    task_type: 'chat',
    context_length: 8192,
  });
  await admin(url, 'PUT', '/prices/sim-chat', { input_per_million: '0.15', output_per_million: '0.60' });
}

export async function org(url: string, name: string): Promise<string> {
  const created = await admin(url, 'POST', '/orgs', { name });
  await admin(url, 'POST', `/orgs/${String(created.id)}/wallet/topups`, { amount: '1000.00' });
  return String(created.id);
}

export async function key(url: string, orgId: string, concurrency: number): Promise<string> {
  const created = await admin(url, 'POST', `/orgs/${orgId}/keys`, {
    name: 'bench',
    max_concurrency: concurrency,
    requests_per_minute: 100_000,
  });
  return String(created.secret);
}

export async function healthy(url: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (
      await fetch(`${url}/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await sleep(100);
  }
  throw new Error(`${url} never answered /health`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** A median with its spread, as every ratio that moves with the machine is reported: `m (min–max)`. */
export function spread(values: number[], digits = 0): string {
  const fixed = (value: number) => value.toFixed(digits);
  return `${fixed(median(values))} (${fixed(Math.min(...values))}–${fixed(Math.max(...values))})`;
}
