import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

const SUMMARY_HEAD = 'The conversation so far was compacted to stay inside the model context; its summary:';
const SUMMARY_REQUEST =
  'Summarise this conversation for yourself to continue from: the task, what was done (files changed, commands run and their results), what is left, and any facts needed later. Be complete but brief. Do not call tools.';

/**
 * Compaction, near the end of the model's context (`compact_percent`, or
 * `/compact`): the model is asked, without tools, to summarise the
 * conversation, and the conversation becomes its first system message and
 * that summary. The loop (loop.ts) makes the call; these are its two ends.
 *
 * @example
 * const answer = await call(summaryRequest(messages));
 * session.messages = compacted(messages, answer.text);
 */
export function summaryRequest(messages: readonly ChatCompletionMessageParam[]): ChatCompletionMessageParam[] {
  return [...messages, { role: 'user', content: SUMMARY_REQUEST }];
}

/**
 * The conversation replaced by the model's summary of it (the first system message kept), as a user
 * message.
 */
export function compacted(
  messages: readonly ChatCompletionMessageParam[],
  summary: string,
): ChatCompletionMessageParam[] {
  const system = messages[0]?.role === 'system' ? [messages[0]] : [];
  return [...system, { role: 'user', content: `${SUMMARY_HEAD}\n${summary}\n\nContinue from here.` }];
}
