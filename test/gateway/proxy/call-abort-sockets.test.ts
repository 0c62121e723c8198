import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpstreamTarget } from '../../../src/gateway/engines/types.js';
import { CallAbort } from '../../../src/gateway/proxy/call-abort.js';
import { postUpstream } from '../../../src/gateway/proxy/upstream.js';
import { EngineAgents } from '../../../src/gateway/proxy/engine-agents.js';
import { until } from '../../helpers/wait.js';

/**
 * A `CallAbort` destroys its call's engine request. A call's connection goes back to the keep-alive
 * pool when its answer ends, and the next call may take it: an abort that comes late must not cut
 * that next call.
 */
describe('an engine call aborted over a kept-alive connection', () => {
  let server: http.Server;
  let target: UpstreamTarget;
  const connections = new Set<number>();
  // The second call's answer waits for this, so that the first call's late abort comes while it is
  // open.
  let releaseSecond: () => void = () => {};
  // How many slow calls the engine has read whole (and holds).
  let slowHeld = 0;

  beforeAll(async () => {
    server = http.createServer((request, response) => {
      connections.add(request.socket.remotePort ?? 0);
      request.resume();
      request.on('end', () => {
        const answer = () => response.end(JSON.stringify({ ok: true }));
        if (request.url !== '/v1/slow') return answer();
        releaseSecond = answer;
        slowHeld += 1;
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    target = {
      baseUrl: `http://127.0.0.1:${port}/v1`,
      servedModelName: 'm',
      headers: {},
      replicaId: 'r1',
      release: () => {},
      markFailed: () => {},
    };
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const agents = new EngineAgents();
  const call = (path: string, abort: CallAbort) =>
    postUpstream({ target, path, body: { model: 'm', messages: [] }, clientModel: 'm', abort, agents });

  it('leaves the next call on the same connection alone', async () => {
    const first = new CallAbort();
    const answered = await call('/fast', first);
    expect(JSON.parse((await answered.bytes()).toString())).toEqual({ ok: true });

    const held = slowHeld;
    const second = call('/slow', new CallAbort());
    await until('the engine holds the second call', () => slowHeld > held);
    expect(connections.size).toBe(1);
    first.abort(new DOMException('upstream timeout', 'TimeoutError'));
    releaseSecond();
    const response = await second;
    expect(JSON.parse((await response.bytes()).toString())).toEqual({ ok: true });
  });

  it('cuts its own call while the answer is awaited', async () => {
    const abort = new CallAbort();
    const held = slowHeld;
    const pending = call('/slow', abort).catch((error: unknown) => error);
    await until('the engine holds the call', () => slowHeld > held);
    abort.abort(new DOMException('the client closed the connection', 'AbortError'));
    expect(await pending).toMatchObject({ name: 'AbortError' });
  });
});
