import type { Database } from '../../shared/db/client.js';
import { exportLedger, type LedgerExport, type LedgerStream, openLedgerExport } from './ledger-export.js';
import { verifyWallet, type Verification } from './reconcile.js';
import { reportFailed } from './usage-reports.js';

/**
 * An organization's books, for whoever reconciles them: the wallet verified against its ledger and the ledger
 * against the usage records (`reconcile.ts`), and a window of the ledger exported with each entry's cause
 * (`ledger-export.ts`). A service, so the surfaces that show them never reach the database themselves.
 *
 * @example
 * const verification = await services.books.verify(org.id);
 */
export class Books {
  constructor(private readonly db: Database) {}

  verify(orgId: string): Promise<Verification> {
    return verifyWallet(this.db, orgId).catch(reportFailed);
  }

  exportLedger(orgId: string, from: Date, to: Date): Promise<LedgerExport> {
    return exportLedger(this.db, orgId, from, to).catch(reportFailed);
  }

  /** A window of the ledger to write out as it is read: no cap, a page in memory at a time. */
  openLedgerExport(orgId: string, from: Date, to: Date): Promise<LedgerStream> {
    return openLedgerExport(this.db, orgId, from, to).catch(reportFailed);
  }
}
