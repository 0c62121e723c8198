import { formatAmount } from '../gateway/billing/money.js';
import type { Agent } from './loop.js';
import { jsonText, type OutputFormat } from './view-headless.js';

/**
 * `tollgate code -p TASK`: runs the task to its end and answers the exit
 * code: 0 when the model finished, 1 when the task stopped short (the
 * wallet, the key, a limit, a cut tool call, max_steps, a cancel).
 *
 * @example
 * process.exitCode = await headless(agent, 'add a test', 'json', io);
 */
export async function headless(
  agent: Agent,
  task: string,
  format: OutputFormat,
  io: { stdout(text: string): void; stderr(text: string): void },
): Promise<number> {
  const controller = new AbortController();
  const cancel = () => controller.abort();
  process.once('SIGINT', cancel);
  process.once('SIGTERM', cancel);
  try {
    const outcome = await agent.run(task, controller.signal);
    const ok = outcome.status === 'done';
    const { totals } = agent.session;
    const result = {
      session_id: agent.session.id,
      model: agent.model,
      status: outcome.status,
      is_error: !ok,
      error: outcome.stop?.message ?? null,
      error_reason: outcome.stop?.reason ?? null,
      text: outcome.text,
      usage: {
        requests: totals.requests,
        prompt_tokens: totals.promptTokens,
        completion_tokens: totals.completionTokens,
      },
      cost: formatAmount(BigInt(totals.costNanos)),
      cost_nanos: totals.costNanos,
      currency: agent.deps.currency,
    };
    if (format === 'json') io.stdout(`${jsonText(result, 2)}\n`);
    if (format === 'stream-json') io.stdout(`${jsonText({ type: 'result', ...result })}\n`);
    if (format === 'text' && !ok)
      io.stderr(`error: ${outcome.stop?.message ?? `the task did not finish (${outcome.status})`}\n`);
    return ok ? 0 : 1;
  } finally {
    process.off('SIGINT', cancel);
    process.off('SIGTERM', cancel);
  }
}
