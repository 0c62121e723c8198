import { and, asc, count, desc, eq, isNull, or, sql, type SQL } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { newId } from '../../shared/db/ids.js';
import { apiKeys, projects, type ProjectVisibility } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { Actor } from '../people/permissions.js';

export type ProjectRow = typeof projects.$inferSelect;

export const PROJECT_SORTS = ['created_at', 'name'] as const;
export type ProjectSort = (typeof PROJECT_SORTS)[number] | `-${(typeof PROJECT_SORTS)[number]}`;

export interface ProjectChange {
  name?: string;
  description?: string;
  visibility?: ProjectVisibility;
}

/**
 * Projects: the ones `X-Project-ID` names, as people (the generic API, the
 * portal) and operators (`/admin/v1`) manage them. Deleting keeps the row
 * (usage records name it), and keys that used it as their default project
 * fall back to none.
 *
 * @example
 * const project = await services.projects.create({ orgId: actor.orgId, createdBy: actor.userId, name: 'search' });
 */
export class ProjectService {
  constructor(
    private readonly db: Database,
    /** Called after every write, so the request path's admission cache drops what it holds. */
    private readonly changed: () => void = () => {},
  ) {}

  /**
   * A project of `orgId`; `createdBy` is null when an operator made it. The organization must exist
   * (its foreign key says so).
   */
  async create(input: {
    orgId: string;
    createdBy: string | null;
    name: string;
    description?: string;
    visibility?: ProjectVisibility;
  }): Promise<ProjectRow> {
    const [row] = await this.db
      .insert(projects)
      .values({
        id: newId('proj'),
        orgId: input.orgId,
        name: input.name,
        description: input.description ?? '',
        visibility: input.visibility ?? 'public',
        createdBy: input.createdBy,
      })
      .returning();
    this.changed();
    return row!;
  }

  /** A live project, or 404. */
  async get(id: string): Promise<ProjectRow> {
    const [row] = await this.db
      .select()
      .from(projects)
      .where(and(eq(projects.id, id), isNull(projects.deletedAt)));
    if (!row) throw new GatewayError('not_found', `Project ${id} does not exist.`);
    return row;
  }

  /**
   * One page of the live projects `actor` can see: their organization's public ones and the private
   * ones they may manage; platform admins see all.
   */
  async list(
    actor: Actor,
    page: { offset: number; limit: number; sort: ProjectSort },
  ): Promise<{ rows: ProjectRow[]; total: number }> {
    const where = and(isNull(projects.deletedAt), visibleTo(actor));
    const [{ total } = { total: 0 }] = await this.db.select({ total: count() }).from(projects).where(where);
    const rows = await this.db
      .select()
      .from(projects)
      .where(where)
      .orderBy(...projectOrder(page.sort))
      .limit(page.limit)
      .offset(page.offset);
    return { rows, total };
  }

  /** Every project of an organization, deleted ones included, oldest first: the operator's view. */
  listInOrg(orgId: string): Promise<ProjectRow[]> {
    return this.db.select().from(projects).where(eq(projects.orgId, orgId)).orderBy(projects.createdAt);
  }

  async update(id: string, change: ProjectChange): Promise<ProjectRow> {
    const values = Object.fromEntries(Object.entries(change).filter(([, value]) => value !== undefined));
    if (Object.keys(values).length === 0) return this.get(id);
    const [row] = await this.db
      .update(projects)
      .set(values)
      .where(and(eq(projects.id, id), isNull(projects.deletedAt)))
      .returning();
    if (!row) throw new GatewayError('not_found', `Project ${id} does not exist.`);
    this.changed();
    return row;
  }

  async delete(id: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const [row] = await tx
        .update(projects)
        .set({ deletedAt: sql`now()` })
        .where(and(eq(projects.id, id), isNull(projects.deletedAt)))
        .returning({ id: projects.id });
      if (!row) throw new GatewayError('not_found', `Project ${id} does not exist.`);
      await tx.update(apiKeys).set({ projectId: null }).where(eq(apiKeys.projectId, id));
    });
    this.changed();
  }
}

function visibleTo(actor: Actor): SQL | undefined {
  if (actor.platformAdmin) return undefined;
  const sameOrg = eq(projects.orgId, actor.orgId);
  if (actor.role !== 'member') return sameOrg;
  return and(sameOrg, or(eq(projects.visibility, 'public'), eq(projects.createdBy, actor.userId)));
}

function projectOrder(sort: ProjectSort): SQL[] {
  const direction = sort.startsWith('-') ? desc : asc;
  const column = sort.replace(/^-/, '') === 'name' ? projects.name : projects.createdAt;
  return [direction(column), direction(projects.id)];
}
