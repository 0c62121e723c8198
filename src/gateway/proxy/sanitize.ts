const MAX_LENGTH = 400;
const REDACTED = '[redacted]';

const PATTERNS: RegExp[] = [
  /\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, // URLs
  /(?<![\w:])\[?[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}\]?(?::\d+)?(?![\w:])/gi, // IPv6 (with port), not C++'s std::exception
  /\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/g, // IPv4 (with port)
  /(?:\/[\w.@+-]+){2,}/g, // absolute paths
  /\b[A-Za-z]:\\[^\s'"]+/g, // Windows paths
  /\b(?=[a-z0-9-]*[a-z])[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}(?::\d+)?\b/gi, // host names
];

/**
 * The id that llama.cpp's JSON library (nlohmann/json) puts before its messages, such as
 * `[json.exception.type_error.302] type must be string, but is array`: it reads as a host name to
 * the rule above and would leave `[[redacted].type_error.302]`. Dropped; the message after it says
 * what is wrong.
 */
const JSON_EXCEPTION_ID = /\[json\.exception\.[a-z_]+\.\d+\]\s*/g;

export interface ModelNames {
  servedName: string;
  clientName: string;
}

/**
 * Upstream text that may reach a client passes through here first. Only the
 * messages of upstream 4xx answers are shown at all (they tell the client what
 * to fix, e.g. the context length); 5xx and mid-stream failures get fixed
 * messages. What is kept loses URLs, addresses, host names, file paths and
 * tracebacks, and names the model as the client did.
 *
 * @example
 * sanitizeUpstreamMessage('bad at 10.0.0.3:8000', { servedName: 'Qwen/Qwen2.5', clientName: 'qwen' });
 * // 'bad at [redacted]'
 */
export function sanitizeUpstreamMessage(message: string, names: ModelNames): string {
  let text = message.split(/Traceback \(most recent call last\)/)[0] ?? '';
  text = text.replace(JSON_EXCEPTION_ID, '').replace(/\s+/g, ' ').trim();
  if (names.servedName && names.servedName !== names.clientName)
    text = text.split(names.servedName).join(names.clientName);
  // Model names like Qwen/Qwen2.5-7B look like paths; protect the client's own name from the path
  // rule.
  const placeholder = '\u0000model\u0000';
  text = text.split(names.clientName).join(placeholder);
  for (const pattern of PATTERNS) text = text.replace(pattern, REDACTED);
  text = text.split(placeholder).join(names.clientName);
  if (text.length > MAX_LENGTH) text = `${text.slice(0, MAX_LENGTH)}…`;
  return text || 'The model server rejected the request.';
}

/**
 * Pulls a message out of whatever error body an engine sent (vLLM's nested or legacy flat shape, or
 * text).
 */
export function upstreamErrorMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: unknown; message?: unknown; detail?: unknown };
    if (parsed && typeof parsed.error === 'object' && parsed.error !== null) {
      const message = (parsed.error as { message?: unknown }).message;
      if (typeof message === 'string') return message;
    }
    if (typeof parsed.error === 'string') return parsed.error;
    if (typeof parsed.message === 'string') return parsed.message;
    if (typeof parsed.detail === 'string') return parsed.detail;
  } catch {
    // not JSON: fall through to the raw text
  }
  return body;
}
