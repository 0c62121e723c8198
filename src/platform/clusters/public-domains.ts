import { and, eq, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { clusters } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';

// The rules a cluster's public domain keeps (its runs' URLs are `https://<stack>.<public domain>`):
// clear of the gateway's own host names, and of every other live cluster's domain.

/**
 * A public domain may not be one of the gateway's own host names, nor above one (a stack's URL
 * would take it), nor below one (a stack's answers could set cookies for the gateway's host, and
 * its pages would pass for the gateway's).
 */
export function assertNotReserved(reservedHosts: string[], domain: string): void {
  const reserved = reservedHosts.find((host) => nested(host, domain));
  if (reserved) {
    throw new GatewayError('conflict', `The public domain ${domain} is taken; choose another.`, {
      details: [{ field: 'public_domain', message: `It would reach the gateway's own host ${reserved}.` }],
    });
  }
}

/** Whether one DNS name is the other, or under it. */
function nested(a: string, b: string): boolean {
  return a === b || a.endsWith(`.${b}`) || b.endsWith(`.${a}`);
}

/**
 * Refuses a public domain that is another live cluster's, or above or below one: a stack under the
 * one could set cookies for the other's hosts (or serve a name the other's owner chose). The
 * transaction waits for any other cluster being created (a lock held to its end), so two nested
 * domains created at once cannot both pass; the unique index still catches an exact clash.
 */
export async function assertNotNested(tx: Pick<Database, 'execute' | 'select'>, domain: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext('tollgate:clusters:public_domain'))`);
  const [clash] = await tx
    .select({ id: clusters.id })
    .from(clusters)
    .where(
      and(
        eq(clusters.state, 'running'),
        sql`(${clusters.publicDomain} = ${domain} or right(${domain}, length(${clusters.publicDomain}) + 1) = '.' || ${clusters.publicDomain} or right(${clusters.publicDomain}, ${domain.length + 1}) = ${`.${domain}`})`,
      ),
    )
    .limit(1);
  // Said as for an exact clash, whoever holds it: the answer tells nothing of another organization.
  if (clash)
    throw new GatewayError('conflict', `The public domain ${domain} is taken; choose another.`, {
      details: [{ field: 'public_domain', message: `The public domain ${domain} is taken; choose another.` }],
    });
}
