import { createHash, randomBytes } from 'node:crypto';
import { and, eq, lt, or, sql, type SQL } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { sessions, users } from '../../shared/db/schema.js';
import type { UserRow } from './users.js';

export interface SessionSettings {
  /** A session unused for this long ends. */
  idleMs: number;
  /** A session ends this long after sign-in, however much it is used. */
  absoluteMs: number;
}

/** A session's last use is written at most this often, so reading a page is not a write each time. */
const TOUCH_EVERY_MS = 60_000;

/**
 * Portal sign-in sessions, kept in the database (every replica sees them,
 * and a deleted user's end with the delete's transaction). The cookie carries
 * 32 random bytes; the store holds only their SHA-256, so a copy of the
 * database signs nobody in.
 *
 * @example
 * const { id } = await sessionStore.start(user.id);   // set as the cookie
 * const signedIn = await sessionStore.user(id);        // undefined once ended or expired
 */
export class SessionStore {
  constructor(
    private readonly db: Database,
    private readonly settings: SessionSettings,
  ) {}

  async start(userId: string): Promise<{ id: string; expiresAt: Date }> {
    const id = randomBytes(32).toString('base64url');
    const expiresAt = new Date(Date.now() + this.settings.absoluteMs);
    await this.db.insert(sessions).values({ idHash: sessionHash(id), userId, expiresAt });
    // Sessions that ran out are removed as new ones start: the table holds live ones and a few
    // stale.
    await this.db
      .delete(sessions)
      .where(or(lt(sessions.expiresAt, sql`now()`), lt(sessions.lastSeenAt, idleCutoff(this.settings.idleMs))))
      .catch(() => {});
    return { id, expiresAt };
  }

  /** The live user of a live session, and the session's hash; undefined when there is none. */
  async user(id: string): Promise<{ user: UserRow; sessionHash: string } | undefined> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(id)) return undefined;
    const hash = sessionHash(id);
    const [row] = await this.db
      .select({ user: users, lastSeenAt: sessions.lastSeenAt })
      .from(sessions)
      .innerJoin(users, eq(users.id, sessions.userId))
      .where(
        and(
          eq(sessions.idHash, hash),
          sql`${sessions.expiresAt} > now()`,
          sql`${sessions.lastSeenAt} > ${idleCutoff(this.settings.idleMs)}`,
          sql`${users.deletedAt} is null`,
        ),
      );
    if (!row) return undefined;
    if (Date.now() - row.lastSeenAt.getTime() > TOUCH_EVERY_MS) {
      await this.db
        .update(sessions)
        .set({ lastSeenAt: sql`now()` })
        .where(eq(sessions.idHash, hash));
    }
    return { user: row.user, sessionHash: hash };
  }

  async end(id: string): Promise<void> {
    await this.db.delete(sessions).where(eq(sessions.idHash, sessionHash(id)));
  }
}

export function sessionHash(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}

function idleCutoff(idleMs: number): SQL {
  return sql`now() - make_interval(secs => ${idleMs / 1000})`;
}
