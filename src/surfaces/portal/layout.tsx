import { raw } from 'hono/html';
import type { Child } from 'hono/jsx';
import { assetUrl } from './assets.js';

const NAV = [
  { id: 'overview', href: '/portal/overview', label: 'Overview' },
  { id: 'keys', href: '/portal/keys', label: 'API keys' },
  { id: 'usage', href: '/portal/usage', label: 'Usage' },
  { id: 'wallet', href: '/portal/wallet', label: 'Wallet' },
  { id: 'batches', href: '/portal/batches', label: 'Batches' },
  { id: 'costs', href: '/portal/costs', label: 'Costs' },
  { id: 'models', href: '/portal/models', label: 'Models' },
  { id: 'stacks', href: '/portal/stacks', label: 'Stacks' },
  { id: 'clusters', href: '/portal/clusters', label: 'Clusters' },
  { id: 'projects', href: '/portal/projects', label: 'Projects' },
  { id: 'users', href: '/portal/users', label: 'Users' },
  { id: 'operator', href: '/portal/operator/orgs', label: 'Operator' },
] as const;

/** The signed-in user as the pages show them, with the form token every form carries. */
export interface Viewer {
  name: string;
  csrf: string;
  /** A platform admin: the navigation leads to the operator pages too. */
  operator?: boolean;
}

export interface PageFrame {
  title: string;
  /** The signed-in user's name and the form token, or null on the sign-in page. */
  user: Viewer | null;
  /** Which navigation entry is this page. */
  current?: (typeof NAV)[number]['id'];
  children: Child;
}

/**
 * The document around every portal page, error pages included: the doctype
 * (without it a browser lays the page out in quirks mode), the character set,
 * the viewport, the title, the icon (else a browser asks for /favicon.ico on
 * every first page) and our stylesheet.
 */
export function Document({ title, children }: { title: string; children: Child }) {
  return (
    <>
      {raw('<!DOCTYPE html>')}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <title>{`${title} · Tollgate`}</title>
          <link rel="icon" href={assetUrl('svg')} type="image/svg+xml" />
          <link rel="stylesheet" href={assetUrl('css')} />
          <script src={assetUrl('js')} defer></script>
        </head>
        {children}
      </html>
    </>
  );
}

/**
 * Every portal page: its title, the navigation, a sign-out button, and our stylesheet and script
 * (files, never inline).
 */
export function Page({ title, user, current, children }: PageFrame) {
  return (
    <Document title={title}>
      <body>
        <header>
          <a class="brand" href="/portal">
            Tollgate
          </a>
          {user && (
            <nav aria-label="Portal">
              {NAV.filter((item) => item.id !== 'operator' || user.operator).map((item) => (
                <a href={item.href} aria-current={item.id === current ? 'page' : undefined}>
                  {item.label}
                </a>
              ))}
            </nav>
          )}
          {user && (
            <form method="post" action="/portal/sign-out">
              <input type="hidden" name="_csrf" value={user.csrf} />
              <span class="muted">{user.name} </span>
              <button type="submit" class="secondary">
                Sign out
              </button>
            </form>
          )}
        </header>
        <main>{children}</main>
      </body>
    </Document>
  );
}

/** A message above a page's content: an error the user can fix, or a change that was made. */
export function Notice({ kind, children }: { kind: 'error' | 'ok'; children: Child }) {
  return (
    <p class={`notice ${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </p>
  );
}

/**
 * A UTC time as `YYYY-MM-DD HH:MM` (`:SS` with `seconds`), which wraps in a narrow column between
 * the day and the time only; a dash for none.
 */
export function When({ at, seconds }: { at: Date | null; seconds?: boolean }) {
  if (!at) return <>—</>;
  const iso = at.toISOString();
  return (
    <>
      <span class="nowrap">{iso.slice(0, 10)}</span> {iso.slice(11, seconds ? 19 : 16)}
    </>
  );
}
