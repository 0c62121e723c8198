import type OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { clampUsage } from '../gateway/billing/token-bounds.js';
import type { Mode } from './approval.js';
import { decide, scopeOf, SessionApprovals } from './approval.js';
import { Checkpoints } from './checkpoints.js';
import type { TurnPlan, WalletGuard } from './budget.js';
import { type Gateway, type Price, turnCharge } from './gateway.js';
import { AgentStop, type ModelAnswer, streamAnswer } from './model.js';
import type { Session, SessionStore } from './sessions.js';
import { type PreparedCall, prepare, type ToolContext, ToolRefusal, toolsFor } from './tools/index.js';
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
 *
 * @example
 * const outcome = await agent.run('fix the failing test', controller.signal);
 */
export class Agent {
  /** Prompt tokens of the last call and how many messages it covered: the base of the context estimate. */
  private measured = { promptTokens: 0, messages: 0 };
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
    this.measured = { promptTokens: 0, messages: 0 };
    this.approvals.clear();
    this.checkpoints.clear();
    this.noteForModel = '';
  }

  /** Restores the files of the latest turn that changed any; answers one line a file, or null when none. */
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
        const answer = await this.call(signal, true);
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

  /** One streamed model call, sized to the wallet, its usage counted and shown, its answer appended to the conversation. */
  private async call(signal: AbortSignal, withTools: boolean): Promise<ModelAnswer> {
    const { view } = this.deps;
    const body = {
      model: this.model,
      messages: this.session.messages,
      ...(withTools ? { tools: toolsFor(this.mode, this.deps.tools.mcp) } : {}),
    };
    const plan = await this.deps.wallet.plan(body, {
      contextLength: this.deps.contextLengths.get(this.model) ?? null,
      promptTokens: this.promptTokensAtMost(),
      spentNanos: BigInt(this.session.totals.costNanos),
      price: this.deps.prices.get(this.model),
    });
    let partial = '';
    view.thinking(true);
    let answer: ModelAnswer;
    try {
      answer = await streamAnswer(
        this.deps.openai,
        { ...body, max_tokens: plan.maxTokens },
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
      // What was streamed before a cancel stays in the conversation, so the model knows what it said.
      if (partial !== '')
        this.session.messages.push({ role: 'assistant', content: `${partial}\n[cancelled by the user]` });
      throw error;
    }
    view.answered();
    this.count(answer, plan);
    if (withTools) this.session.messages.push(assistantMessage(answer));
    return answer;
  }

  private count(answer: ModelAnswer, plan: TurnPlan): void {
    if (!answer.usage) return;
    // The gateway's own rule (billing/holds.ts's chargeFor): held to the call's bounds, cached tokens at their price.
    const bounds = { promptTokens: plan.promptBound, completionTokens: plan.maxTokens };
    const charge = turnCharge(answer.usage, { bounds, holdNanos: plan.worstNanos }, this.deps.prices.get(this.model));
    const usage = charge?.usage ?? clampUsage(answer.usage, bounds).usage;
    const cost = charge?.costNanos ?? null;
    const totals = this.session.totals;
    totals.requests += 1;
    totals.promptTokens += usage.promptTokens;
    totals.completionTokens += usage.completionTokens;
    totals.costNanos = (BigInt(totals.costNanos) + (cost ?? 0n)).toString();
    this.measured = {
      promptTokens: usage.promptTokens + usage.completionTokens,
      messages: this.session.messages.length + 1,
    };
    this.deps.view.turn({
      promptTokens: usage.promptTokens,
      cachedTokens: usage.cachedTokens ?? 0,
      completionTokens: usage.completionTokens,
      costNanos: cost,
      sessionNanos: BigInt(totals.costNanos),
      currency: this.deps.currency,
      requestId: answer.requestId,
      maxTokens: plan.maxTokens,
      worstNanos: plan.worstNanos,
    });
    const warning = this.deps.wallet.warning(plan.balanceNanos === null ? null : plan.balanceNanos - (cost ?? 0n));
    if (warning) this.deps.view.notice(warning);
  }

  private async runTools(answer: ModelAnswer, signal: AbortSignal): Promise<void> {
    for (const call of answer.toolCalls) {
      if (signal.aborted) {
        this.toolAnswer(call.id, 'not run: the user cancelled');
        continue;
      }
      this.toolAnswer(call.id, await this.runTool(call.name, call.arguments, signal));
    }
    if (signal.aborted) throw new AgentStop('cancelled', 'cancelled');
  }

  /** One tool call: prepared (refused with its reason if it cannot be), approved per the mode, run. */
  private async runTool(name: string, args: string, signal: AbortSignal): Promise<string> {
    const { view, tools } = this.deps;
    try {
      const call = await prepare(tools, name, args);
      view.tool(name, call.title, call.preview);
      const verdict = decide(this.mode, call.kind, call.outside);
      if (verdict.outcome === 'refuse') throw new ToolRefusal(verdict.reason);
      if (verdict.outcome === 'ask') await this.approve(name, call, verdict.question, signal);
      if (call.writes) await this.checkpoints.keep(call.writes);
      const result = await call.run(signal);
      this.toolLog.push({ title: call.title, result });
      if (this.toolLog.length > 50) this.toolLog.shift();
      view.toolResult(name, result, true);
      return result;
    } catch (error) {
      if (!(error instanceof ToolRefusal)) throw error;
      view.toolResult(name, `refused: ${error.message}`, false);
      return `refused: ${error.message}`;
    }
  }

  /**
   * Asks the person, unless they said "yes for this session" to the tool (or the command's prefix) already.
   * A call outside the project is asked every time: a session's yes is about the project.
   */
  private async approve(name: string, call: PreparedCall, question: string, signal: AbortSignal): Promise<void> {
    if (call.outside.length === 0 && this.approvals.allows(name, call.command)) return;
    const scope = call.outside.length === 0 ? scopeOf(name, call.command) : null;
    const answer = await this.deps.view.ask(question, signal, scope);
    if (answer === 'no') throw new ToolRefusal('the user declined this call');
    if (answer === 'session' && scope) this.approvals.allow(scope);
  }

  private toolAnswer(id: string, content: string): void {
    this.session.messages.push({ role: 'tool', tool_call_id: id, content });
  }

  /** Whether the conversation nears `compact_percent` of the model's context. */
  nearContextEnd(): boolean {
    const length = this.deps.contextLengths.get(this.model);
    if (!length) return false;
    return this.contextTokens() >= (length * this.deps.tools.limits.compact_percent) / 100;
  }

  /**
   * The prompt's tokens, over-estimated for max_tokens (an engine refuses a call whose prompt and max_tokens
   * exceed the context): the last call's tokens plus 2 characters a token since, or null before any call.
   */
  private promptTokensAtMost(): number | null {
    if (this.measured.messages === 0) return null;
    const since = this.session.messages
      .slice(this.measured.messages)
      .reduce((sum, m) => sum + JSON.stringify(m).length, 0);
    return Math.ceil(this.measured.promptTokens + since / 2);
  }

  /** The conversation's tokens, estimated: the last call's tokens plus about 4 characters a token since. */
  private contextTokens(): number {
    const since = this.session.messages
      .slice(this.measured.messages)
      .reduce((sum, m) => sum + JSON.stringify(m).length, 0);
    return this.measured.messages === 0
      ? this.session.messages.reduce((sum, m) => sum + JSON.stringify(m).length, 0) / 4
      : this.measured.promptTokens + since / 4;
  }

  /** Replaces the conversation by the model's summary of it (the first system message kept). */
  async compact(signal: AbortSignal): Promise<void> {
    const messages = [...this.session.messages];
    this.deps.view.notice('compacting the conversation (summarising it to stay inside the model context)');
    this.session.messages.push({ role: 'user', content: SUMMARY_REQUEST });
    const answer = await this.call(signal, false).finally(() => (this.session.messages = messages));
    const system = messages[0]?.role === 'system' ? [messages[0]] : [];
    this.session.messages = [
      ...system,
      { role: 'user', content: `${SUMMARY_HEAD}\n${answer.text}\n\nContinue from here.` },
    ];
    this.measured = { promptTokens: 0, messages: 0 };
    await this.save();
  }

  async save(): Promise<void> {
    await this.deps.store.save(this.session);
  }
}

const SUMMARY_HEAD = 'The conversation so far was compacted to stay inside the model context; its summary:';
const SUMMARY_REQUEST =
  'Summarise this conversation for yourself to continue from: the task, what was done (files changed, commands run and their results), what is left, and any facts needed later. Be complete but brief. Do not call tools.';

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
