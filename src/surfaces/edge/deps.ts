import type { Config } from '../../config/types.js';
import type { PublicHosts } from '../../platform/runs/public-hosts.js';

/**
 * What the edge (`/tls/allowed`, and a run's public host sent on to its node) reads of the
 * services. `tlsRoutes(deps)` takes this; the app passes its whole `Services`, which has all of it.
 */
export interface EdgeDeps {
  config: Config;
  publicHosts: PublicHosts;
}
