import { and, asc, count, desc, eq, isNull, sql, type SQL } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { newId } from '../../shared/db/ids.js';
import { apiKeys, organizations, sessions, users, type Role } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { normalizeEmail } from './email.js';
import type { Passwords } from './passwords.js';
import { isUniqueViolation } from '../../shared/db/errors.js';

export type UserRow = typeof users.$inferSelect;

/** Sort orders of user lists: a column, descending with a leading `-`. */
export const USER_SORTS = ['created_at', 'name', 'email'] as const;
export type UserSort = (typeof USER_SORTS)[number] | `-${(typeof USER_SORTS)[number]}`;

export interface NewUser {
  orgId: string;
  name: string;
  email: string;
  password: string;
  role?: Role;
  platformAdmin?: boolean;
}

export interface UserChange {
  name?: string;
  email?: string;
  password?: string;
  role?: Role;
  platformAdmin?: boolean;
}

/**
 * Users: people in one organization with a role. Emails are unique across the
 * gateway, stored and compared as `normalizeEmail` makes them. Deleting a user keeps the row (keys
 * and usage still name it), ends their sessions and revokes their keys in the
 * same transaction, so both are dead at once. Who may call what is decided
 * by the caller (`people/permissions.ts`); this service keeps the rules that
 * hold for everyone: unique emails, and an organization never without an owner.
 *
 * @example
 * const users = new UserService(db, passwords);
 * const owner = await users.create({ orgId, name: 'Ada', email: 'ada@example.com', password, role: 'owner' });
 */
export class UserService {
  constructor(
    private readonly db: Database,
    private readonly passwords: Passwords,
    /**
     * Called after a write that changed keys (a delete revokes them), so the admission cache drops
     * what it holds.
     */
    private readonly keysChanged: () => void = () => {},
  ) {}

  async create(input: NewUser): Promise<UserRow> {
    const passwordHash = await this.passwords.hash(input.password);
    const [org] = await this.db
      .select({ id: organizations.id })
      .from(organizations)
      .where(eq(organizations.id, input.orgId));
    if (!org) throw new GatewayError('not_found', `Organization ${input.orgId} does not exist.`);
    try {
      const [row] = await this.db
        .insert(users)
        .values({
          id: newId('usr'),
          orgId: input.orgId,
          name: input.name,
          email: normalizeEmail(input.email),
          passwordHash,
          role: input.role ?? 'member',
          platformAdmin: input.platformAdmin ?? false,
        })
        .returning();
      return row!;
    } catch (error) {
      throw emailTaken(error, input.email);
    }
  }

  /** A live user, or 404. */
  async get(id: string): Promise<UserRow> {
    const [row] = await this.db
      .select()
      .from(users)
      .where(and(eq(users.id, id), isNull(users.deletedAt)));
    if (!row) throw new GatewayError('not_found', `User ${id} does not exist.`);
    return row;
  }

  /** The live user with this email (any spelling `normalizeEmail` folds together), if any. */
  async findByEmail(email: string): Promise<UserRow | undefined> {
    const [row] = await this.db
      .select()
      .from(users)
      .where(and(eq(users.email, normalizeEmail(email)), isNull(users.deletedAt)));
    return row;
  }

  /** One page of live users, of one organization or (null) of all. */
  async list(
    orgId: string | null,
    page: { offset: number; limit: number; sort: UserSort },
  ): Promise<{ rows: UserRow[]; total: number }> {
    const where = and(isNull(users.deletedAt), orgId === null ? undefined : eq(users.orgId, orgId));
    const [{ total } = { total: 0 }] = await this.db.select({ total: count() }).from(users).where(where);
    const rows = await this.db
      .select()
      .from(users)
      .where(where)
      .orderBy(...userOrder(page.sort))
      .limit(page.limit)
      .offset(page.offset);
    return { rows, total };
  }

  /** The organization's first owner (the one operator-made keys act as), if it has one. */
  async firstOwner(orgId: string): Promise<UserRow | undefined> {
    const [row] = await this.db
      .select()
      .from(users)
      .where(and(eq(users.orgId, orgId), eq(users.role, 'owner'), isNull(users.deletedAt)))
      .orderBy(asc(users.createdAt), asc(users.id))
      .limit(1);
    return row;
  }

  /**
   * Changes a user. A new password ends every session of the user but
   * `keepSession` (the one that changed it, when the user changed their own).
   */
  async update(id: string, change: UserChange, keepSession?: string): Promise<UserRow> {
    const passwordHash = change.password === undefined ? undefined : await this.passwords.hash(change.password);
    try {
      return await this.db.transaction(async (tx) => {
        const current = await lockedUser(tx, id);
        if (change.role !== undefined && change.role !== 'owner' && current.role === 'owner')
          await assertAnotherOwner(tx, current);
        const values = Object.fromEntries(
          Object.entries({
            name: change.name,
            email: change.email === undefined ? undefined : normalizeEmail(change.email),
            role: change.role,
            platformAdmin: change.platformAdmin,
            passwordHash,
          }).filter(([, value]) => value !== undefined),
        );
        if (Object.keys(values).length === 0) return current;
        const [row] = await tx.update(users).set(values).where(eq(users.id, id)).returning();
        if (passwordHash !== undefined) {
          const others = keepSession === undefined ? undefined : sql`${sessions.idHash} <> ${keepSession}`;
          await tx.delete(sessions).where(and(eq(sessions.userId, id), others));
        }
        return row!;
      });
    } catch (error) {
      throw change.email === undefined ? error : emailTaken(error, change.email);
    }
  }

  /**
   * Stores a password's hash at today's cost (after a sign-in with a hash made at a lower one);
   * sessions are untouched.
   */
  async rehash(id: string, password: string): Promise<void> {
    await this.db
      .update(users)
      .set({ passwordHash: await this.passwords.hash(password) })
      .where(eq(users.id, id));
  }

  /** Deletes a user: their sessions end and their keys are revoked, in one transaction. */
  async delete(id: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const current = await lockedUser(tx, id);
      if (current.role === 'owner') await assertAnotherOwner(tx, current);
      await tx
        .update(users)
        .set({ deletedAt: sql`now()` })
        .where(eq(users.id, id));
      await tx.delete(sessions).where(eq(sessions.userId, id));
      await tx
        .update(apiKeys)
        .set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, now())` })
        .where(eq(apiKeys.userId, id));
    });
    this.keysChanged();
  }
}

type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];

/**
 * The live user, with their organization's row locked: changes to an
 * organization's owners take turns, so two concurrent demotions cannot both
 * pass the last-owner check.
 */
async function lockedUser(tx: Transaction, id: string): Promise<UserRow> {
  const [found] = await tx
    .select({ orgId: users.orgId })
    .from(users)
    .where(and(eq(users.id, id), isNull(users.deletedAt)));
  if (!found) throw new GatewayError('not_found', `User ${id} does not exist.`);
  await tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, found.orgId)).for('update');
  const [row] = await tx
    .select()
    .from(users)
    .where(and(eq(users.id, id), isNull(users.deletedAt)));
  if (!row) throw new GatewayError('not_found', `User ${id} does not exist.`);
  return row;
}

async function assertAnotherOwner(tx: Transaction, owner: UserRow): Promise<void> {
  const [{ owners } = { owners: 0 }] = await tx
    .select({ owners: count() })
    .from(users)
    .where(and(eq(users.orgId, owner.orgId), eq(users.role, 'owner'), isNull(users.deletedAt)));
  if (owners <= 1)
    throw new GatewayError('conflict', "This is the organization's last owner: make another user an owner first.");
}

function userOrder(sort: UserSort): SQL[] {
  const descending = sort.startsWith('-');
  const column = { created_at: users.createdAt, name: users.name, email: users.email }[
    sort.replace(/^-/, '') as (typeof USER_SORTS)[number]
  ];
  const direction = descending ? desc : asc;
  // The id breaks ties, so pages never overlap or skip a row.
  return [direction(column), direction(users.id)];
}

/** A unique-index violation on the email becomes 409 `conflict`; anything else passes through. */
function emailTaken(error: unknown, email: string): unknown {
  if (!isUniqueViolation(error)) return error;
  return new GatewayError('conflict', 'A user with this email already exists.', {
    details: [{ field: 'email', message: `${email} is taken.` }],
  });
}
