import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';

/**
 * The conversation's size in tokens, between calls: the last call's measured
 * tokens (its prompt and its answer, as the engine counted them) plus the
 * characters of the messages added since. Each message is measured once
 * (its JSON's length, kept by the message), so an estimate adds up the new
 * messages' lengths; it never writes the whole conversation out again.
 *
 * Read two ways: `atMost`, 2 characters a token, a bound for `max_tokens` (an
 * engine refuses a call whose prompt and `max_tokens` exceed its context), and
 * `likely`, 4 characters a token, for when to compact.
 *
 * @example
 * estimate.measured(usage.promptTokens + usage.completionTokens, messages.length + 1);
 * if (estimate.likely(messages) >= (contextLength * 80) / 100) await compact();
 */
export class ContextEstimate {
  /** The last call's tokens, and how many messages they covered (0: nothing measured yet). */
  private base = { tokens: 0, messages: 0 };
  private readonly lengths = new WeakMap<ChatCompletionMessageParam, number>();

  /** A call's tokens, covering the conversation's first `messages` messages. */
  measured(tokens: number, messages: number): void {
    this.base = { tokens, messages };
  }

  /** Nothing measured: another conversation (`/clear`, `/resume`) or a compacted one. */
  reset(): void {
    this.base = { tokens: 0, messages: 0 };
  }

  /** The prompt's tokens, over-estimated; null before any call measured them. */
  atMost(messages: readonly ChatCompletionMessageParam[]): number | null {
    if (this.base.messages === 0) return null;
    return Math.ceil(this.base.tokens + this.charactersFrom(messages, this.base.messages) / 2);
  }

  /** The conversation's tokens, about: before any call, its characters at 4 a token. */
  likely(messages: readonly ChatCompletionMessageParam[]): number {
    return this.base.tokens + this.charactersFrom(messages, this.base.messages) / 4;
  }

  private charactersFrom(messages: readonly ChatCompletionMessageParam[], start: number): number {
    let sum = 0;
    for (let i = start; i < messages.length; i++) sum += this.lengthOf(messages[i]!);
    return sum;
  }

  private lengthOf(message: ChatCompletionMessageParam): number {
    let length = this.lengths.get(message);
    if (length === undefined) {
      length = JSON.stringify(message).length;
      this.lengths.set(message, length);
    }
    return length;
  }
}
