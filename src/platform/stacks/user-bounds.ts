import { and, count, eq, sql } from 'drizzle-orm';
import { stacks, users } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { Database } from '../../shared/db/client.js';

type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];

/**
 * 409 when one more package of `bytes` would take the user past the stacks
 * (TOLLGATE_STACKS_PER_USER) or the bytes (TOLLGATE_STACKS_BYTES_PER_USER)
 * one user keeps. The user's row is locked, so two uploads at once (on any
 * replica) are counted one after the other.
 */
export async function refuseOverUserBounds(
  tx: Transaction,
  bounds: { stacksPerUser: number; stacksBytesPerUser: number },
  userId: string,
  bytes: number,
): Promise<void> {
  await tx.select({ id: users.id }).from(users).where(eq(users.id, userId)).for('update');
  const [kept = { stacks: 0, bytes: 0 }] = await tx
    .select({ stacks: count(), bytes: sql<string | number>`coalesce(sum(${stacks.packageBytes}), 0)` })
    .from(stacks)
    .where(and(eq(stacks.ownerId, userId), eq(stacks.visibility, 'private')));
  const { stacksPerUser, stacksBytesPerUser } = bounds;
  const refuse = (message: string, detail: string) =>
    new GatewayError('conflict', `${message}; delete one before adding another.`, {
      details: [{ field: 'package', message: detail }],
    });
  if (kept.stacks >= stacksPerUser)
    throw refuse(
      `You keep ${kept.stacks} stacks, the most one user may (TOLLGATE_STACKS_PER_USER)`,
      `At most ${stacksPerUser} stacks per user.`,
    );
  if (Number(kept.bytes) + bytes > stacksBytesPerUser)
    throw refuse(
      `Your stacks hold ${Number(kept.bytes)} bytes and this one ${bytes}: one user keeps at most ${stacksBytesPerUser} (TOLLGATE_STACKS_BYTES_PER_USER)`,
      `At most ${stacksBytesPerUser} bytes of stacks per user.`,
    );
}
