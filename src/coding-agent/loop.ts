import type OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { type Mode, SessionApprovals } from './approval.js';
import { Checkpoints } from './checkpoints.js';
import type { TurnPlan, WalletGuard } from './budget.js';
import { compacted, summaryRequest } from './compaction.js';
import { ContextEstimate } from './context-estimate.js';
import { addToTotals, turnCost } from './cost.js';
import type { Gateway, Price } from './gateway.js';
import { AgentStop, type ModelAnswer, streamAnswer } from './model.js';
import type { Session, SessionStore } from './sessions.js';
import { runToolCall, type ToolTurn } from './tool-calls.js';
import { type ToolContext, toolsFor } from './tools/index.js';
import type { Outcome, View } from './view.js';

export interface AgentDeps {
  openai: OpenAI;
  gateway: Gateway;
  store: SessionStore;
  tools: ToolContext;
  view: View;
  prices: Map<string, Price>;
  /** Sizes each call's max_tokens to the wallet and stops a call it cannot pay (budget.ts). */
  wallet: WalletGuard;
  currency: string;
  /** The model's context length, by model id, from `/v1/models`. */
  contextLengths: Map<string, number | null>;
}

const CUT_CALL =
  'not run: the arguments of this call were cut off by the output limit (finish_reason "length"). Make a smaller call, e.g. edit a part of the file.';

/**
 * The agent loop (pi's and tiny-agents' shape): send the conversation with
 * the tools, stream the answer, run its tool calls (each through the
 * approval of the mode), send the results, until an answer calls no tool.
 * What a turn costs is cost.ts's, the context's size context-estimate.ts's,
 * compaction compaction.ts's, approvals approval.ts's, `/undo` checkpoints.ts's.
 *
 * @example
 * const outcome = await agent.run('fix the failing test', controller.signal);
 */
export class Agent {
  /** The conversation's tokens, from the last call's count. */
  private readonly estimate = new ContextEstimate();
  /** The tool calls of this run and their results, for `/expand` (kept in memory only, the last 50). */
  readonly toolLog: { title: string; result: string }[] = [];
  /** What the person said "yes for this session" to. */
  readonly approvals = new SessionApprovals();
  /** The files each turn changed, as they were before it (`/undo`). */
  readonly checkpoints: Checkpoints;
  /** Told to the model with the next task (an `/undo` it should know of). */
  private noteForModel = '';

  constructor(
    readonly deps: AgentDeps,
    public session: Session,
    public mode: Mode,
  ) {
    this.checkpoints = new Checkpoints(deps.tools.limits.file_bytes);
  }

  /** Another session (`/clear`, `/resume`): its approvals and checkpoints start empty. */
  switchTo(session: Session): void {
    this.session = session;
    this.estimate.reset();
    this.approvals.clear();
    this.checkpoints.clear();
    this.noteForModel = '';
  }

  /**
   * Restores the files of the latest turn that changed any; answers one line a file, or null when
   * none.
   */
  async undo(): Promise<string[] | null> {
    const done = await this.checkpoints.undo(this.deps.tools.root);
    if (done) this.noteForModel = `[The user undid the file changes of a turn: ${done.join('; ')}.]\n\n`;
    return done;
  }

  get model(): string {
    return this.session.model;
  }

  async run(task: string, signal: AbortSignal): Promise<Outcome> {
    if (this.session.title === '') this.session.title = task.slice(0, 80);
    this.session.messages.push({ role: 'user', content: this.noteForModel + task });
    this.noteForModel = '';
    this.checkpoints.begin();
    let last = '';
    try {
      for (let step = 0; step < this.deps.tools.limits.max_steps; step++) {
        if (this.nearContextEnd()) await this.compact(signal);
        const answer = await this.call(signal, this.session.messages, true);
        last = answer.text || last;
        if (answer.toolCalls.length === 0) return { status: 'done', text: last };
        if (answer.finishReason === 'length') {
          for (const call of answer.toolCalls) this.toolAnswer(call.id, CUT_CALL);
          this.deps.view.notice(
            `the answer was cut by the output limit: its tool call${answer.toolCalls.length > 1 ? 's were' : ' was'} not run`,
          );
          return { status: 'cut', text: last };
        }
        await this.runTools(answer, signal);
        await this.save();
      }
      this.deps.view.notice(
        `stopped after ${this.deps.tools.limits.max_steps} model calls (max_steps); say "continue" to go on`,
      );
      return { status: 'steps', text: last };
    } catch (error) {
      if (!(error instanceof AgentStop)) throw error;
      return { status: error.reason === 'cancelled' ? 'cancelled' : 'stopped', text: last, stop: error };
    } finally {
      await this.save();
    }
  }

  /**
   * One streamed model call, sized to the wallet, its usage counted and shown, its answer appended
   * to the conversation.
   */
  private async call(
    signal: AbortSignal,
    messages: ChatCompletionMessageParam[],
    withTools: boolean,
  ): Promise<ModelAnswer> {
    const { view } = this.deps;
    const body = {
      model: this.model,
      messages,
      ...(withTools ? { tools: toolsFor(this.mode, this.deps.tools.mcp) } : {}),
    };
    const plan = await this.deps.wallet.plan(body, {
      contextLength: this.contextLength(),
      promptTokens: this.estimate.atMost(messages),
      spentNanos: BigInt(this.session.totals.costNanos),
      price: this.deps.prices.get(this.model),
    });
    const sent = { ...body, max_tokens: plan.maxTokens };
    let partial = '';
    view.thinking(true);
    let answer: ModelAnswer;
    try {
      answer = await streamAnswer(
        this.deps.openai,
        sent,
        {
          started: (id) => (this.session.requestIds ??= []).push(id),
          text: (d) => ((partial += d), view.text(d)),
          reasoning: (d) => view.reasoning(d),
          waiting: (s, m) => view.waiting(s, m),
        },
        signal,
      );
    } catch (error) {
      view.answered();
      // What was streamed before a cancel stays in the conversation, so the model knows what it
      // said.
      if (withTools && partial !== '')
        this.session.messages.push({ role: 'assistant', content: `${partial}\n[cancelled by the user]` });
      throw error;
    }
    view.answered();
    this.count(answer, sent, plan, withTools);
    if (withTools) this.session.messages.push(assistantMessage(answer));
    return answer;
  }

  /** A call's usage priced as the gateway bills it (cost.ts), added to the session's, shown. */
  private count(answer: ModelAnswer, sent: Record<string, unknown>, plan: TurnPlan, turn: boolean): void {
    if (!answer.usage) return;
    const cost = turnCost(
      answer.usage,
      { body: sent, bodyBytes: plan.promptBound, contextLength: this.contextLength() },
      this.deps.prices.get(this.model),
    );
    const totals = this.session.totals;
    addToTotals(totals, cost);
    // The prompt and the answer, which a turn appends to the conversation next.
    if (turn)
      this.estimate.measured(cost.usage.promptTokens + cost.usage.completionTokens, this.session.messages.length + 1);
    this.deps.view.turn({
      promptTokens: cost.usage.promptTokens,
      cachedTokens: cost.usage.cachedTokens ?? 0,
      completionTokens: cost.usage.completionTokens,
      costNanos: cost.costNanos,
      sessionNanos: BigInt(totals.costNanos),
      currency: this.deps.currency,
      requestId: answer.requestId,
      maxTokens: plan.maxTokens,
      worstNanos: cost.holdNanos,
    });
    const spent = cost.costNanos ?? 0n;
    const warning = this.deps.wallet.warning(plan.balanceNanos === null ? null : plan.balanceNanos - spent);
    if (warning) this.deps.view.notice(warning);
  }

  private async runTools(answer: ModelAnswer, signal: AbortSignal): Promise<void> {
    const { tools, view } = this.deps;
    const turn: ToolTurn = {
      tools,
      view,
      mode: this.mode,
      approvals: this.approvals,
      checkpoints: this.checkpoints,
      toolLog: this.toolLog,
    };
    for (const call of answer.toolCalls) {
      const result = signal.aborted
        ? 'not run: the user cancelled'
        : await runToolCall(turn, call.name, call.arguments, signal);
      this.toolAnswer(call.id, result);
    }
    if (signal.aborted) throw new AgentStop('cancelled', 'cancelled');
  }

  private toolAnswer(id: string, content: string): void {
    this.session.messages.push({ role: 'tool', tool_call_id: id, content });
  }

  /** Whether the conversation nears `compact_percent` of the model's context. */
  nearContextEnd(): boolean {
    const length = this.contextLength();
    if (!length) return false;
    return this.estimate.likely(this.session.messages) >= (length * this.deps.tools.limits.compact_percent) / 100;
  }

  private contextLength(): number | null {
    return this.deps.contextLengths.get(this.model) ?? null;
  }

  /** Replaces the conversation by the model's summary of it (compaction.ts). */
  async compact(signal: AbortSignal): Promise<void> {
    this.deps.view.notice('compacting the conversation (summarising it to stay inside the model context)');
    const answer = await this.call(signal, summaryRequest(this.session.messages), false);
    this.session.messages = compacted(this.session.messages, answer.text);
    this.estimate.reset();
    await this.save();
  }

  async save(): Promise<void> {
    await this.deps.store.save(this.session);
  }
}

function assistantMessage(answer: ModelAnswer): ChatCompletionMessageParam {
  if (answer.toolCalls.length === 0) return { role: 'assistant', content: answer.text };
  return {
    role: 'assistant',
    content: answer.text || null,
    tool_calls: answer.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    })),
  };
}
