import type { ChargeRecord } from './charge-writes.js';

/** The charge journal's file format: one JSON object a line (see `ChargeJournal`). */
type JournalLine =
  | { charge: SerializedCharge }
  | { checkpoint: SerializedCharge }
  | { dropped: string }
  | { applied: string[] }
  | { reported: string[] };
type SerializedCharge = Omit<ChargeRecord, 'cost' | 'createdAt'> & { cost: string; createdAt?: string };

/**
 * What a journal file holds: its charges in the order appended, and the ids
 * marked written to PostgreSQL (`applied`) and taken into the Redis wallet
 * (`reported`). A line cut by a crash mid-write is skipped: its charge was
 * never confirmed to anyone.
 *
 * A stream's checkpoints (`StreamCheckpoints`) are its charge so far, made while
 * it ran: a stream whose own charge is in the file was settled, and its
 * checkpoints say nothing more; one whose charge is not was cut by the
 * process's death, and its last checkpoint becomes its charge (`recovered`,
 * after the others). So a stream is charged once, whatever the order of its lines. A `dropped`
 * line forgets the checkpoints before it of a call billed nothing (`ChargeJournal.dropCheckpoint`).
 */
export function readJournalText(text: string): {
  charges: ChargeRecord[];
  applied: Set<string>;
  reported: Set<string>;
  recovered: number;
} {
  const applied = new Set<string>();
  const reported = new Set<string>();
  const charges: ChargeRecord[] = [];
  const checkpoints = new Map<string, ChargeRecord>();
  for (const line of text.split('\n')) {
    if (!line) continue;
    let entry: JournalLine;
    try {
      entry = JSON.parse(line) as JournalLine;
    } catch {
      continue;
    }
    if ('charge' in entry) charges.push(parseCharge(entry.charge));
    else if ('checkpoint' in entry) checkpoints.set(entry.checkpoint.id, parseCharge(entry.checkpoint));
    else if ('dropped' in entry) checkpoints.delete(entry.dropped);
    else if ('applied' in entry) for (const id of entry.applied) applied.add(id);
    else if ('reported' in entry) for (const id of entry.reported) reported.add(id);
  }
  for (const charge of charges) checkpoints.delete(charge.id);
  charges.push(...checkpoints.values());
  return { charges, applied, reported, recovered: checkpoints.size };
}

/**
 * A whole journal, as a rewrite starts it afresh: the charges not yet written to PostgreSQL or not
 * yet reported to the wallet, marked as they are, and the running streams' last checkpoints.
 */
export function journalText(
  unapplied: Map<string, ChargeRecord>,
  unreported: Map<string, ChargeRecord>,
  checkpoints: Iterable<ChargeRecord>,
): string {
  const kept = new Map([...unapplied, ...unreported]);
  const lines = [...kept.values()].map(chargeLine);
  for (const record of checkpoints) lines.push(checkpointLine(record));
  const applied = [...kept.keys()].filter((id) => !unapplied.has(id));
  const reported = [...kept.keys()].filter((id) => !unreported.has(id));
  if (applied.length) lines.push(JSON.stringify({ applied }));
  if (reported.length) lines.push(JSON.stringify({ reported }));
  return lines.map((line) => `${line}\n`).join('');
}

/**
 * A charge as one journal line. `cost` is the record's only bigint (usage
 * records have none): it is written as a string here rather than by a
 * replacer, which would put every value of every line on JSON.stringify's slow path.
 */
export function chargeLine(record: ChargeRecord): string {
  return JSON.stringify({ charge: serialize(record) });
}

/**
 * A running stream's charge so far as one journal line: what its charge would be, were the process
 * to die now.
 */
export function checkpointLine(record: ChargeRecord): string {
  return JSON.stringify({ checkpoint: serialize(record) });
}

/** A call's checkpoints so far forgotten, as one journal line (`ChargeJournal.dropCheckpoint`). */
export function droppedLine(id: string): string {
  return JSON.stringify({ dropped: id });
}

function serialize(record: ChargeRecord): SerializedCharge {
  return { ...record, cost: record.cost.toString(), createdAt: record.createdAt?.toISOString() };
}

function parseCharge(raw: SerializedCharge): ChargeRecord {
  return { ...raw, cost: BigInt(raw.cost), createdAt: raw.createdAt ? new Date(raw.createdAt) : undefined };
}
