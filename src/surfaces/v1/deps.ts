import type { BilledDeps } from '../../gateway/requests/endpoint.js';
import type { CatalogService } from '../../gateway/catalog/service.js';
import type { ResponseStore } from '../../gateway/stored-responses/store.js';
import type { BackgroundResponses } from '../../gateway/requests/responses/background.js';
import type { ConversationStore } from '../../gateway/conversations/store.js';
import type { UsageReports } from '../../gateway/billing/usage-reports.js';
import type { ChargeApplier } from '../../gateway/billing/charge-applier.js';
import type { WalletService } from '../../gateway/billing/wallet.js';
import type { FileStore } from '../../gateway/files/store.js';
import type { BlobStore } from '../../shared/blobs/blob-store.js';
import type { Batches } from '../../gateway/batches/service.js';

/**
 * What the `/v1` surface reads of the services: the billed path's (`BilledDeps`), and what its
 * unbilled routes ask (models, stored responses, usage, the wallet). `createV1Routes(deps)` takes
 * this; the app passes its whole `Services`, which has all of it.
 */
export interface V1Deps extends BilledDeps {
  catalog: CatalogService;
  responseStore: ResponseStore;
  conversationStore: ConversationStore;
  backgroundResponses: BackgroundResponses;
  /** Uploaded files' rows (`/v1/files`)… */
  fileStore: FileStore;
  /** …and where their bytes are. */
  blobs: BlobStore;
  /** Batches (`/v1/batches`). */
  batches: Batches;
  usageReports: UsageReports;
  /** Waited on by the routes that read charges (`chargesWritten`). */
  applier: ChargeApplier;
  wallets: WalletService;
}
