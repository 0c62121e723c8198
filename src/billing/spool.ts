import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { withinStoreTimeout } from '../db/timeout.js';
import type { Logger } from '../http/log.js';
import type { ChargeRecord, WalletService } from './wallet.js';

/**
 * Charges (and hold releases) the store could not take (it was unreachable when a request ended)
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
  private pending: SpooledItem[] = [];
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
    const items = text.split('\n').filter(Boolean).map(parseItem);
    if (items.length === 0) return;
    this.pending.push(...items);
    this.log.warn('charges from an earlier outage are waiting to be written', { count: items.length });
    this.schedule();
  }

  /** Keeps a charge until the store takes it. */
  add(record: ChargeRecord): Promise<void> {
    return this.keep(record);
  }

  /**
   * Keeps the release of a request's hold until the store takes it: a
   * request that ended must not leave its hold to expire. Releasing a hold
   * the store never took does nothing.
   */
  addRelease(requestId: string): Promise<void> {
    return this.keep({ release: requestId });
  }

  private async keep(item: SpooledItem): Promise<void> {
    this.pending.push(item);
    if (this.file) await appendFile(this.file, `${serialize(item)}\n`, { mode: 0o600 });
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
      const records = batch.flatMap((item) => ('release' in item ? [] : [item]));
      const releases = batch.flatMap((item) => ('release' in item ? [item.release] : []));
      await withinStoreTimeout(this.wallets.chargeMany(records, releases));
      this.pending = this.pending.slice(batch.length);
      if (this.file) await writeFile(this.file, this.pending.map(serialize).join('\n') + (this.pending.length ? '\n' : ''));
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

/** A charge, or the release of the hold of a request that used nothing. */
type SpooledItem = ChargeRecord | { release: string };

function serialize(item: SpooledItem): string {
  return JSON.stringify(item, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value));
}

function parseItem(line: string): SpooledItem {
  const raw = JSON.parse(line) as (ChargeRecord & { cost: string; createdAt?: string }) | { release: string };
  if ('release' in raw) return { release: raw.release };
  return { ...raw, cost: BigInt(raw.cost), createdAt: raw.createdAt ? new Date(raw.createdAt) : undefined };
}
