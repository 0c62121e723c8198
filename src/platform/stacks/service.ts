import type { Readable } from 'node:stream';
import { and, asc, count, desc, eq, getTableColumns, ilike, or, type SQL, sql } from 'drizzle-orm';
import type { BlobStore, StoredBlob } from '../../shared/blobs/blob-store.js';
import type { Database } from '../../shared/db/client.js';
import { newId } from '../../shared/db/ids.js';
import { stacks } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { Actor } from '../people/permissions.js';
import type { StackManifest } from './manifest.js';
import type { StackPackage } from './package.js';
import { isUniqueViolation } from '../../shared/db/errors.js';
import { openPackage, storePackage } from './package-blobs.js';
import { refuseOverUserBounds } from './user-bounds.js';

/** A stack's row, never its package's bytes (those are in the blob store: `package-blobs.ts`). */
export type StackRow = Omit<typeof stacks.$inferSelect, 'package'>;

const { package: _package, ...COLUMNS_BUT_PACKAGE } = getTableColumns(stacks);

export const STACK_SORTS = ['name', 'title', 'created_at'] as const;
export type StackSort = (typeof STACK_SORTS)[number] | `-${(typeof STACK_SORTS)[number]}`;

/** The fields a PATCH may change (the package itself is replaced by deleting and adding again). */
export type StackChange = Partial<
  Pick<StackManifest, 'title' | 'description' | 'category' | 'icon' | 'applicable_profiles'>
>;

/**
 * The template catalog, with the spec's permissions: a platform admin adding
 * a stack makes it global, a user makes it private (visible to them and to
 * platform admins only). Platform admins change and delete any; a user their
 * own private ones. A user keeps at most `stacksPerUser` private stacks of
 * at most `stacksBytesPerUser` bytes in all (platform admins, who curate the
 * global catalog, are not bounded).
 *
 * Names: a global stack's is unique platform-wide; a private stack's only
 * within its organization, so adding one never tells a user what another
 * organization has named its own. No private stack takes a global stack's
 * name, and no global stack is added under a name a private one has (both
 * 409, to someone who sees the other stack anyway: everyone sees global
 * stacks, platform admins every stack). So within an organization a name
 * means one stack, which is what runs and their public URLs name.
 *
 * Packages are in the blob store (`shared/blobs/`), written before their row, deleted after it.
 *
 * @example
 * const row = await catalog.add(actor, await readStackPackage(zip), zip);
 */
export class StackCatalog {
  constructor(
    private readonly db: Database,
    private readonly blobs: BlobStore,
    private readonly options: { stacksPerUser: number; stacksBytesPerUser: number } = {
      stacksPerUser: Number.MAX_SAFE_INTEGER,
      stacksBytesPerUser: Number.MAX_SAFE_INTEGER,
    },
  ) {}

  async add(actor: Actor, read: StackPackage, zip: Buffer): Promise<StackRow> {
    const { manifest } = read;
    const visibility = actor.platformAdmin ? 'global' : 'private';
    const taken = () =>
      new GatewayError('conflict', `A stack named ${manifest.name} exists already.`, {
        details: [{ field: 'name', message: `${manifest.name} is taken.` }],
      });
    // Written first, outside the transaction (an upload's write holds no lock); deleted if no row
    // came of it.
    const blob = await storePackage(this.blobs, zip);
    try {
      return await this.db.transaction(async (tx) => {
        await lockName(tx, manifest.name);
        // A private name collides with a global stack (which its adder sees) or one of its own
        // organization; a global name with any stack.
        const [clash] = await tx
          .select({ id: stacks.id })
          .from(stacks)
          .where(
            and(
              eq(stacks.name, manifest.name),
              visibility === 'global' ? undefined : or(eq(stacks.visibility, 'global'), eq(stacks.orgId, actor.orgId)),
            ),
          )
          .limit(1);
        if (clash) throw taken();
        if (!actor.platformAdmin) await refuseOverUserBounds(tx, this.options, actor.userId, zip.length);
        const [row] = await tx
          .insert(stacks)
          .values({
            ...rowOf(read, blob),
            visibility,
            ownerId: actor.userId,
            orgId: visibility === 'global' ? null : actor.orgId,
          })
          .returning(COLUMNS_BUT_PACKAGE);
        return row!;
      });
    } catch (error) {
      await this.blobs.delete(blob.id).catch(() => undefined);
      if (isUniqueViolation(error)) throw taken();
      throw error;
    }
  }

  /**
   * Adds a shipped global stack (owned by no user) unless a stack of its name, global or private,
   * exists; true when added.
   */
  async addShipped(read: StackPackage, zip: Buffer): Promise<boolean> {
    const named = eq(stacks.name, read.manifest.name);
    // Looked for first, so a start that finds them all writes no blob; again under the lock.
    if (await this.hasStackNamed(read.manifest.name)) return false;
    const blob = await storePackage(this.blobs, zip);
    let added = false;
    try {
      added = await this.db.transaction(async (tx) => {
        await lockName(tx, read.manifest.name);
        if ((await tx.select({ id: stacks.id }).from(stacks).where(named).limit(1)).length > 0) return false;
        await tx.insert(stacks).values({ ...rowOf(read, blob), visibility: 'global', ownerId: null, orgId: null });
        return true;
      });
    } finally {
      if (!added) await this.blobs.delete(blob.id);
    }
    return added;
  }

  /**
   * Whether any stack, of any visibility, has this name (a shipped stack is added only when none
   * has).
   */
  async hasStackNamed(name: string): Promise<boolean> {
    const found = await this.db.select({ id: stacks.id }).from(stacks).where(eq(stacks.name, name)).limit(1);
    return found.length > 0;
  }

  /** The package of a stack `get` gave, as a stream (`package-blobs.ts`); null when gone. */
  openPackage(row: StackRow): Promise<Readable | null> {
    return openPackage(this.db, this.blobs, row);
  }

  /**
   * A stack `actor` may see, by name or by id (`stk_…`), or 404 (a private
   * stack of someone else does not exist for them). With `orgId`, only a
   * global stack or a private one of that organization (what may be applied
   * to its clusters). A name means one stack to everyone but a platform
   * admin, who sees every organization's private stacks: for them a name
   * held by several means the global stack, else their own organization's,
   * else it is a 409 that asks for the id.
   */
  async get(actor: Actor, nameOrId: string, options: { orgId?: string } = {}): Promise<StackRow> {
    const scope =
      options.orgId === undefined ? undefined : or(eq(stacks.visibility, 'global'), eq(stacks.orgId, options.orgId));
    const rows = await this.db
      .select(COLUMNS_BUT_PACKAGE)
      .from(stacks)
      .where(and(isStackId(nameOrId) ? eq(stacks.id, nameOrId) : eq(stacks.name, nameOrId), visibleTo(actor), scope))
      .limit(20);
    if (rows.length === 0) throw new GatewayError('not_found', `Stack ${nameOrId} does not exist.`);
    const chosen =
      rows.length === 1
        ? rows[0]
        : (rows.find((row) => row.visibility === 'global') ?? rows.find((row) => row.orgId === actor.orgId));
    if (!chosen) {
      throw new GatewayError(
        'conflict',
        `Several organizations have a private stack named ${nameOrId}: name it by its id.`,
        {
          details: [{ field: 'name', message: `One of ${rows.map((row) => row.id).join(', ')}.` }],
        },
      );
    }
    return chosen;
  }

  /**
   * One page of the stacks `actor` sees; `q` searches name, title and description; `category`
   * filters.
   */
  async list(
    actor: Actor,
    query: { q?: string; category?: string; offset: number; limit: number; sort: StackSort },
  ): Promise<{ rows: StackRow[]; total: number }> {
    const conditions: Array<SQL | undefined> = [visibleTo(actor)];
    if (query.q) {
      const pattern = `%${query.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      conditions.push(
        or(ilike(stacks.name, pattern), ilike(stacks.title, pattern), ilike(stacks.description, pattern)),
      );
    }
    if (query.category) conditions.push(eq(stacks.category, query.category));
    const where = and(...conditions);
    const [{ total } = { total: 0 }] = await this.db.select({ total: count() }).from(stacks).where(where);
    const direction = query.sort.startsWith('-') ? desc : asc;
    const column = { name: stacks.name, title: stacks.title, created_at: stacks.createdAt }[
      query.sort.replace(/^-/, '') as (typeof STACK_SORTS)[number]
    ];
    const rows = await this.db
      .select(COLUMNS_BUT_PACKAGE)
      .from(stacks)
      .where(where)
      .orderBy(direction(column), direction(stacks.name))
      .limit(query.limit)
      .offset(query.offset);
    return { rows, total };
  }

  async update(actor: Actor, name: string, change: StackChange): Promise<StackRow> {
    const row = await this.managed(actor, name);
    const values = Object.fromEntries(
      Object.entries({
        title: change.title,
        description: change.description,
        category: change.category,
        icon: change.icon,
        applicableProfiles: change.applicable_profiles,
      }).filter(([, value]) => value !== undefined),
    );
    if (Object.keys(values).length === 0) return row;
    const [updated] = await this.db
      .update(stacks)
      .set({ ...values, updatedAt: sql`now()` })
      .where(eq(stacks.id, row.id))
      .returning(COLUMNS_BUT_PACKAGE);
    return updated!;
  }

  async delete(actor: Actor, name: string): Promise<void> {
    const row = await this.managed(actor, name);
    const [gone] = await this.db
      .delete(stacks)
      .where(eq(stacks.id, row.id))
      .returning({ blobId: stacks.packageBlobId });
    // After the row: a run that finds no row fails as for a deleted stack, never half a package.
    if (gone?.blobId) await this.blobs.delete(gone.blobId);
  }

  /**
   * Platform admins manage every stack; a user their own private ones (403 for a global one they
   * can see).
   */
  private async managed(actor: Actor, name: string): Promise<StackRow> {
    const row = await this.get(actor, name);
    if (!actor.platformAdmin && !(row.visibility === 'private' && row.ownerId === actor.userId)) {
      throw new GatewayError('forbidden', 'Only platform admins change global stacks.');
    }
    return row;
  }
}

function visibleTo(actor: Actor): SQL | undefined {
  if (actor.platformAdmin) return undefined;
  return or(eq(stacks.visibility, 'global'), eq(stacks.ownerId, actor.userId));
}

/** The row's fields from the package, and where its bytes were stored. */
function rowOf(read: StackPackage, blob: StoredBlob) {
  const { manifest } = read;
  return {
    id: newId('stk'),
    name: manifest.name,
    title: manifest.title,
    description: manifest.description,
    category: manifest.category,
    icon: manifest.icon ?? null,
    applicableProfiles: manifest.applicable_profiles ?? null,
    inputs: manifest.inputs,
    root: read.root,
    packageBlobId: blob.id,
    packageBytes: blob.bytes,
    packageSha256: blob.sha256,
  };
}

type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];

/** Adds of one name take turns (until the transaction ends), so two cannot both find it free. */
async function lockName(tx: Transaction, name: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`tollgate:stack:${name}`}))`);
}

/**
 * True for a string shaped like a stack id (`stk_` and 32 hex digits); names are `a-z 0-9 -` only,
 * so never one.
 */
function isStackId(value: string): boolean {
  return /^stk_[0-9a-f]{32}$/.test(value);
}
