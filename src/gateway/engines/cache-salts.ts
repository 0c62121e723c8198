import { createHash, createHmac } from 'node:crypto';

/** Organizations whose salt is kept: past this, the oldest is computed again when next asked for. */
const SALTS_KEPT = 10_000;

/**
 * Each organization's cache salt, the `cache_salt` a vLLM engine is sent with every request of that
 * organization (docs/engines.md, "Tenants in a shared engine"): an HMAC-SHA256 of the
 * organization's id under a key derived from the operator token, written base64url (43 characters,
 * 256 bits, as vLLM asks of a salt). Every gateway replica shares the operator token, so each sends
 * an organization the same salt and its cache stays whole across replicas; the salt says nothing of
 * the organization, and nobody without the operator token can compute another's. Computed once per
 * organization and kept (at most SALTS_KEPT).
 *
 * @example
 * const salts = new CacheSalts(adminToken);
 * salts.of(orgId); // 'f3Q…' (43 characters)
 */
export class CacheSalts {
  private readonly key: Buffer;
  private readonly kept = new Map<string, string>();

  constructor(operatorToken: string) {
    // A key of its own, so the salt is no other use of the operator token (the portal's form tokens
    // derive theirs alike).
    this.key = createHash('sha256').update(`tollgate-cache-salt:${operatorToken}`).digest();
  }

  of(orgId: string): string {
    let salt = this.kept.get(orgId);
    if (salt === undefined) {
      salt = createHmac('sha256', this.key).update(orgId).digest('base64url');
      if (this.kept.size >= SALTS_KEPT) this.kept.delete(this.kept.keys().next().value!);
      this.kept.set(orgId, salt);
    }
    return salt;
  }
}
