import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ChargeJournal } from '../src/gateway/billing/journal.js';
import { chargeLine } from '../src/gateway/billing/journal-lines.js';
import type { ChargeRecord } from '../src/gateway/billing/charge-writes.js';
import { percentile } from './report.js';

/**
 * `npx tsx bench/journal.ts`: how long a charge waits for the disk, the durable write on every
 * billed request's path (`billing/journal.ts`), beside a plain append of the same line to a file
 * opened with O_APPEND | O_DSYNC, in the same run, in alternating blocks so that both see the disk
 * alike. The journal's charges are written alone, as at one connection (`append(record, { alone:
 * true })`, one synchronous write on the main thread).
 *
 * What it measures is the disk's wait, not CPU: run it on the disk the gateway's data folder is on
 * (`--dir`, by default the system's temporary folder).
 *
 *   npx tsx bench/journal.ts --charges 3000 --block 250
 */
const { values } = parseArgs({
  options: {
    charges: { type: 'string', default: '3000' },
    block: { type: 'string', default: '250' },
    dir: { type: 'string', default: tmpdir() },
  },
});
const charges = Number(values.charges);
const block = Number(values.block);
if (!Number.isInteger(charges) || charges < 1) throw new Error('--charges must be a whole number > 0');
if (!Number.isInteger(block) || block < 1) throw new Error('--block must be a whole number > 0');

/** A charge as the request path journals one: a chat JSON answer with request data off. */
function charge(i: number): ChargeRecord {
  return {
    id: `req_${crypto.randomUUID().replaceAll('-', '')}`,
    orgId: 'org_8f14e45fceea167a5a36dedd4bea2543',
    keyId: 'key_c9f0f895fb98ab9159f51fd0297e236d',
    projectId: null,
    modelId: 'meta-llama/Llama-3.1-8B-Instruct',
    endpoint: 'chat.completions',
    promptTokens: 1_200 + (i % 50),
    completionTokens: 64,
    cachedTokens: 0,
    reasoningTokens: 0,
    cost: 123_456n + BigInt(i),
    status: 200,
    streamed: false,
    usageSource: 'upstream',
    latencyMs: 12,
    ttftMs: null,
    cacheHit: false,
    createdAt: new Date(),
  };
}

function summary(name: string, µs: number[]): string {
  const sorted = [...µs].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, x) => sum + x, 0) / sorted.length;
  return `${name.padEnd(34)} p50 ${percentile(sorted, 0.5)!.toFixed(0).padStart(5)} µs   p90 ${percentile(sorted, 0.9)!
    .toFixed(0)
    .padStart(5)} µs   mean ${mean.toFixed(0).padStart(5)} µs   (${sorted.length} writes)`;
}

const folder = await mkdtemp(path.join(values.dir, 'tollgate-journal-bench-'));
try {
  const journal = await ChargeJournal.open(path.join(folder, 'charges.journal'));
  const plain = openSync(
    path.join(folder, 'plain.journal'),
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_DSYNC,
    0o600,
  );
  const journalµs: number[] = [];
  const plainµs: number[] = [];
  for (let done = 0; done < charges; done += block) {
    const n = Math.min(block, charges - done);
    for (let i = 0; i < n; i++) {
      const record = charge(done + i);
      const startedAt = performance.now();
      await journal.append(record, { alone: true });
      journalµs.push((performance.now() - startedAt) * 1000);
    }
    for (let i = 0; i < n; i++) {
      const line = Buffer.from(`${chargeLine(charge(done + i))}\n`);
      const startedAt = performance.now();
      writeSync(plain, line);
      plainµs.push((performance.now() - startedAt) * 1000);
    }
  }
  closeSync(plain);
  await journal.close();
  console.log(`${charges} charges, in blocks of ${block}, in ${folder}:`);
  console.log(summary('the journal (alone)', journalµs));
  console.log(summary('a plain O_APPEND | O_DSYNC append', plainµs));
} finally {
  await rm(folder, { recursive: true, force: true });
}
