import { GatewayError } from './errors.js';

interface OrgPages {
  running: number;
  waiting: Array<() => void>;
}

/**
 * How many of one organization's portal pages this process reads and draws at once. A page of a big
 * organization's history costs tens of milliseconds of the event loop (its queries' rows, its HTML)
 * that every other tenant's request waits behind; ten at once made another organization's requests
 * wait for them. Past `perOrg`, an organization's pages wait their turn here (in order), at most
 * `waitingPerOrg` of them; one more is refused with 429. Other organizations are not held.
 */
export class PageGate {
  private readonly orgs = new Map<string, OrgPages>();

  constructor(private readonly bounds: { perOrg: number; waitingPerOrg: number }) {}

  /** A turn for one of `orgId`'s pages: call the returned function once the page is drawn. */
  async enter(orgId: string): Promise<() => void> {
    const pages = this.orgs.get(orgId) ?? { running: 0, waiting: [] };
    this.orgs.set(orgId, pages);
    if (pages.running >= this.bounds.perOrg) {
      if (pages.waiting.length >= this.bounds.waitingPerOrg)
        throw new GatewayError(
          'rate_limit_exceeded',
          `Your organization has too many portal pages loading at once (TOLLGATE_PORTAL_ORG_PAGES_WAITING is ${this.bounds.waitingPerOrg}); try again in a moment.`,
          { headers: { 'Retry-After': '1' } },
        );
      await new Promise<void>((resolve) => pages.waiting.push(resolve));
    } else pages.running++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      // The turn passes to the next waiting page as it is: `running` counts it.
      const next = pages.waiting.shift();
      if (next) return next();
      pages.running--;
      if (pages.running === 0) this.orgs.delete(orgId);
    };
  }

  /** Organizations with a page under way or waiting (for tests: the map empties when they end). */
  get size(): number {
    return this.orgs.size;
  }
}
