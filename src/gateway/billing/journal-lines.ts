import type { ChargeRecord } from './wallet.js';

/** The charge journal's file format: one JSON object a line (see `ChargeJournal`). */
type JournalLine = { charge: SerializedCharge } | { applied: string[] } | { reported: string[] };
type SerializedCharge = Omit<ChargeRecord, 'cost' | 'createdAt'> & { cost: string; createdAt?: string };

/**
 * What a journal file holds: its charges in the order appended, and the ids
 * marked written to PostgreSQL (`applied`) and taken into the Redis wallet
 * (`reported`). A line cut by a crash mid-write is skipped: its charge was
 * never confirmed to anyone.
 */
export function readJournalText(text: string): {
  charges: ChargeRecord[];
  applied: Set<string>;
  reported: Set<string>;
} {
  const applied = new Set<string>();
  const reported = new Set<string>();
  const charges: ChargeRecord[] = [];
  for (const line of text.split('\n')) {
    if (!line) continue;
    let entry: JournalLine;
    try {
      entry = JSON.parse(line) as JournalLine;
    } catch {
      continue;
    }
    if ('charge' in entry) charges.push(parseCharge(entry.charge));
    else if ('applied' in entry) for (const id of entry.applied) applied.add(id);
    else if ('reported' in entry) for (const id of entry.reported) reported.add(id);
  }
  return { charges, applied, reported };
}

/**
 * A charge as one journal line. `cost` is the record's only bigint (usage
 * records have none): it is written as a string here rather than by a
 * replacer, which would put every value of every line on JSON.stringify's slow path.
 */
export function chargeLine(record: ChargeRecord): string {
  const serialized: SerializedCharge = {
    ...record,
    cost: record.cost.toString(),
    createdAt: record.createdAt?.toISOString(),
  };
  return JSON.stringify({ charge: serialized });
}

function parseCharge(raw: SerializedCharge): ChargeRecord {
  return { ...raw, cost: BigInt(raw.cost), createdAt: raw.createdAt ? new Date(raw.createdAt) : undefined };
}
