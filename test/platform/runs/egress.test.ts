import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EgressProxy, startEgressProxy } from '../../../src/platform/runs/sandbox/egress.js';

/**
 * The per-run egress proxy: CONNECT to a node of the run's cluster on an
 * allowed port, or to an allowed host, goes through; anything else is
 * refused, and every decision reaches the run's log.
 */
describe('the egress proxy of a run', () => {
  let folder: string;
  let socket: string;
  let proxy: EgressProxy;
  let echo: net.Server;
  let echoPort: number;
  const decisions: string[] = [];

  beforeAll(async () => {
    folder = await mkdtemp(path.join(os.tmpdir(), 'tollgate-egress-'));
    socket = path.join(folder, 'egress.sock');
    echo = net.createServer((connection) => connection.pipe(connection));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    echoPort = (echo.address() as net.AddressInfo).port;
    proxy = await startEgressProxy(
      socket,
      {
        nodes: [
          { address: '127.0.0.1', ports: [echoPort] },
          { address: '169.254.169.254', ports: [80] },
        ],
        hosts: [{ host: 'localhost', port: echoPort }],
      },
      (line) => decisions.push(line),
    );
  });
  afterAll(async () => {
    await proxy?.close();
    await new Promise((resolve) => echo?.close(resolve));
    await rm(folder, { recursive: true, force: true });
  });

  /**
   * Sends a request head through the proxy's socket; answers its status line and, when tunnelled,
   * what the echo sent back.
   */
  function through(head: string, payload = 'ping'): Promise<{ status: string; echoed: string }> {
    return new Promise((resolve, reject) => {
      const client = net.connect(socket);
      let received = '';
      client.on('data', (chunk) => {
        received += chunk.toString('latin1');
        const end = received.indexOf('\r\n\r\n');
        if (end === -1) return;
        const status = received.slice(0, received.indexOf('\r\n'));
        if (!status.includes(' 200 ')) return resolve({ status, echoed: '' });
        if (received.length === end + 4) client.write(payload);
        if (received.slice(end + 4) === payload) {
          client.end();
          resolve({ status, echoed: payload });
        }
      });
      client.on('error', reject);
      client.write(head);
    });
  }

  it('tunnels to a node of the cluster on an allowed port', async () => {
    expect(await through(`CONNECT 127.0.0.1:${echoPort} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)).toEqual({
      status: 'HTTP/1.1 200 Connection Established',
      echoed: 'ping',
    });
    expect(decisions).toContain(`egress: connected to 127.0.0.1:${echoPort}`);
  });

  it('refuses a node on another port, an address that is not a node, and every link-local address even when named as a node', async () => {
    expect((await through('CONNECT 127.0.0.1:5432 HTTP/1.1\r\n\r\n')).status).toBe('HTTP/1.1 403 Forbidden');
    expect((await through(`CONNECT 10.1.2.3:${echoPort} HTTP/1.1\r\n\r\n`)).status).toBe('HTTP/1.1 403 Forbidden');
    expect((await through('CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n')).status).toBe('HTTP/1.1 403 Forbidden');
    expect(decisions).toContain(
      'egress: refused 127.0.0.1:5432 (neither a node of this cluster on an allowed port nor an allowed host)',
    );
    expect(decisions).toContain(
      'egress: refused 169.254.169.254:80 (neither a node of this cluster on an allowed port nor an allowed host)',
    );
  });

  it("refuses an allowed host name that resolves to this host's loopback (a registry name pointed at the gateway)", async () => {
    expect((await through(`CONNECT localhost:${echoPort} HTTP/1.1\r\n\r\n`)).status).toBe('HTTP/1.1 403 Forbidden');
  });

  it('answers anything but CONNECT with 405: only HTTPS goes out', async () => {
    expect((await through(`GET http://127.0.0.1:${echoPort}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)).status).toBe(
      'HTTP/1.1 405 Method Not Allowed',
    );
    expect((await through('CONNECT nonsense HTTP/1.1\r\n\r\n')).status).toBe('HTTP/1.1 405 Method Not Allowed');
  });
});
