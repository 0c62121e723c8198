import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { defineScript, type Script } from '../../../src/gateway/admission/redis-keys.js';
import { openRedis, redisReady } from '../../../src/shared/db/redis.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { deleteRedisPrefix, redisAvailable, redisUrl, uniqueRedisPrefix } from '../../helpers/services.js';

/**
 * The gate's scripts (`defineScript`, `admission/redis-keys.ts`) on the gateway's own connection
 * (`openRedis`, with auto-pipelining): a call made `alone` (no other billed call under way) while
 * no other script awaits its reply and nothing is queued is written at once (at one connection, a
 * request's admission does not wait for the turn of the event loop to end); every other call shares
 * auto-pipelining's next write. Either way, Redis runs them in the order they were called: the
 * release a call sends before its answer's last byte comes before the next admission.
 */

const hasRedis = await redisAvailable();

describe.skipIf(!hasRedis)("the gate's scripts on one connection", () => {
  const prefix = uniqueRedisPrefix();
  const list = `${prefix}order`;
  let redis: Redis;
  /** Appends its argument to the list and answers the list's length. */
  let append: Script;

  beforeAll(async () => {
    redis = openRedis(redisUrl, createLogger('error')) as Redis;
    append = defineScript(
      redis,
      {
        name: 'testAppendInOrder',
        numberOfKeys: 1,
        lua: "return redis.call('RPUSH', KEYS[1], ARGV[1])",
      },
      { count: 0 },
    );
    await redisReady(redis);
  });

  afterAll(async () => {
    await deleteRedisPrefix(prefix);
    await redis.quit();
  });

  const order = () => redis.lrange(list, 0, -1);

  it('writes a call alone at once, and queues the others', async () => {
    await redis.del(list);
    const first = append.alone(list, 'a');
    expect(redis.autoPipelineQueueSize).toBe(0);
    // Made alone, but a script awaits its reply: it waits for auto-pipelining's write, a
    // `setImmediate` away.
    const second = append.alone(list, 'b');
    const third = append(list, 'c');
    expect(redis.autoPipelineQueueSize).toBe(2);
    expect(await Promise.all([first, second, third])).toEqual([1, 2, 3]);
    // Nothing awaits a reply now: a call alone is written at once again, one among others is not.
    const fourth = append.alone(list, 'd');
    expect(redis.autoPipelineQueueSize).toBe(0);
    await fourth;
    const fifth = append(list, 'e');
    expect(redis.autoPipelineQueueSize).toBe(1);
    await fifth;
    expect(await order()).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('is never written ahead of a command queued before it', async () => {
    await redis.del(list);
    // A command of another part of the gateway (the response cache, say), queued for the next
    // write.
    const queued = redis.rpush(list, 'queued');
    expect(redis.autoPipelineQueueSize).toBe(1);
    const script = append.alone(list, 'script');
    expect(redis.autoPipelineQueueSize).toBe(2);
    await Promise.all([queued, script]);
    expect(await order()).toEqual(['queued', 'script']);
  });

  it('keeps the calling order over a random mix of calls alone and together', async () => {
    await redis.del(list);
    const called: string[] = [];
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 200; round++) {
      const together = 1 + Math.floor(random() * 4);
      const replies: Array<Promise<unknown>> = [];
      for (let i = 0; i < together; i++) {
        const value = `${round}.${i}`;
        called.push(value);
        replies.push(random() < 0.5 ? append.alone(list, value) : append(list, value));
      }
      // Sometimes the next round is called before this one's replies are in.
      if (random() < 0.6) await Promise.all(replies);
    }
    await redis.ping();
    expect(await order()).toEqual(called);
  });
});
