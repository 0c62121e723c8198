import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tollgate } from './harness.js';

/**
 * A run's log, its outputs and a stack's name are the tenant's text: the
 * CLI prints them without the control sequences they hold (clear screen,
 * window title, a C1 CSI, a carriage return hiding a line), keeping
 * newlines and tabs. A stand-in API on 127.0.0.1 answers what a hostile
 * run would have stored.
 */

const HOSTILE = 'step 1\tok\n\u001b[2J\u001b[H\u001b]0;pwned\u0007cleared\n\u009b31mred\rhidden\u0000\n';
const run = {
  object: 'run',
  id: 'run_x',
  stack: `evil\u001b[8m`,
  cluster_id: 'c_1',
  target: null,
  state: 'APPLIED',
  created_at: null,
  started_at: null,
  finished_at: null,
  exit_code: 0,
  failure: null,
  public_url: null,
  outputs: { note: `a\u001b]2;title\u0007b\u0085` },
};

let server: http.Server;
let url: string;

beforeAll(async () => {
  server = http.createServer((request, response) => {
    if (request.url === '/v1/runs/run_x/log')
      return void response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(HOSTILE);
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(run));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise((resolve) => server.close(resolve)));

/** No ESC, BEL, CR, NUL or C1 character: nothing a terminal obeys. */
// eslint-disable-next-line no-control-regex -- finding control characters is the check
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe('the CLI prints untrusted text without control sequences', () => {
  it('runs log: the text kept, the sequences gone, newlines and tabs kept', async () => {
    const { code, stdout } = await tollgate(['runs', 'log', 'run_x', '--url', url, '--api-key', 'tg_test'], {});
    expect(code).toBe(0);
    expect(stdout).not.toMatch(CONTROL);
    expect(stdout).toContain('step 1\tok\n');
    expect(stdout).toContain('cleared\n');
    expect(stdout).not.toContain('pwned');
  });

  it('runs get: the stack name and the outputs; with --json, C1 characters escaped', async () => {
    const text = await tollgate(['runs', 'get', 'run_x', '--url', url, '--api-key', 'tg_test'], {});
    expect(text.code).toBe(0);
    expect(text.stdout).not.toMatch(CONTROL);
    expect(text.stdout).toContain('evil');
    const json = await tollgate(['runs', 'get', 'run_x', '--url', url, '--api-key', 'tg_test', '--json'], {});
    expect(json.stdout).not.toMatch(CONTROL);
    expect(json.json.outputs.note).toBe('a\u001b]2;title\u0007b\u0085');
  });
});
