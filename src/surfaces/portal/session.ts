import type { Context } from 'hono';
import type { z } from 'zod';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { toDetails } from '../../shared/http/validate.js';
import type { PortalDeps } from './deps.js';
import { sessionCookieOf } from '../api/session-cookie.js';
import type { Viewer } from './layout.js';

export type PortalContext = Context<GatewayEnv>;

/**
 * The signed-in session's checks, which every page of the portal is given beside its `PortalDeps`:
 * who is signed in, and the session's form token.
 */
export interface PortalSession {
  /** The signed-in user, or 401 (which the portal answers with the sign-in page). */
  signedIn(c: PortalContext): Promise<SignedInActor>;
  /** Who a page is for: the name it shows and the form token its forms carry. */
  viewerOf(actor: SignedInActor): Viewer;
  /** Throws unless `token` is the session's form token. */
  checkToken(actor: SignedInActor, token: unknown): void;
}

/** What a page says after a change redirected to it (`?done=`): fixed texts, never the query's. */
export const DONE_NOTICES: Record<string, string> = {
  saved: "Saved: the new limits and options apply from the key's next request.",
  deleted: 'Deleted: requests with that key are refused from now on.',
  'project-added': 'Project added.',
  'project-deleted': 'Project deleted: X-Project-ID no longer names it.',
  'user-added': 'User added: they can sign in now.',
  'role-saved': 'Role saved.',
  'user-deleted': 'User deleted: their sessions ended and their keys stopped working.',
};

/**
 * The signed-in user of the session cookie (its name for the request's scheme, `https`), or
 * undefined.
 */
export async function sessionActor(
  deps: Pick<PortalDeps, 'sessions'>,
  c: PortalContext,
  https: boolean,
): Promise<SignedInActor | undefined> {
  const id = sessionCookieOf(c, https);
  if (!id) return undefined;
  const stored = await deps.sessions.user(id);
  if (!stored) return undefined;
  const { user } = stored;
  return {
    userId: user.id,
    orgId: user.orgId,
    role: user.role,
    platformAdmin: user.platformAdmin,
    user,
    sessionHash: stored.sessionHash,
  };
}

/** The signed-in user, or 401 (which the portal answers with the sign-in page). */
export async function signedIn(
  deps: Pick<PortalDeps, 'sessions'>,
  c: PortalContext,
  https: boolean,
): Promise<SignedInActor> {
  const actor = await sessionActor(deps, c, https);
  if (!actor) throw new GatewayError('unauthorized', 'Sign in first.');
  return actor;
}

/** Every problem of a form, in one sentence per field. */
export function problems(error: z.ZodError): string {
  return toDetails(error.issues)
    .map((detail) => `${detail.field.replaceAll('_', ' ')}: ${formWords(detail.message)}`)
    .join(' ');
}

/**
 * Zod's words for a JSON value of the wrong type, as they read on a form: a field left empty, or
 * not a number.
 */
function formWords(message: string): string {
  if (/^Invalid input: expected \w+, received undefined$/.test(message)) return 'Required.';
  if (message === 'Invalid input: expected number, received string') return 'Must be a whole number.';
  return message;
}
