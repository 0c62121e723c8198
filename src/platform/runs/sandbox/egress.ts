import { lookup } from 'node:dns/promises';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Where one run may connect: its cluster's nodes, each on its own ports, and the operator's allowed
 * `host:port` names.
 */
export interface EgressPolicy {
  nodes: Array<{ address: string; ports: number[] }>;
  hosts: Array<{ host: string; port: number }>;
}

/** A per-run egress proxy, listening on a unix socket that only that run's sandbox sees. */
export interface EgressProxy {
  close(): Promise<void>;
}

const MAX_HEAD_BYTES = 8 * 1024;

/**
 * Serves HTTP `CONNECT host:port` on `socketPath` for one run: a target is
 * let through only when the policy names it, and never to a link-local
 * address (the cloud metadata service at 169.254.169.254 among them) nor,
 * for allowed host names, to a loopback address the name resolves to.
 * Everything else answers 403. Each decision is told to `onDecision` (the
 * run's log shows what its run tried to reach). Inside the sandbox a relay
 * on 127.0.0.1 forwards to this socket, and HTTPS_PROXY points at it.
 *
 * @example
 * const proxy = await startEgressProxy('/runs/x/ctl/egress.sock', { nodes: [{ address: '10.0.0.5', ports: [22] }], hosts: [] }, (line) => log.write(line));
 * await proxy.close();
 */
export async function startEgressProxy(
  socketPath: string,
  policy: EgressPolicy,
  onDecision: (line: string) => void,
): Promise<EgressProxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) {
        if (head.length > MAX_HEAD_BYTES) client.end('HTTP/1.1 431 Request Header Fields Too Large\r\n\r\n');
        return;
      }
      client.off('data', onData);
      client.pause();
      void connectFor(
        client,
        head.subarray(0, end).toString('latin1'),
        head.subarray(end + 4),
        policy,
        onDecision,
        sockets,
      );
    };
    client.on('data', onData);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  return {
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

async function connectFor(
  client: net.Socket,
  head: string,
  rest: Buffer,
  policy: EgressPolicy,
  onDecision: (line: string) => void,
  sockets: Set<net.Socket>,
): Promise<void> {
  const match = /^CONNECT ([^\s]+) HTTP\/1\.[01]$/i.exec(head.split('\r\n')[0] ?? '');
  const target = match ? parseTarget(match[1]!) : null;
  if (!target) {
    onDecision('egress: refused a request that is not CONNECT host:port (only HTTPS goes out, through CONNECT)');
    client.end('HTTP/1.1 405 Method Not Allowed\r\n\r\n');
    return;
  }
  const named = `${target.host}:${target.port}`;
  const address = await allowedAddress(target, policy).catch(() => null);
  if (!address) {
    onDecision(`egress: refused ${named} (neither a node of this cluster on an allowed port nor an allowed host)`);
    client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
    return;
  }
  const upstream = net.connect({ host: address, port: target.port });
  sockets.add(upstream);
  upstream.on('close', () => sockets.delete(upstream));
  upstream.once('connect', () => {
    onDecision(`egress: connected to ${named}`);
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (rest.length > 0) upstream.write(rest);
    client.pipe(upstream).pipe(client);
    client.resume();
  });
  upstream.on('error', () => {
    if (!client.writableEnded && upstream.connecting) {
      onDecision(`egress: ${named} did not accept the connection`);
      client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
    } else client.destroy();
  });
  client.on('close', () => upstream.destroy());
}

function parseTarget(authority: string): { host: string; port: number } | null {
  const bracketed = /^\[([^\]]+)\]:(\d{1,5})$/.exec(authority);
  const plain = /^([^:]+):(\d{1,5})$/.exec(authority);
  const [host, port] = bracketed
    ? [bracketed[1]!, Number(bracketed[2])]
    : plain
      ? [plain[1]!, Number(plain[2])]
      : [null, 0];
  return host && port >= 1 && port <= 65535 ? { host: host.toLowerCase(), port } : null;
}

/** The address to connect to for an allowed target, or null. */
async function allowedAddress(target: { host: string; port: number }, policy: EgressPolicy): Promise<string | null> {
  const node = policy.nodes.some(
    (allowed) => allowed.address.toLowerCase() === target.host && allowed.ports.includes(target.port),
  );
  const host = policy.hosts.some((allowed) => allowed.host === target.host && allowed.port === target.port);
  if (!node && !host) return null;
  const { address } = await lookup(target.host);
  const range = rangeOf(address);
  if (range === 'linkLocal' || range === 'unspecified') return null;
  // A registry name that resolves to this host's loopback is refused; an operator's node on
  // loopback is the operator's choice.
  if (!node && range === 'loopback' && !ipaddr.isValid(target.host)) return null;
  return address;
}

function rangeOf(address: string): string {
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  return parsed.range();
}
