/**
 * Prepares the gateway through its management API: the two simulator models
 * with prices, an org with more credit than any run can spend, and a key whose
 * limits are far above the load, so the bench measures the gateway's work,
 * never its refusals.
 *
 * @example
 * const secret = await provision('http://127.0.0.1:8080', 'bench-operator-token-0123456789');
 */
export async function provision(gatewayUrl: string, adminToken: string): Promise<string> {
  const call = adminClient(`${gatewayUrl}/admin/v1`, adminToken);
  const models = [
    { id: 'sim-chat', display_name: 'Sim Chat', hf_repo_id: 'bench/sim-chat', task_type: 'chat', context_length: 8192 },
    {
      id: 'sim-embed',
      display_name: 'Sim Embed',
      hf_repo_id: 'bench/sim-embed',
      task_type: 'embedding',
      context_length: 512,
    },
  ];
  // 409: the models already exist in a reused database (BENCH_DATABASE_URL).
  for (const model of models) await call('POST', '/models', model, [409]);
  await call('PUT', '/prices/sim-chat', { input_per_million: '0.15', output_per_million: '0.60' });
  await call('PUT', '/prices/sim-embed', { input_per_million: '0.02', output_per_million: '0' });
  const org = (await call('POST', '/orgs', { name: 'bench' })) as { id: string };
  await call('POST', `/orgs/${org.id}/wallet/topups`, { amount: '1000000' });
  // BENCH_BUDGETS=1: the key is a project's, and both have budgets far above the load (monthly and
  // daily), so the bench measures what budgets cost a request, never their refusals.
  const budgets = process.env.BENCH_BUDGETS === '1';
  const project = budgets
    ? ((await call('POST', `/orgs/${org.id}/projects`, { name: 'bench' })) as { id: string })
    : null;
  const key = (await call('POST', `/orgs/${org.id}/keys`, {
    name: 'bench',
    requests_per_minute: 1_000_000,
    max_concurrency: 100_000,
    ...(project ? { project_id: project.id } : {}),
  })) as { id: string; secret: string };
  if (project) {
    const budget = { monthly: '1000000', daily: '1000000' };
    await call('PUT', `/keys/${key.id}/budget`, budget);
    await call('PUT', `/projects/${project.id}/budget`, budget);
  }
  return key.secret;
}

function adminClient(base: string, token: string) {
  return async (method: string, path: string, body: unknown, tolerated: number[] = []): Promise<unknown> => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok && !tolerated.includes(response.status))
      throw new Error(`${method} /admin/v1${path} answered ${response.status}: ${text}`);
    return text ? JSON.parse(text) : null;
  };
}
