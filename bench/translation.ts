import { parseArgs } from 'node:util';
import { claudeCodeMessages, codexResponses } from './agent-scenarios.js';
import { keepCeilingWithinContext, sentBody } from '../src/gateway/requests/sent-body.js';
import { TranslationJsonCache } from '../src/gateway/requests/translation-json.js';
import { chatBodyOf as chatOfMessages } from '../src/gateway/requests/messages/translate.js';
import { chatBodyOf as chatOfResponses } from '../src/gateway/requests/responses/translate.js';

/**
 * `npx tsx bench/translation.ts`: what a Messages or Responses request's translation costs alone,
 * the part of its path a chat request of the same bytes does not have: the body parsed, translated
 * to chat, checked against the organization's kept conversations and written for the engine
 * (`requests/translation-json.ts`, `requests/sent-body.ts`). The bodies are the agents' bench's
 * (Claude Code's 115 KB, Codex's 47 KB), sent again each time, as an agent's earlier turns are.
 *
 * It prints CPU µs a translation, which moves with the machine's load. For a count that does not,
 * run it under callgrind at two sizes and take the difference, which leaves out node's start:
 *
 *   valgrind --tool=callgrind node --import tsx bench/translation.ts --protocol messages --requests 100 --warmup 0
 *   valgrind --tool=callgrind node --import tsx bench/translation.ts --protocol messages --requests 900 --warmup 0
 *
 * (the second "Collected" less the first, over 800, is the instructions a translation).
 */
const { values } = parseArgs({
  options: {
    protocol: { type: 'string', default: 'messages' },
    requests: { type: 'string', default: '4000' },
    warmup: { type: 'string', default: '2000' },
    // Translations begun this many at a time before any is kept, as an agent's requests in flight
    // together are.
    'in-flight': { type: 'string', default: '1' },
  },
});
const protocol = values.protocol;
if (protocol !== 'messages' && protocol !== 'responses')
  throw new Error(`--protocol must be messages or responses, got ${protocol}`);
const requests = Number(values.requests);
const warmup = Number(values.warmup);
if (!Number.isInteger(requests) || requests < 1) throw new Error('--requests must be a whole number > 0');
if (!Number.isInteger(warmup) || warmup < 0) throw new Error('--warmup must be a whole number ≥ 0');
const inFlight = Number(values['in-flight']);
if (!Number.isInteger(inFlight) || inFlight < 1) throw new Error('--in-flight must be a whole number > 0');

const text = JSON.stringify(protocol === 'messages' ? claudeCodeMessages(64) : codexResponses(64));
const translations = new TranslationJsonCache();

/**
 * `inFlight` requests' translations, as their endpoint's `begin` makes them: each reuses what the
 * organization kept before any of them is kept. The bytes' length is returned so nothing is
 * skipped.
 */
function translate(): number {
  const begun = [];
  for (let i = 0; i < inFlight; i++) {
    const body = JSON.parse(text) as Record<string, unknown>;
    const chat = protocol === 'messages' ? chatOfMessages(body) : chatOfResponses(body);
    const earlier = translations.reuse('org_bench', chat);
    keepCeilingWithinContext(chat, 262_144, translations.json);
    begun.push({ chat, earlier, sent: sentBody(chat, true, translations.json) });
  }
  let length = 0;
  for (const { chat, earlier, sent } of begun) {
    translations.keep('org_bench', chat, earlier);
    length += sent.writtenFor('served').length;
  }
  return length;
}

const rounds = (count: number) => Math.ceil(count / inFlight);
for (let i = 0; i < rounds(warmup); i++) translate();
const started = process.cpuUsage();
for (let i = 0; i < rounds(requests); i++) translate();
const used = process.cpuUsage(started);
const translated = rounds(requests) * inFlight;
const micros = (used.user + used.system) / translated;
console.log(
  `${protocol}: ${micros.toFixed(1)} µs of CPU a translation (${translated} after ${rounds(warmup) * inFlight} of warm-up, ${inFlight} in flight at a time)`,
);
