import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { serve } from '@hono/node-server';
import { ADMIN_TOKEN, startAdmin } from '../admin/harness.js';
import { repoRoot } from '../../helpers/processes.js';

const root = repoRoot;
const bin = path.join(root, 'bin/tollgate.mjs');

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (undefined when it is not). */
  json: any;
}

/**
 * The admin routes on a real port, for the CLI to talk to over HTTP.
 *
 * @example
 * const gw = await startGateway();
 * const { json } = await gw.tollgate(['orgs', 'create', '--name', 'Acme', '--json']);
 */
export async function startGateway() {
  const admin = await startAdmin();
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const started = serve({ fetch: admin.app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(started));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    admin,
    tollgate: (args: string[], env: Record<string, string> = {}) =>
      tollgate(args, { TOLLGATE_URL: url, TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN, ...env }),
    async close() {
      await new Promise((resolve) => server.close(resolve));
      await admin.store.close();
    },
  };
}

/**
 * Runs `node bin/tollgate.mjs` with only the given TOLLGATE_* settings; `input`, when given, is
 * piped to its standard input (a pipe: never a terminal); `cwd` is where it runs (the repository
 * unless told).
 */
export function tollgate(args: string[], env: Record<string, string>, input?: string, cwd = root): Promise<Run> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('TOLLGATE_')));
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [bin, ...args],
      { cwd, env: { ...inherited, ...env }, timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        let json: unknown;
        try {
          json = JSON.parse(stdout);
        } catch {
          json = undefined;
        }
        resolve({ code, stdout, stderr, json });
      },
    );
    if (input !== undefined) {
      child.stdin!.on('error', () => {}); // the CLI may exit without reading it
      child.stdin!.end(input);
    }
  });
}
