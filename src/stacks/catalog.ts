import { createHash } from 'node:crypto';
import { and, asc, count, desc, eq, ilike, or, type SQL, sql } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { stacks } from '../db/schema.js';
import { GatewayError } from '../http/errors.js';
import type { Actor } from '../people/permissions.js';
import type { StackManifest } from './manifest.js';
import type { StackPackage } from './package.js';

export type StackRow = typeof stacks.$inferSelect;

export const STACK_SORTS = ['name', 'title', 'created_at'] as const;
export type StackSort = (typeof STACK_SORTS)[number] | `-${(typeof STACK_SORTS)[number]}`;

/** The fields a PATCH may change (the package itself is replaced by deleting and adding again). */
export type StackChange = Partial<Pick<StackManifest, 'title' | 'description' | 'category' | 'icon' | 'applicable_profiles'>>;

/**
 * The template catalog, with the spec's permissions: a platform admin adding
 * a stack makes it global, a user makes it private (visible to them and to
 * platform admins only). Platform admins change and delete any; a user their
 * own private ones.
 *
 * @example
 * const row = await catalog.add(actor, await readStackPackage(zip), zip);
 */
export class StackCatalog {
  constructor(private readonly db: Database) {}

  async add(actor: Actor, read: StackPackage, zip: Buffer): Promise<StackRow> {
    const { manifest } = read;
    try {
      const [row] = await this.db
        .insert(stacks)
        .values({
          name: manifest.name,
          visibility: actor.platformAdmin ? 'global' : 'private',
          ownerId: actor.userId,
          title: manifest.title,
          description: manifest.description,
          category: manifest.category,
          icon: manifest.icon ?? null,
          applicableProfiles: manifest.applicable_profiles ?? null,
          inputs: manifest.inputs,
          root: read.root,
          package: zip,
          packageSha256: createHash('sha256').update(zip).digest('hex'),
        })
        .returning();
      return row!;
    } catch (error) {
      const code = (error as { code?: unknown }).code ?? (error as { cause?: { code?: unknown } }).cause?.code;
      if (code === '23505') throw new GatewayError('conflict', `A stack named ${manifest.name} exists already.`, { details: [{ field: 'name', message: `${manifest.name} is taken.` }] });
      throw error;
    }
  }

  /** Adds a shipped global stack (owned by no user) unless one of its name exists; true when added. */
  async addShipped(read: StackPackage, zip: Buffer): Promise<boolean> {
    const { manifest } = read;
    const rows = await this.db
      .insert(stacks)
      .values({
        name: manifest.name,
        visibility: 'global',
        ownerId: null,
        title: manifest.title,
        description: manifest.description,
        category: manifest.category,
        icon: manifest.icon ?? null,
        applicableProfiles: manifest.applicable_profiles ?? null,
        inputs: manifest.inputs,
        root: read.root,
        package: zip,
        packageSha256: createHash('sha256').update(zip).digest('hex'),
      })
      .onConflictDoNothing({ target: stacks.name })
      .returning({ name: stacks.name });
    return rows.length > 0;
  }

  /** A stack `actor` may see, or 404 (a private stack of someone else does not exist for them). */
  async get(actor: Actor, name: string): Promise<StackRow> {
    const [row] = await this.db.select().from(stacks).where(and(eq(stacks.name, name), visibleTo(actor)));
    if (!row) throw new GatewayError('not_found', `Stack ${name} does not exist.`);
    return row;
  }

  /** One page of the stacks `actor` sees; `q` searches name, title and description; `category` filters. */
  async list(actor: Actor, query: { q?: string; category?: string; offset: number; limit: number; sort: StackSort }): Promise<{ rows: StackRow[]; total: number }> {
    const conditions: Array<SQL | undefined> = [visibleTo(actor)];
    if (query.q) {
      const pattern = `%${query.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      conditions.push(or(ilike(stacks.name, pattern), ilike(stacks.title, pattern), ilike(stacks.description, pattern)));
    }
    if (query.category) conditions.push(eq(stacks.category, query.category));
    const where = and(...conditions);
    const [{ total } = { total: 0 }] = await this.db.select({ total: count() }).from(stacks).where(where);
    const direction = query.sort.startsWith('-') ? desc : asc;
    const column = { name: stacks.name, title: stacks.title, created_at: stacks.createdAt }[query.sort.replace(/^-/, '') as (typeof STACK_SORTS)[number]];
    const rows = await this.db.select().from(stacks).where(where).orderBy(direction(column), direction(stacks.name)).limit(query.limit).offset(query.offset);
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
    const [updated] = await this.db.update(stacks).set({ ...values, updatedAt: sql`now()` }).where(eq(stacks.name, row.name)).returning();
    return updated!;
  }

  async delete(actor: Actor, name: string): Promise<void> {
    const row = await this.managed(actor, name);
    await this.db.delete(stacks).where(eq(stacks.name, row.name));
  }

  /** Platform admins manage every stack; a user their own private ones (403 for a global one they can see). */
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
