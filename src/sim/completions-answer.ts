import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { dropConnection } from './chat-answer.js';
import { completionLogprobs, type CompletionChoice, type CompletionPlan } from './completions.js';
import { errorJson, internalError } from './errors.js';
import { FAULT_TOKENS, MIDSTREAM_MESSAGE, type StreamFault } from './faults.js';
import { sendError, sendJson } from './http.js';
import { Job } from './job.js';
import type { SimState } from './state.js';

const SSE_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' } as const;

/**
 * Generates and sends a completions answer, JSON or streamed.
 *
 * @example
 * await runCompletion(state, planCompletion(state, body), res, null);
 */
export async function runCompletion(
  state: SimState,
  plan: CompletionPlan,
  res: ServerResponse,
  fault: StreamFault | null,
): Promise<void> {
  const job = new Job(state, plan.model.name, res, plan.promptTokens);
  const head = { id: `cmpl-${randomUUID().replaceAll('-', '')}`, created: Math.floor(Date.now() / 1000) };
  let steps = 0;
  for (const choice of plan.choices) steps = Math.max(steps, choice.pieces.length);
  const count = fault ? Math.min(FAULT_TOKENS, steps) : steps;
  if (plan.stream) {
    res.writeHead(200, SSE_HEADERS);
    if (state.ttftMs > 0) res.flushHeaders();
  }
  const offsets = plan.choices.map((choice) => choice.echoed.length);
  const produced = await job.produce(count, (i) => {
    let ok = true;
    plan.choices.forEach((choice, k) => {
      if (k > 0 && i < choice.pieces.length) job.token();
      if (plan.stream && i < choice.pieces.length) {
        ok = res.write(`data: ${JSON.stringify(streamChunk(plan, head, choice, k, i, offsets, fault !== null))}\n\n`);
      }
    });
    return ok;
  });
  if (!produced) return;
  if (fault) {
    job.fail();
    if (fault === 'drop') return dropConnection(res);
    if (!plan.stream) return sendError(res, internalError(MIDSTREAM_MESSAGE));
    res.write(`data: ${errorJson(500, 'InternalServerError', MIDSTREAM_MESSAGE)}\n\n`);
    res.end('data: [DONE]\n\n');
    return;
  }
  job.finish(plan.choices[0]?.finishReason ?? 'stop');
  let completion = 0;
  for (const choice of plan.choices) completion += choice.tokens;
  const usage = {
    prompt_tokens: plan.promptTokens,
    total_tokens: plan.promptTokens + completion,
    completion_tokens: completion,
  };
  if (plan.stream) {
    if (plan.includeUsage) res.write(`data: ${JSON.stringify({ ...base(plan, head), choices: [], usage })}\n\n`);
    res.end('data: [DONE]\n\n');
    return;
  }
  const body = {
    ...base(plan, head),
    choices: plan.choices.map((choice, k) => choiceJson(plan, choice, k)),
    service_tier: null,
    system_fingerprint: null,
    usage: { ...usage, prompt_tokens_details: null },
    kv_transfer_params: null,
  };
  sendJson(res, 200, JSON.stringify(body));
}

function base(plan: CompletionPlan, head: { id: string; created: number }): Record<string, unknown> {
  return { id: head.id, object: 'text_completion', created: head.created, model: plan.model.name };
}

function choiceJson(plan: CompletionPlan, choice: CompletionChoice, index: number): Record<string, unknown> {
  const text = choice.echoed + choice.pieces.join('');
  const logprobs =
    plan.logprobs === null
      ? null
      : completionLogprobs(choice, plan.logprobs, 0, choice.pieces.length, choice.echoed.length);
  return {
    index,
    text,
    logprobs,
    finish_reason: choice.finishReason,
    stop_reason: choice.stopReason,
    prompt_logprobs: null,
  };
}

// One token of one choice; the first chunk of an echoing choice carries the prompt before it.
function streamChunk(
  plan: CompletionPlan,
  head: { id: string; created: number },
  choice: CompletionChoice,
  index: number,
  i: number,
  offsets: number[],
  faulty: boolean,
): Record<string, unknown> {
  const piece = choice.pieces[i] as string;
  const text = i === 0 ? choice.echoed + piece : piece;
  const logprobs =
    plan.logprobs === null ? null : completionLogprobs(choice, plan.logprobs, i, i + 1, offsets[index] as number);
  offsets[index] = (offsets[index] as number) + piece.length;
  const last = !faulty && i === choice.pieces.length - 1;
  return {
    ...base(plan, head),
    choices: [
      {
        index,
        text,
        logprobs,
        finish_reason: last ? choice.finishReason : null,
        stop_reason: last ? choice.stopReason : null,
      },
    ],
  };
}
