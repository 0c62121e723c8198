/**
 * How long a usage read waits under load (docs/benchmark-history.md, ninth round):
 * an organization with a key whose limits are far above the load, 16 clients
 * sending chat completions to `sim-chat` without a pause, and ten
 * `GET /v1/usage/summary` 300 ms apart in the meantime. A read waits for the
 * charges journaled before it to reach the database, so its time shows that
 * wait; a last read after the load checks that it counts every answer.
 *
 *   npm start   # in another shell: prints the URL and the operator token
 *   npx tsx bench/usage-reads.ts http://127.0.0.1:8080 <operator token>
 */
const [base, operatorToken] = process.argv.slice(2);
if (!base || !operatorToken) {
  console.error('usage: npx tsx bench/usage-reads.ts <gateway URL> <operator token>');
  process.exit(2);
}

async function admin(path: string, body: unknown): Promise<Record<string, string>> {
  const response = await fetch(`${base}/admin/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${operatorToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`POST /admin/v1${path} answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as Record<string, string>;
}

const org = await admin('/orgs', { name: 'usage reads' });
await admin(`/orgs/${org.id}/wallet/topups`, { amount: '1000000' });
const { secret } = await admin(`/orgs/${org.id}/keys`, {
  name: 'usage reads',
  requests_per_minute: 1_000_000,
  max_concurrency: 100_000,
});
const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
const body = JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });

let stopping = false;
const statuses = new Map<number, number>();
async function client(): Promise<void> {
  while (!stopping) {
    const response = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers, body });
    await response.arrayBuffer();
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const clients = Array.from({ length: 16 }, client);
await sleep(1_000);
async function requestsCounted(): Promise<number> {
  const response = await fetch(`${base}/v1/usage/summary`, { headers });
  if (!response.ok) throw new Error(`GET /v1/usage/summary answered ${response.status}: ${await response.text()}`);
  return ((await response.json()) as { totals: { requests: number } }).totals.requests;
}

const readMs: number[] = [];
for (let i = 0; i < 10; i++) {
  const startedAt = performance.now();
  await requestsCounted();
  readMs.push(Math.round(performance.now() - startedAt));
  await sleep(300);
}
stopping = true;
await Promise.all(clients);
console.log(`usage reads under load (ms): ${readMs.join(' ')}`);
console.log(
  `chat completions by status: ${JSON.stringify(Object.fromEntries(statuses))}; the usage read after them counts ${await requestsCounted()}`,
);
