import { and, eq, gt, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { conversations, conversationTotals } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { ConversationObject } from './store.js';

// What the conversations' database store says of its rows: which is live, how one is shown, the
// counts kept per organization, and the refusal when a bound is reached.

type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];

export function live(orgId: string, id: string) {
  return and(eq(conversations.id, id), eq(conversations.orgId, orgId), gt(conversations.expiresAt, sql`now()`));
}

export function objectOf(row: typeof conversations.$inferSelect): ConversationObject {
  return {
    id: row.id,
    object: 'conversation',
    created_at: Math.floor(row.createdAt.getTime() / 1000),
    metadata: JSON.parse(row.metadata) as Record<string, string>,
  };
}

/** Takes deleted conversations off their organizations' counts, one update per organization. */
export async function uncount(tx: Transaction, deleted: Array<{ orgId: string }>): Promise<void> {
  const byOrg = new Map<string, number>();
  for (const row of deleted) byOrg.set(row.orgId, (byOrg.get(row.orgId) ?? 0) + 1);
  for (const [orgId, count] of byOrg) {
    await tx
      .update(conversationTotals)
      .set({ conversations: sql`greatest(${conversationTotals.conversations} - ${count}, 0)` })
      .where(eq(conversationTotals.orgId, orgId));
  }
}

/** A bound reached: a 400 naming the setting, as the stored responses' bounds are. */
export function refusal(what: string, setting: string): GatewayError {
  return new GatewayError('invalid_request', `${what}, the most the gateway keeps (${setting}).`, {
    details: [{ field: 'conversation', message: `more than ${setting.split('=')[0]} allows` }],
  });
}
