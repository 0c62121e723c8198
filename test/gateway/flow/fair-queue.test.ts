import { describe, expect, it } from 'vitest';
import { FairQueue } from '../../../src/gateway/flow/fair-queue.js';

interface Entry {
  orgId: string;
  band: number;
  n: number;
}

const entry = (orgId: string, band: number, n: number): Entry => ({ orgId, band, n });

describe('FairQueue', () => {
  it('serves the highest band first, whoever waited longer', () => {
    const queue = new FairQueue<Entry>();
    queue.push(entry('a', 3, 1));
    queue.push(entry('b', 1, 2));
    queue.push(entry('c', 0, 3));
    expect([queue.pop()?.n, queue.pop()?.n, queue.pop()?.n, queue.pop()]).toEqual([3, 2, 1, undefined]);
  });

  it('within a band, the organization served the fewest tokens goes next, however many requests the other queued', () => {
    const queue = new FairQueue<Entry>();
    for (let i = 0; i < 100; i++) queue.push(entry('flood', 1, i));
    queue.push(entry('light', 1, 1000));
    // The flood was served before the light tenant came.
    queue.serve('flood', 1, 5_000);
    expect(queue.pop()?.orgId).toBe('light');
    expect(queue.waitingOf('flood')).toBe(100);
  });

  it('keeps two backlogged organizations within one request of each other in tokens served', () => {
    const queue = new FairQueue<Entry>();
    const served = { long: 0, short: 0 };
    const cost = { long: 900, short: 60 };
    for (let round = 0; round < 2_000; round++) {
      for (const org of ['long', 'short'] as const) if (queue.waitingOf(org) < 4) queue.push(entry(org, 1, round));
      const next = queue.pop()!;
      const org = next.orgId as 'long' | 'short';
      served[org] += cost[org];
      queue.serve(org, 1, cost[org]);
      expect(Math.abs(served.long - served.short)).toBeLessThanOrEqual(cost.long);
    }
    expect(served.long).toBeGreaterThan(100_000);
  });

  it('gives a newcomer no credit for the time it was idle: it starts at the floor, not at zero', () => {
    const queue = new FairQueue<Entry>();
    queue.push(entry('busy', 1, 0));
    queue.pop();
    queue.serve('busy', 1, 10_000);
    for (let i = 1; i < 4; i++) queue.push(entry('busy', 1, i));
    queue.pop();
    // A newcomer is lifted to the floor (the busy org's counter when last dispatched), so the two
    // alternate.
    queue.push(entry('new', 1, 99));
    queue.push(entry('new', 1, 100));
    const order = [queue.pop()!.orgId];
    queue.serve(order[0]!, 1, 100);
    order.push(queue.pop()!.orgId);
    expect(order.sort()).toEqual(['busy', 'new']);
  });

  it('removes a waiting entry once, and forgets idle organizations when pruned', () => {
    const queue = new FairQueue<Entry>();
    const leaving = entry('a', 2, 1);
    queue.push(leaving);
    queue.push(entry('a', 2, 2));
    expect(queue.remove(leaving)).toBe(true);
    expect(queue.remove(leaving)).toBe(false);
    expect(queue.size).toBe(1);
    expect(queue.pop()?.n).toBe(2);
    queue.prune();
    expect(queue.servedOf('a', 2)).toBeNull();
    expect(queue.waitingByBand().every((band) => band.size === 0)).toBe(true);
  });
});
