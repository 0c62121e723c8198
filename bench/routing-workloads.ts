// The workloads and the simulated engine of `npm run bench:routing` (bench/routing.ts).

export type Workload = 'shared-prefix' | 'unrelated' | 'agents-rag';
/** Who sends a turn: what the mixed workload reports its first tokens by. */
export type UserClass = 'agent' | 'rag' | 'user';
export type Policy = 'round-robin' | 'least-loaded' | 'scored';

/**
 * Every simulated duration is multiplied by this (`--time-scale`): by default
 * the bench runs twice as fast as the GPU it stands for, and reports figures
 * in the GPU's time. At 0.25, eight replicas and 384 clients starved this
 * 2-core machine's event loops (scrapes came late, the router fell back).
 */
export const DEFAULT_TIME_SCALE = 0.5;

/**
 * The loaded simulator: an 8B model on one 24 GB GPU (an L4 or A10G class
 * card): about 4,000 prompt tokens/s of prefill (0.25 ms a token), a decode
 * step of 25 ms plus 0.3 ms a running sequence (about 35 ms at a batch of
 * 32), and after the weights (16 GB) about 4 GB of KV cache: 2,048 blocks of
 * 16 tokens at 128 KiB a token (Llama-3-8B's 32 layers × 8 KV heads × 128 ×
 * 2 bytes × 2). vLLM's own flags for the cache and the batch.
 */
export const simFlags = (timeScale: number): string[] => [
  '--max-model-len',
  '8192',
  '--num-gpu-blocks-override',
  '2048',
  '--block-size',
  '16',
  '--max-num-seqs',
  '128',
  '--prefill-ms-per-token',
  '0.25',
  '--decode-ms-per-step',
  '25',
  '--decode-ms-per-seq',
  '0.3',
  '--time-scale',
  String(timeScale),
];

/** 16 tenants, each with its own long system prompt, shared by all its users' conversations. */
const TENANTS = 16;
const SYSTEM_PROMPT_WORDS = 3000;
const TURNS = 5;
const QUESTION_WORDS = 60;
const OUTPUT_TOKENS = 64;
/** Unrelated prompts: 1,000 tokens each, nothing shared. */
const UNRELATED_WORDS = 1000;
/**
 * Agents beside RAG users: every other client is an agent, the rest RAG users. Agents share one
 * 3,000-token system prompt (instructions and tool definitions) and run 8-step tasks, each step
 * sending the whole task so far plus a 500-token tool result (a file read, a command's output);
 * RAG users send 2,000 tokens of
 * retrieved passages (four of 500 tokens, shared with no one) and a 30-token question.
 */
const AGENT_STEPS = 8;
const TOOL_RESULT_WORDS = 500;
const RAG_PASSAGES = 4;
const PASSAGE_WORDS = 500;
const RAG_QUESTION_WORDS = 30;

/**
 * A user reads and types between turns: on average 2 s of the GPU's time
 * (exponential). Without it, a closed loop sends a user's next turn the
 * instant its answer ends, to the replica that has just freed a slot, which
 * gives least-loaded a stickiness no real traffic has.
 */
export const THINK_MEAN_S = 1;

export interface Turn {
  userClass: UserClass;
  messages: Array<{ role: string; content: string }>;
  maxTokens: number;
}

/** A small seeded PRNG (mulberry32): the same workload on every run and policy. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` words, one simulator token each, from a seed. */
function text(seed: number, count: number): string {
  const next = random(seed);
  const words: string[] = [];
  for (let i = 0; i < count; i++) words.push(`w${Math.floor(next() * 50_000).toString(36)}`);
  return words.join(' ');
}

const agentPrompt = `You are a coding agent with these tools. ${text(999, SYSTEM_PROMPT_WORDS)}`;

/** The class of the workload's `user`th client. */
export const userClassOf = (workload: Workload, user: number): UserClass =>
  workload !== 'agents-rag' ? 'user' : user % 2 === 0 ? 'agent' : 'rag';

const systemPrompts = Array.from(
  { length: TENANTS },
  (_, tenant) => `You are the assistant of tenant ${tenant}. ${text(1_000 + tenant, SYSTEM_PROMPT_WORDS)}`,
);

/**
 * The turns of a user's `n`th conversation. Shared prefix: the user's
 * tenant's system prompt, then TURNS questions, each turn sending the whole
 * conversation so far (earlier answers included), as a chat client does.
 * Unrelated: one turn with a prompt no other request shares. Agents beside
 * RAG users: an agent's task (the shared agent prompt, then AGENT_STEPS tool
 * results, the whole task sent each step) or a RAG user's one question over
 * passages of its own.
 *
 * @example
 * for (const turn of conversation('shared-prefix', 3, 0)) send(turn.messages);
 */
export function* conversation(workload: Workload, user: number, n: number): Generator<Turn> {
  const seed = user * 100_003 + n * 7_919;
  const userClass = userClassOf(workload, user);
  if (workload === 'unrelated' || userClass === 'rag') {
    const content =
      userClass === 'rag'
        ? Array.from({ length: RAG_PASSAGES }, (_, p) => `Passage ${p + 1}: ${text(seed + p * 13, PASSAGE_WORDS)}`)
            .concat(`Question: ${text(seed + 7, RAG_QUESTION_WORDS)}`)
            .join('\n\n')
        : text(seed, UNRELATED_WORDS);
    yield { userClass, messages: [{ role: 'user', content }], maxTokens: OUTPUT_TOKENS };
    return;
  }
  const agent = userClass === 'agent';
  const messages = [{ role: 'system', content: agent ? agentPrompt : systemPrompts[user % TENANTS]! }];
  for (let turn = 0; turn < (agent ? AGENT_STEPS : TURNS); turn++) {
    messages.push({ role: 'user', content: text(seed + turn * 31, agent ? TOOL_RESULT_WORDS : QUESTION_WORDS) });
    yield { userClass, messages: [...messages], maxTokens: OUTPUT_TOKENS };
    // The answer goes back in the next turn: a stand-in of the same length (the simulator's prefix
    // cache keys on the prompt only).
    messages.push({ role: 'assistant', content: text(seed + turn * 31 + 17, OUTPUT_TOKENS) });
  }
}
