type Json = Record<string, unknown>;

/**
 * A `compaction` item as the gateway writes it (`POST /v1/responses/compact`) and reads it back
 * in a later turn's input. OpenAI's `encrypted_content` is opaque to the client; the gateway's is
 * the summary its engine wrote, base64 after a version tag, so any replica reads it back with no
 * key to share. A client that forges one only sends text it could have sent as a message: it is
 * billed as the tokens the engine is sent, like any input.
 */
const TAG = 'tollgate.compaction.v1:';

/** What the engine is asked at the end of the conversation it compacts. */
export const COMPACTION_PROMPT = [
  'Compact the conversation above into a handoff summary for yourself, so that the work can',
  'continue from the summary alone: the goal and the constraints the user stated, what was done',
  '(files, commands, results, decisions), what is left to do, and anything that must not be',
  'forgotten. Write only the summary.',
].join(' ');

/** What the summary is introduced by, when a later turn sends it to the engine. */
const SUMMARY_HEADING = 'Summary of the earlier conversation, compacted:\n\n';

export function compactionContent(summary: string): string {
  return TAG + Buffer.from(summary, 'utf8').toString('base64');
}

/** The summary a compaction item carries; null when the gateway did not write it. */
export function compactionSummary(item: Json): string | null {
  const content = item.encrypted_content;
  if (typeof content !== 'string' || !content.startsWith(TAG)) return null;
  const encoded = content.slice(TAG.length);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) return null;
  return Buffer.from(encoded, 'base64').toString('utf8');
}

/** A compaction item as the chat message the engine is sent: the summary, as the user's. */
export function compactionMessage(item: Json): Json {
  return { role: 'user', content: SUMMARY_HEADING + (compactionSummary(item) ?? '') };
}

/** Both of OpenAI's names for the item (`compaction_summary` is the older). */
export const COMPACTION_TYPES: ReadonlySet<string> = new Set(['compaction', 'compaction_summary']);
