import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Refuses new connections and cuts the open ones: the target looks unreachable. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  /**
   * From the next client message that contains `marker` on, the target's
   * replies on that connection are dropped: the target did the work, and the
   * client never hears of it (a stalled network). Once, for the first match.
   */
  swallowRepliesAfter(marker: string): void;
  /**
   * From the next client message that contains `marker` on, the target's
   * replies on that connection wait until `resume` (the client's messages
   * still reach the target, in order): the target did the work, and the
   * client hears of it late. Once, for the first match.
   */
  holdRepliesAfter(marker: string): void;
  /**
   * The next client message that contains `marker` never reaches the target:
   * that connection is reset there (a database restarted under a
   * connection). Once, for the first match.
   */
  cutAt(marker: string): void;
  /** Whether replies are being held (`holdRepliesAfter` matched, and no `resume` since). */
  readonly holding: boolean;
  /**
   * The target's replies wait, on every connection (new ones too), until
   * `resume`: connections are accepted and requests delivered, but nothing
   * answers (a hung service). On `resume` the held replies arrive in order.
   */
  hang(): void;
  resume(): void;
  /**
   * From now on, counts the client messages (on every connection) that
   * contain `marker`: a test sees what the client has sent, e.g. one more
   * heartbeat. Answers the count so far.
   */
  count(marker: string): () => number;
  /**
   * From now on, counts the bytes the target sends back (on every connection): what the client was
   * given to read.
   */
  replyBytes(): () => number;
}

/**
 * A TCP proxy on 127.0.0.1 the test controls, in front of a real service
 * (PostgreSQL here), to make it unreachable and bring it back.
 */
export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  let port = 0;
  let swallowMarker: string | null = null;
  let holdMarker: string | null = null;
  let cutMarker: string | null = null;
  /** The upstreams whose replies `holdRepliesAfter` holds. */
  const held = new Set<net.Socket>();
  let hung = false;
  const upstreams = new Set<net.Socket>();
  const counters: Array<{ marker: string; n: number }> = [];
  const replyCounters: Array<{ n: number }> = [];
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = net.createServer((client) => {
        const upstream = net.connect(targetPort, targetHost);
        upstreams.add(upstream);
        upstream.on('close', () => upstreams.delete(upstream));
        if (hung) upstream.pause();
        for (const socket of [client, upstream]) {
          sockets.add(socket);
          socket.on('close', () => sockets.delete(socket));
          socket.on('error', () => {
            client.destroy();
            upstream.destroy();
          });
        }
        let swallowing = false;
        client.on('data', (chunk: Buffer) => {
          for (const counter of counters) if (chunk.includes(counter.marker)) counter.n += 1;
          if (swallowMarker !== null && chunk.includes(swallowMarker)) {
            swallowMarker = null;
            swallowing = true;
          }
          if (cutMarker !== null && chunk.includes(cutMarker)) {
            cutMarker = null;
            client.resetAndDestroy();
            upstream.destroy();
            return;
          }
          if (holdMarker !== null && chunk.includes(holdMarker)) {
            holdMarker = null;
            held.add(upstream);
            upstream.pause();
          }
          upstream.write(chunk);
        });
        upstream.on('data', (chunk: Buffer) => {
          for (const counter of replyCounters) counter.n += chunk.length;
          if (!swallowing) client.write(chunk);
        });
        client.on('end', () => upstream.end());
        upstream.on('end', () => client.end());
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        port = (server!.address() as net.AddressInfo).port;
        resolve();
      });
    });
  await listen();
  return {
    get port() {
      return port;
    },
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      server = null;
    },
    start: listen,
    swallowRepliesAfter(marker) {
      swallowMarker = marker;
    },
    cutAt(marker) {
      cutMarker = marker;
    },
    holdRepliesAfter(marker) {
      holdMarker = marker;
    },
    get holding() {
      return held.size > 0;
    },
    hang() {
      hung = true;
      for (const upstream of upstreams) upstream.pause();
    },
    resume() {
      hung = false;
      held.clear();
      for (const upstream of upstreams) upstream.resume();
    },
    count(marker) {
      const counter = { marker, n: 0 };
      counters.push(counter);
      return () => counter.n;
    },
    replyBytes() {
      const counter = { n: 0 };
      replyCounters.push(counter);
      return () => counter.n;
    },
  };
}
