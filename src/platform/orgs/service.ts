import { eq } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { newId } from '../../shared/db/ids.js';
import { organizations, wallets } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';

export type Organization = typeof organizations.$inferSelect;

/**
 * Organizations (the spec's accounts). Every organization is created with an
 * empty wallet in the same transaction. Their projects are `projects.ts`.
 *
 * @example
 * const orgs = new OrgService(db);
 * const org = await orgs.create('Acme');
 */
export class OrgService {
  constructor(
    private readonly db: Database,
    /**
     * Called after every write, so the request path's cache drops what it holds
     * (`catalog/request-path-cache.ts`).
     */
    private readonly changed: () => void = () => {},
  ) {}

  async create(name: string): Promise<Organization> {
    const created = await this.db.transaction(async (tx) => {
      const [org] = await tx
        .insert(organizations)
        .values({ id: newId('org'), name })
        .returning();
      await tx.insert(wallets).values({ orgId: org!.id });
      return org!;
    });
    this.changed();
    return created;
  }

  list(): Promise<Organization[]> {
    return this.db.select().from(organizations).orderBy(organizations.createdAt);
  }

  /**
   * Every organization with its balance in one query, so listing a hundred
   * organizations is not a hundred and one round trips.
   */
  async listWithBalances(): Promise<{ org: Organization; balance: bigint }[]> {
    const rows = await this.db
      .select({ org: organizations, balance: wallets.balance })
      .from(organizations)
      .leftJoin(wallets, eq(wallets.orgId, organizations.id))
      .orderBy(organizations.createdAt, organizations.id);
    return rows.map((row) => ({ org: row.org, balance: row.balance ?? 0n }));
  }

  /**
   * Sets its weight in the fleet's fair share (1 to 1000); every replica's request path reads it
   * with the key.
   */
  async setShareWeight(id: string, shareWeight: number): Promise<Organization> {
    const [org] = await this.db.update(organizations).set({ shareWeight }).where(eq(organizations.id, id)).returning();
    this.changed();
    if (!org) throw new GatewayError('not_found', `Organization ${id} does not exist.`, { status: 404 });
    return org;
  }

  async get(id: string): Promise<Organization> {
    const [org] = await this.db.select().from(organizations).where(eq(organizations.id, id));
    if (!org) throw new GatewayError('not_found', `Organization ${id} does not exist.`, { status: 404 });
    return org;
  }
}
