import { LOADED_USAGE } from './loaded-args.js';

/** What `--help` prints. */
export const SIM_USAGE = `Usage: tsx src/sim/main.ts [options]
       tsx src/sim/main.ts [MODEL_REPO] [--served-model-name NAME...] [vLLM flags]

A vLLM-compatible simulator (OpenAI chat completions and embeddings, no GPU).

Options (environment variable in brackets):
  --port N                 listen port, 0 = random (SIM_PORT, default 8000)
  --host HOST              listen address (SIM_HOST, default 127.0.0.1)
  --model NAME[:SUFFIX]    served model, repeatable; suffix :chat, :embedding or :reasoning
                           (SIM_MODELS, comma-separated; default sim-chat, sim-embed:embedding)
  --ttft-ms N              time to first token (SIM_TTFT_MS, default 0)
  --itl-ms N               inter-token latency (SIM_ITL_MS, default 0)
  --failure-rate P         probability 0..1 of a random 500 (SIM_FAILURE_RATE, default 0)
  --startup-delay-ms N     /health and /v1 answer 503 this long (SIM_STARTUP_DELAY_MS, default 0)
  --max-model-len N        context length of every model (SIM_MAX_MODEL_LEN, default 4096)
  --default-max-tokens N   completion length without max_tokens (SIM_DEFAULT_MAX_TOKENS, default 16)
  --embedding-dimensions N floats in each embedding (SIM_EMBEDDING_DIMENSIONS, default 64)
  --script FILE            scripted mode for every chat model (SIM_SCRIPT): a JSON
                           array of turns, {"turns": [...]}, or JSON Lines, a turn a
                           line. A request answers with turn K, K being the number
                           of assistant messages it carries. A turn:
                             {"content": "text", "reasoning": "thoughts",
                              "tool_calls": [{"name": "f", "arguments": {...}}],
                              "finish_reason": "stop" | "length" | "tool_calls",
                              "prompt_tokens": N, "completion_tokens": N,
                              "error": {"status": 429, "message": "..."}}
                           (every field optional; a string "arguments" is sent as
                           is, e.g. cut JSON with finish_reason "length")
  -h, --help               show this help

vLLM's command line (\`vllm serve\`), so the simulator can stand in for it:
  MODEL_REPO               the model's repository; the served name unless
                           --served-model-name is given (replaces --model/SIM_MODELS)
  --served-model-name N..  one or more served names for the model
  --runner pooling, --task embed|embedding, --convert embed
                           serve an embedding model (default: chat)
  --reasoning-parser P     chat models emit reasoning text before content
  --enable-auto-tool-choice --tool-call-parser P
                           tool_choice "auto" may call tools; in this form it is
                           refused without them, as vLLM does (the --model form
                           calls tools by default)
  Other vLLM flags (--gpu-memory-utilization, --tensor-parallel-size, --dtype,
  --enforce-eager, --enable-prefix-caching, ...) are accepted and ignored.
${LOADED_USAGE}`;
