import type { Database } from '../../shared/db/client.js';
import { exportLedger, type LedgerExport, type LedgerStream, openLedgerExport } from './ledger-export.js';
import { verifyBooks, verifyWallet, type Verification, type VerifyProgress } from './reconcile.js';
import { reportFailed } from './usage-reports.js';

/**
 * An organization's books, for whoever reconciles them: the wallet verified against its ledger and
 * the ledger against the usage records (`reconcile.ts`), and a window of the ledger exported with
 * each entry's cause (`ledger-export.ts`). A service, so the surfaces that show them never reach
 * the database themselves.
 *
 * @example
 * const verification = await services.books.verify(org.id);
 */
export class Books {
  constructor(private readonly db: Database) {}

  /** From the last checkpoint, or everything (`full`): `reconcile.ts`. */
  verify(orgId: string, options: { full?: boolean } = {}): Promise<Verification> {
    return verifyWallet(this.db, orgId, options).catch(reportFailed);
  }

  /** The same, saying how far it has read after each page; its failures are `reportFailed`'s. */
  async *verifying(orgId: string, options: { full?: boolean } = {}): AsyncGenerator<VerifyProgress, Verification> {
    try {
      return yield* verifyBooks(this.db, orgId, options);
    } catch (error) {
      return reportFailed(error);
    }
  }

  exportLedger(orgId: string, from: Date, to: Date): Promise<LedgerExport> {
    return exportLedger(this.db, orgId, from, to).catch(reportFailed);
  }

  /** A window of the ledger to write out as it is read: no cap, a page in memory at a time. */
  openLedgerExport(orgId: string, from: Date, to: Date): Promise<LedgerStream> {
    return openLedgerExport(this.db, orgId, from, to).catch(reportFailed);
  }
}
