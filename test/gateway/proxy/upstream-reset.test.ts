import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpstreamTarget } from '../../../src/gateway/engines/types.js';
import { CallAbort } from '../../../src/gateway/proxy/call-abort.js';
import { EngineAgents } from '../../../src/gateway/proxy/engine-agents.js';
import { postUpstream } from '../../../src/gateway/proxy/upstream.js';

/**
 * llama.cpp's server answers a stream with keep-alive and then closes the connection: the next
 * request the gateway sends on it is reset unread (issue 67's flood on two llama.cpp servers: half
 * of the requests, each one taking its replica out of rotation). The engine here resets every
 * request that comes on a connection it already answered on; the call is sent again, once, on a
 * connection of its own, and answered.
 */
describe('an engine call on a kept-alive connection the engine has closed', () => {
  let server: http.Server;
  let target: UpstreamTarget;
  const answeredOn = new WeakSet<Socket>();
  let requests = 0;
  let failed = 0;

  beforeAll(async () => {
    server = http.createServer((request, response) => {
      requests++;
      if (answeredOn.has(request.socket)) {
        request.socket.resetAndDestroy();
        return;
      }
      answeredOn.add(request.socket);
      request.resume();
      request.on('end', () => response.end(JSON.stringify({ ok: true })));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    target = {
      baseUrl: `http://127.0.0.1:${port}/v1`,
      servedModelName: 'm',
      headers: {},
      replicaId: 'r1',
      release: () => {},
      markFailed: () => failed++,
    };
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const agents = new EngineAgents();
  const call = () =>
    postUpstream({
      target,
      path: '/chat/completions',
      body: { model: 'm', messages: [] },
      clientModel: 'm',
      abort: new CallAbort(),
      agents,
    });

  it('sends it again on a new connection, and it is answered', async () => {
    for (let i = 0; i < 3; i++) {
      const answer = await call();
      expect(JSON.parse((await answer.bytes()).toString())).toEqual({ ok: true });
    }
    // The first on a new connection; the second reset on the kept one and sent again on one of its
    // own (closed after it); the third on a new one, the pool being empty.
    expect(requests).toBe(4);
    expect(failed).toBe(0);
  });
});
