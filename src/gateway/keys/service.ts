import { and, eq, gt, isNull, or, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { newId } from '../../shared/db/ids.js';
import { apiKeys, organizations, projects, users } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { generateSecret, hashSecret, isWellFormedSecret, secretHint } from './secrets.js';
import {
  type AuthenticatedKey,
  type CallerKeyRow,
  callerKeyByHash,
  type KeyLimits,
  type KeyRow,
  type KeySettings,
  unauthorized,
  verifiedKey,
} from './caller.js';
import type { KeyExpiry } from './bounds.js';

export {
  type AuthenticatedKey,
  type CallerKeyRow,
  callerKeyByHash,
  type KeyLimits,
  type KeyRow,
  type KeySettings,
  type KeyStatus,
  keyStatus,
  verifiedKey,
} from './caller.js';

/** The default of TOLLGATE_KEYS_PER_ACCOUNT: live (not revoked, not expired) keys one account holds. */
export const DEFAULT_KEYS_PER_ACCOUNT = 5;

const DEFAULT_LIMITS: KeyLimits = {
  requestsPerMinute: 60,
  maxConcurrency: 10,
  tokensPerMinute: null,
  monthlyTokens: null,
};

export function expiryDate(expiry: KeyExpiry, from = new Date()): Date | null {
  const at = new Date(from);
  switch (expiry) {
    case 'never':
      return null;
    case '7d':
    case '30d':
    case '90d':
      at.setUTCDate(at.getUTCDate() + Number.parseInt(expiry, 10));
      return at;
    case '1y':
      at.setUTCFullYear(at.getUTCFullYear() + 1);
      return at;
  }
}

export interface CreateKeyInput extends Partial<KeySettings> {
  orgId: string;
  /** The user the key acts as (of the same organization). */
  userId?: string | null;
  name: string;
  expiry?: KeyExpiry;
  projectId?: string | null;
}

/**
 * Key lifecycle. The secret exists only in the return value of `create`.
 *
 * @example
 * const keys = new KeyService(db, 'sk-gw-');
 * const { key, secret } = await keys.create({ orgId, name: 'ci', expiry: '30d' });
 * const caller = await keys.authenticate(`Bearer ${secret}`);
 */
export class KeyService {
  constructor(
    private readonly db: Database,
    private readonly prefix: string,
    /**
     * Finds a key by its secret's hash; the request path passes its in-process cache
     * (`catalog/request-path-cache.ts`).
     */
    private readonly keyByHash: (hash: string) => Promise<CallerKeyRow | undefined> = (hash) =>
      callerKeyByHash(db, hash),
    /**
     * Called after every write, so the request path's cache drops what it holds
     * (`catalog/request-path-cache.ts`).
     */
    private readonly changed: () => void = () => {},
    /**
     * TOLLGATE_KEYS_PER_ACCOUNT: live keys a user holds; keys the operator
     * makes for no user are the organization's service account, counted together.
     */
    private readonly keysPerAccount: number = DEFAULT_KEYS_PER_ACCOUNT,
  ) {}

  async create(input: CreateKeyInput): Promise<{ key: KeyRow; secret: string }> {
    const secret = generateSecret(this.prefix);
    const now = new Date();
    const key = await this.db.transaction(async (tx) => {
      // Locking the organization row serialises key creation per organization,
      // so two concurrent creates cannot both pass the per-account check.
      const [org] = await tx
        .select({ id: organizations.id })
        .from(organizations)
        .where(eq(organizations.id, input.orgId))
        .for('update');
      if (!org) throw new GatewayError('not_found', `Organization ${input.orgId} does not exist.`, { status: 404 });
      if (input.projectId) await assertProjectOf(tx, input.orgId, input.projectId);
      if (input.userId) {
        const [user] = await tx
          .select({ id: users.id })
          .from(users)
          .where(and(eq(users.id, input.userId), eq(users.orgId, input.orgId), isNull(users.deletedAt)));
        if (!user)
          throw new GatewayError('not_found', `User ${input.userId} is not a user of organization ${input.orgId}.`, {
            status: 404,
          });
      }
      const account = input.userId ? eq(apiKeys.userId, input.userId) : isNull(apiKeys.userId);
      const [{ live } = { live: 0 }] = await tx
        .select({ live: sql<number>`count(*)::int` })
        .from(apiKeys)
        .where(
          and(
            eq(apiKeys.orgId, input.orgId),
            account,
            isNull(apiKeys.revokedAt),
            or(isNull(apiKeys.expiresAt), gt(apiKeys.expiresAt, now)),
          ),
        );
      if (live >= this.keysPerAccount) {
        const holder = input.userId
          ? `User ${input.userId}`
          : `The organization's service account (keys made for no user)`;
        throw new GatewayError(
          'key_limit_reached',
          `${holder} already holds ${live} live keys, the most one account may (TOLLGATE_KEYS_PER_ACCOUNT=${this.keysPerAccount}); revoke one first.`,
        );
      }
      const [row] = await tx
        .insert(apiKeys)
        .values({
          id: newId('key'),
          orgId: input.orgId,
          userId: input.userId ?? null,
          projectId: input.projectId ?? null,
          name: input.name,
          secretHash: hashSecret(secret),
          secretHint: secretHint(secret, this.prefix),
          expiresAt: expiryDate(input.expiry ?? 'never', now),
          ...DEFAULT_LIMITS,
          ...definedOnly(input, [
            'requestsPerMinute',
            'maxConcurrency',
            'tokensPerMinute',
            'monthlyTokens',
            'storeRequestData',
            'responseCache',
            'band',
          ]),
        })
        .returning();
      return row!;
    });
    this.changed();
    return { key, secret };
  }

  list(orgId: string): Promise<KeyRow[]> {
    return this.db.select().from(apiKeys).where(eq(apiKeys.orgId, orgId)).orderBy(apiKeys.createdAt);
  }

  async get(id: string): Promise<KeyRow> {
    const [row] = await this.db.select().from(apiKeys).where(eq(apiKeys.id, id));
    if (!row) throw new GatewayError('not_found', `API key ${id} does not exist.`, { status: 404 });
    return row;
  }

  /**
   * Edits limits and toggles; every replica sees them within the request-path cache's bound
   * (`catalog/request-path-cache.ts`).
   */
  async update(id: string, changes: Partial<KeySettings> & { name?: string }): Promise<KeyRow> {
    const values = definedOnly(changes, [
      'name',
      'requestsPerMinute',
      'maxConcurrency',
      'tokensPerMinute',
      'monthlyTokens',
      'storeRequestData',
      'responseCache',
      'band',
    ]);
    if (Object.keys(values).length === 0) return this.get(id);
    const [row] = await this.db.update(apiKeys).set(values).where(eq(apiKeys.id, id)).returning();
    this.changed();
    if (!row) throw new GatewayError('not_found', `API key ${id} does not exist.`, { status: 404 });
    return row;
  }

  /** Revokes at once; revoking twice keeps the first time. */
  async revoke(id: string): Promise<KeyRow> {
    const [row] = await this.db
      .update(apiKeys)
      .set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, now())` })
      .where(eq(apiKeys.id, id))
      .returning();
    this.changed();
    if (!row) throw new GatewayError('not_found', `API key ${id} does not exist.`, { status: 404 });
    return row;
  }

  /**
   * Checks an `Authorization` header value. A lookup by the secret's hash (in the admission cache
   * on the request path), then a constant-time comparison. Every failure is 401 `unauthorized`.
   */
  async authenticate(authorization: string | undefined): Promise<AuthenticatedKey> {
    const hash = this.secretHashOf(authorization);
    return verifiedKey(await this.keyByHash(hash), hash);
  }

  /**
   * The hash to look a key up by; 401 for a header that cannot hold one of our keys (no store read
   * needed).
   */
  secretHashOf(authorization: string | undefined): string {
    const secret = bearerToken(authorization);
    if (!isWellFormedSecret(secret, this.prefix)) throw unauthorized('Invalid API key.');
    return hashSecret(secret);
  }
}

function bearerToken(authorization: string | undefined): string {
  if (authorization === undefined || authorization.trim() === '') {
    throw unauthorized('Missing API key. Send it as "Authorization: Bearer <key>".');
  }
  const match = /^Bearer[ \t]+(\S*)[ \t]*$/i.exec(authorization.trim());
  if (!match) throw unauthorized('Only the Bearer scheme is accepted: "Authorization: Bearer <key>".');
  if (!match[1]) throw unauthorized('Missing API key. Send it as "Authorization: Bearer <key>".');
  return match[1];
}

type Tx = Parameters<Parameters<Database['transaction']>[0]>[0];

/** Throws unless the project belongs to the organization. */
async function assertProjectOf(db: Database | Tx, orgId: string, projectId: string): Promise<void> {
  const [project] = await db
    .select({ orgId: projects.orgId })
    .from(projects)
    .where(and(eq(projects.id, projectId), isNull(projects.deletedAt)));
  if (!project || project.orgId !== orgId) {
    throw new GatewayError('project_not_found', 'The project does not exist in this organization.');
  }
}

function definedOnly<T extends object, K extends keyof T>(source: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
  return out;
}
