import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RELEASE } from '../../../src/gateway/admission/redis-scripts.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { deleteRedisPrefix, redisAvailable, redisUrl, uniqueRedisPrefix } from '../../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy.js';
import { until } from '../../helpers/wait.js';

/**
 * A call's release (its hold turned into its charge, its limits settled) is
 * sent to Redis before the answer's last byte, and the answer does not wait
 * for Redis's reply: Redis runs one connection's commands in order, so the
 * replica's next admission, of this client or any other, comes after it.
 * Redis here is behind a proxy that holds its replies from the release on.
 */

const hasRedis = await redisAvailable();
/** Redis runs a script sent with EVALSHA, naming it by its SHA-1: the release's is on the wire. */
const RELEASE_SHA = createHash('sha1').update(RELEASE.lua).digest('hex');

describe.skipIf(!hasRedis)("a call's release in Redis", () => {
  let proxy: TcpProxy;
  let gateway: TestGateway;
  const prefix = uniqueRedisPrefix();

  beforeAll(async () => {
    proxy = await startTcpProxy(Number(new URL(redisUrl).port || 6379), new URL(redisUrl).hostname);
    gateway = await startTestGateway('pglite', {
      REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
      TOLLGATE_REDIS_PREFIX: prefix,
    });
  });

  afterAll(async () => {
    proxy?.resume();
    await gateway?.close();
    await proxy?.stop();
    await deleteRedisPrefix(prefix);
  });

  const chat = (secret: string) =>
    fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }),
      signal: AbortSignal.timeout(20_000),
    });

  it("answers without waiting for Redis's reply to the release, and the key's next request is admitted after it", async () => {
    const { secret } = await gateway.tenant({ key: { maxConcurrency: 1 } });
    // Warm: the key and its wallet known to the gateway, and the scripts to Redis (the first
    // release is sent whole).
    for (let i = 0; i < 2; i++) expect((await chat(secret)).status).toBe(200);
    await gateway.charged();

    proxy.holdRepliesAfter(RELEASE_SHA);
    const first = await chat(secret);
    expect(first.status).toBe(200);
    await first.text();
    // The release went out (its reply is what is held), and the answer came without it: the call
    // still counts as under way, which it does until Redis has replied (a draining gateway waits
    // for it). An answer that waited would have come only once the reply or the connection's
    // command timeout (1 s, src/shared/db/redis.ts) ended the release, with nothing left in flight.
    // Told by that count, not by the time taken: a busy machine is slow.
    expect(proxy.holding).toBe(true);
    expect(gateway.services.inFlight.size).toBe(1);

    // With a concurrency of one: the next admission is sent after the release on the same
    // connection, so Redis frees the slot before it looks, and it is admitted once the held replies
    // arrive.
    const second = chat(secret);
    await new Promise((resolve) => setTimeout(resolve, 200));
    proxy.resume();
    const response = await second;
    expect(response.status).toBe(200);
    await response.text();
    await until('the release replied to', () => gateway.services.inFlight.size === 0);
    await gateway.charged();
  });
});
