import type { Config } from '../../config/types.js';
import type { Passwords } from '../../platform/people/passwords.js';
import type { SessionStore } from '../../platform/people/sessions.js';
import type { UserService } from '../../platform/people/users.js';
import type { WindowCounter } from '../../shared/db/window-counter.js';
import type { Logger } from '../../shared/http/log.js';

/**
 * What sign-in and sign-out (`/auth`) read of the services; the portal's sign-in form has them too.
 * `createAuthRoutes(deps, clientOf)` takes this; the app passes its whole `Services`, which has all
 * of it.
 */
export interface AuthDeps {
  config: Config;
  log: Logger;
  users: UserService;
  passwords: Passwords;
  sessions: SessionStore;
  /** The failed sign-ins counted, and the generic API's hourly limit per address. */
  windowCounter: WindowCounter;
}
