import { appendFile, readFile, writeFile } from 'node:fs/promises';
import type { Logger } from '../http/log.js';
import type { ChargeRecord, WalletService } from './wallet.js';

/**
 * Charges the store could not take (it was unreachable when a request ended)
 * wait here, in memory and appended to a file in the data folder, and are
 * written again every few seconds until the store takes them. Writes are
 * keyed by request id, so a charge that did land after all is not charged
 * twice. So a request that was served is billed, even across an outage, and
 * across a restart of the gateway while the outage lasts.
 *
 * @example
 * const spool = new ChargeSpool(wallets, '.tollgate/unwritten-charges.jsonl', log);
 * await spool.load();
 * await spool.add(record);
 */
export class ChargeSpool {
  private pending: ChargeRecord[] = [];
  private timer: NodeJS.Timeout | null = null;
  private draining = false;

  constructor(
    private readonly wallets: WalletService,
    /** null: memory only (a data folder of `memory://`). */
    private readonly file: string | null,
    private readonly log: Logger,
    private readonly retryMs = 5_000,
  ) {}

  /** Picks up what a previous run of the gateway could not write. */
  async load(): Promise<void> {
    if (!this.file) return;
    const text = await readFile(this.file, 'utf8').catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? '' : Promise.reject(error)));
    const records = text.split('\n').filter(Boolean).map(parseRecord);
    if (records.length === 0) return;
    this.pending.push(...records);
    this.log.warn('charges from an earlier outage are waiting to be written', { count: records.length });
    this.schedule();
  }

  async add(record: ChargeRecord): Promise<void> {
    this.pending.push(record);
    if (this.file) await appendFile(this.file, `${JSON.stringify(record, bigintAsString)}\n`, { mode: 0o600 });
    this.schedule();
  }

  /** How many charges are waiting (for tests and health). */
  get size(): number {
    return this.pending.length;
  }

  /** Tries to write everything now; true when nothing is left waiting. */
  async drain(): Promise<boolean> {
    if (this.draining || this.pending.length === 0) return this.pending.length === 0;
    this.draining = true;
    const batch = this.pending.slice();
    try {
      await this.wallets.chargeMany(batch);
      this.pending = this.pending.slice(batch.length);
      if (this.file) await writeFile(this.file, this.pending.map((r) => JSON.stringify(r, bigintAsString)).join('\n') + (this.pending.length ? '\n' : ''));
      this.log.warn('charges from an outage written', { count: batch.length });
      return this.pending.length === 0;
    } catch {
      return false;
    } finally {
      this.draining = false;
    }
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(async () => {
      this.timer = null;
      if (!(await this.drain())) this.schedule();
    }, this.retryMs);
    this.timer.unref();
  }
}

function bigintAsString(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

function parseRecord(line: string): ChargeRecord {
  const raw = JSON.parse(line) as ChargeRecord & { cost: string; createdAt?: string };
  return { ...raw, cost: BigInt(raw.cost), createdAt: raw.createdAt ? new Date(raw.createdAt) : undefined };
}
