import type { Role } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';

/** Who is acting: a user signed in, or the user an API key acts as. */
export interface Actor {
  userId: string;
  orgId: string;
  role: Role;
  platformAdmin: boolean;
}

/** The user an action is about. */
export interface Subject {
  id: string;
  orgId: string;
  role: Role;
}

/**
 * Who may do what with users. The rules, as docs/people-and-projects.md states them:
 *
 * - Platform admins may do anything to anyone.
 * - Everyone sees the users of their own organization, and no other's.
 * - Owners add, edit and delete any user of their organization, and give any role.
 * - Admins add, edit and delete members and admins, and give those two roles; they cannot touch
 *   owners.
 * - Members edit only themselves (name, email, password; never a role) and add nobody.
 * - Anyone may delete themselves.
 * - Nobody removes the organization's last owner (by a role change or a delete): the service checks
 *   that.
 *
 * Each check throws 404 for a user the actor may not see (their existence is not told) and 403
 * otherwise.
 */
export function assertCanSee(actor: Actor, subject: { orgId: string; id: string }): void {
  if (!actor.platformAdmin && actor.orgId !== subject.orgId)
    throw new GatewayError('not_found', `User ${subject.id} does not exist.`);
}

export function assertCanCreate(actor: Actor, orgId: string, role: Role): void {
  if (actor.platformAdmin) return;
  if (actor.orgId !== orgId) throw new GatewayError('forbidden', 'You can add users only to your own organization.');
  if (actor.role === 'member') throw new GatewayError('forbidden', 'Only owners and admins add users.');
  if (role === 'owner' && actor.role !== 'owner') throw new GatewayError('forbidden', 'Only owners make owners.');
}

export function assertCanUpdate(actor: Actor, subject: Subject, change: { role?: Role }): void {
  assertCanSee(actor, subject);
  if (actor.platformAdmin) return;
  const self = actor.userId === subject.id;
  if (actor.role === 'member') {
    if (!self) throw new GatewayError('forbidden', 'Members edit only themselves.');
    if (change.role !== undefined && change.role !== subject.role)
      throw new GatewayError('forbidden', 'Members cannot change roles.');
    return;
  }
  if (actor.role === 'admin') {
    if (subject.role === 'owner') throw new GatewayError('forbidden', 'Admins cannot edit owners.');
    if (change.role === 'owner') throw new GatewayError('forbidden', 'Only owners make owners.');
  }
}

export function assertCanDelete(actor: Actor, subject: Subject): void {
  assertCanSee(actor, subject);
  if (actor.platformAdmin || actor.userId === subject.id) return;
  if (actor.role === 'member') throw new GatewayError('forbidden', 'Only owners and admins delete users.');
  if (actor.role === 'admin' && subject.role === 'owner')
    throw new GatewayError('forbidden', 'Admins cannot delete owners.');
}

/**
 * Owners and admins (and platform admins) manage every project of their organization; members their
 * own.
 */
export function canManageProject(actor: Actor, project: { orgId: string; createdBy: string | null }): boolean {
  if (actor.platformAdmin) return true;
  if (actor.orgId !== project.orgId) return false;
  return actor.role !== 'member' || project.createdBy === actor.userId;
}

/**
 * Public projects are seen by every user of their organization; private ones by their creator,
 * owners and admins.
 */
export function canSeeProject(
  actor: Actor,
  project: { orgId: string; createdBy: string | null; visibility: string },
): boolean {
  if (actor.platformAdmin) return true;
  if (actor.orgId !== project.orgId) return false;
  return project.visibility === 'public' || canManageProject(actor, project);
}

/**
 * Budgets (of a key or a project) are set by the organization's owners (and platform admins);
 * whoever sees one sees its budget.
 */
export function canSetBudget(actor: Actor, orgId: string): boolean {
  return actor.platformAdmin || (actor.orgId === orgId && actor.role === 'owner');
}
