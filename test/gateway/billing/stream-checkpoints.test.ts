import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ChargeJournal } from '../../../src/gateway/billing/journal.js';
import { checkpointLine, chargeLine } from '../../../src/gateway/billing/journal-lines.js';
import { type ChargeSoFar, StreamCheckpoints } from '../../../src/gateway/billing/stream-checkpoints.js';
import type { ChargeRecord } from '../../../src/gateway/billing/charge-writes.js';
import { chargeRecord } from '../../helpers/charges.js';

/**
 * A stream's usage is made durable while it runs: its checkpoints in the
 * charge journal become its charge when the process died before the stream
 * ended, and are superseded by the stream's own charge when it did end.
 */

const owner = { orgId: 'org_1', keyId: 'key_1' };
const folders: string[] = [];
afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

async function journalFile(): Promise<string> {
  const folder = await mkdtemp(path.join(tmpdir(), 'tollgate-checkpoints-'));
  folders.push(folder);
  return path.join(folder, 'charges.journal');
}

/** A checkpoint as a stream makes it: status 500, the usage so far. */
const checkpoint = (id: string, completionTokens: number, cost: bigint): ChargeRecord =>
  chargeRecord(id, owner, cost, { promptTokens: 9026, completionTokens, status: 500, streamed: true });

/** Lets the journal's queued writes go out (checkpoints are not awaited by anyone). */
async function written(file: string, text: string): Promise<void> {
  await vi.waitFor(async () => expect(await readFile(file, 'utf8')).toContain(text), { timeout: 10_000, interval: 5 });
}

describe('the charge journal recovers the checkpoints of streams its process did not finish', () => {
  it('charges an unfinished stream its last checkpoint on the next open: pending, unreported, once', async () => {
    const file = await journalFile();
    const journal = await ChargeJournal.open(file);
    journal.checkpoint(checkpoint('req_cut', 0, 100n));
    journal.checkpoint(checkpoint('req_cut', 40, 140n));
    await written(file, '"completionTokens":40');
    // No close: the process is SIGKILLed here. What is on the disk is all the next start has.
    const again = await ChargeJournal.open(file);
    expect(again.pending()).toEqual([expect.objectContaining({ id: 'req_cut', completionTokens: 40, cost: 140n })]);
    expect(again.unreportedCharges().map((c) => c.id)).toEqual(['req_cut']);
    expect(again.recoveredStreams).toBe(1);
    // The file now holds it as a charge: a second crash before PostgreSQL took it still has it,
    // once.
    const third = await ChargeJournal.open(file);
    expect(third.pending()).toHaveLength(1);
    expect(third.pending()[0]!.cost).toBe(140n);
    expect(third.recoveredStreams).toBe(0);
    await Promise.all([journal.close(), again.close(), third.close()]);
  });

  it('charges nothing for checkpoints dropped (a JSON attempt its engine broke off), but a later one again', async () => {
    const file = await journalFile();
    const journal = await ChargeJournal.open(file);
    journal.checkpoint(checkpoint('req_broken', 120, 150n));
    journal.dropCheckpoint('req_broken');
    journal.checkpoint(checkpoint('req_retried', 110, 140n));
    journal.dropCheckpoint('req_retried');
    journal.checkpoint(checkpoint('req_retried', 100, 130n));
    await written(file, '"completionTokens":100');
    // No close: SIGKILLed. The dropped call is charged nothing; the one answered again is charged
    // its last checkpoint, made after the drop.
    const again = await ChargeJournal.open(file);
    expect(again.pending().map((c) => [c.id, c.cost])).toEqual([['req_retried', 130n]]);
    expect(again.recoveredStreams).toBe(1);
    await Promise.all([journal.close(), again.close()]);
  });

  it('charges a stream that ended its own charge only: the checkpoints are superseded, whatever the order of the lines', async () => {
    const file = await journalFile();
    const journal = await ChargeJournal.open(file);
    journal.checkpoint(checkpoint('req_done', 10, 110n));
    await journal.append(chargeRecord('req_done', owner, 175n, { completionTokens: 75, streamed: true }));
    await journal.close();
    // A charge line written before a checkpoint of the same stream (as a crash between two writes
    // could leave).
    await writeFile(
      file,
      `${chargeLine(chargeRecord('req_other', owner, 50n))}\n${checkpointLine(checkpoint('req_other', 5, 30n))}\n`,
      { flag: 'a' },
    );
    const again = await ChargeJournal.open(file);
    const pending = again.pending();
    expect(pending.map((c) => [c.id, c.cost])).toEqual([
      ['req_done', 175n],
      ['req_other', 50n],
    ]);
    await again.close();
  });

  it('does not hand a checkpoint to the applier, and keeps the running streams’ checkpoints when the file is rewritten', async () => {
    const file = await journalFile();
    const journal = await ChargeJournal.open(file);
    journal.checkpoint(checkpoint('req_running', 20, 120n));
    expect(journal.pendingCount).toBe(0);
    expect(journal.unreportedCharges()).toEqual([]);
    await written(file, 'req_running');
    // The compaction a large file triggers: it starts the file afresh with only what is still open.
    await (journal as unknown as { rewrite(): Promise<void> }).rewrite();
    expect(await readFile(file, 'utf8')).toContain('"checkpoint"');
    const again = await ChargeJournal.open(file);
    expect(again.pending().map((c) => [c.id, c.completionTokens])).toEqual([['req_running', 20]]);
    await Promise.all([journal.close(), again.close()]);
  });

  it('writes nothing for a journal in memory', async () => {
    const journal = await ChargeJournal.open(null);
    journal.checkpoint(checkpoint('req_memory', 1, 1n));
    expect(journal.pendingCount).toBe(0);
    await journal.close();
  });
});

describe('StreamCheckpoints: when a running stream is checkpointed', () => {
  const made: Array<{ promptTokens: number; completionTokens: number; source: string }> = [];
  const journal = { checkpoint: vi.fn() } as unknown as ChargeJournal;
  const chargeSoFar: ChargeSoFar = (usage, source) => {
    made.push({ ...usage, source });
    return checkpoint('req', usage.completionTokens, 1n);
  };
  afterEach(() => {
    made.length = 0;
  });

  it('checkpoints at the first chunk (the prompt), then every N tokens of the engine’s running count', () => {
    const checkpoints = new StreamCheckpoints(journal, { everyTokens: 10, everyMs: 60_000 }, chargeSoFar, () => 1);
    for (let n = 0; n <= 35; n += 1)
      checkpoints.saw({ usage: { promptTokens: 9026, completionTokens: n }, usageFinal: false, tokenChunks: n });
    expect(made.map((m) => m.completionTokens)).toEqual([0, 10, 20, 30]);
    expect(made.every((m) => m.promptTokens === 9026 && m.source === 'upstream')).toBe(true);
  });

  it('checkpoints after T ms even when fewer than N tokens came (the clock read every eighth chunk)', () => {
    let now = 1_000;
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => now);
    try {
      const checkpoints = new StreamCheckpoints(journal, { everyTokens: 1_000, everyMs: 500 }, chargeSoFar, () => 1);
      for (let n = 0; n <= 20; n += 1) {
        checkpoints.saw({ usage: { promptTokens: 5, completionTokens: n }, usageFinal: false, tokenChunks: n });
        now += 120;
      }
      // At 0 tokens, then at the eighth chunk after (960 ms later: over 500), and the eighth after
      // that.
      expect(made.map((m) => m.completionTokens)).toEqual([0, 8, 16]);
    } finally {
      clock.mockRestore();
    }
  });

  it('counts the prompt estimate and the token chunks for an engine that reports no running usage', () => {
    const estimate = vi.fn(() => 321);
    const checkpoints = new StreamCheckpoints(journal, { everyTokens: 2, everyMs: 60_000 }, chargeSoFar, estimate);
    for (let n = 0; n <= 4; n += 1) checkpoints.saw({ usage: null, usageFinal: false, tokenChunks: n });
    expect(made).toEqual([
      { promptTokens: 321, completionTokens: 0, source: 'estimated' },
      { promptTokens: 321, completionTokens: 2, source: 'estimated' },
      { promptTokens: 321, completionTokens: 4, source: 'estimated' },
    ]);
    expect(estimate).toHaveBeenCalledTimes(1);
  });
});
