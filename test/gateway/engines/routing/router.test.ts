import { describe, expect, it, vi } from 'vitest';
import type { ReplicaLoad } from '../../../../src/gateway/engines/load.js';
import { PrefixIndex } from '../../../../src/gateway/engines/routing/prefix-index.js';
import { prefixBlockHashes, promptBlockHashes } from '../../../../src/gateway/engines/routing/prompt-blocks.js';
import type { RoutingSettings } from '../../../../src/config/index.js';
import { type LoadSource, ReplicaRouter } from '../../../../src/gateway/engines/routing/router.js';

const SETTINGS: RoutingSettings = {
  policy: 'scored',
  scrapeMs: 250,
  queueWeight: 1,
  kvWeight: 1,
  prefixWeight: 2,
  sessionWeight: 0.5,
  prefixBlockChars: 64,
  prefixEntries: 50_000,
  prefixTtlMs: 600_000,
};

function load(partial: Partial<ReplicaLoad> = {}): ReplicaLoad {
  return {
    waiting: 0,
    running: 0,
    kvCacheUsage: 0,
    prefixHitRate: null,
    prefixQueries: 0,
    prefixHits: 0,
    kvBlocks: null,
    scrapedAt: Date.now(),
    ...partial,
  };
}

/** Loads set by the test; sends counted as the scraper counts them. */
function loadsOf(loads: Record<string, ReplicaLoad | null>): LoadSource & { sent: Record<string, number> } {
  const sent: Record<string, number> = {};
  return {
    sent,
    loadOf: (id) => loads[id] ?? null,
    sentSinceScrape: (id) => sent[id] ?? 0,
    noteSent: (id) => void (sent[id] = (sent[id] ?? 0) + 1),
  };
}

const candidates = (...ids: string[]) => ids.map((id) => ({ id, inFlight: 0 }));
const systemPrompt = 'You are a careful assistant of tenant A. '.repeat(40);
const chat = (question: string, user?: string) => ({
  body: {
    messages: [
      { role: 'system', content: systemPrompt },
      { role: 'user', content: question },
    ],
    ...(user ? { user } : {}),
  },
});

describe('the scoring router', () => {
  it('lets prefix affinity yield to load: a burst sharing one system prompt splits across two replicas', () => {
    // Llama.cpp-like: metrics read (nothing waiting at the last scrape), the burst arrives before
    // the next scrape.
    const loads = loadsOf({ 'm/0': load(), 'm/1': load() });
    const router = new ReplicaRouter({ ...SETTINGS, prefixWeight: 4 }, loads);
    const inFlight: Record<string, number> = { 'm/0': 0, 'm/1': 0 };
    for (let i = 0; i < 10; i++) {
      const chosen = router.choose(
        Object.entries(inFlight).map(([id, n]) => ({ id, inFlight: n })),
        chat(`Long question ${i}`),
      );
      inFlight[chosen.replicaId]! += 1;
    }
    // Before the slack: 10/0.
    expect(Math.max(...Object.values(inFlight))).toBeLessThanOrEqual(7);
    expect(Math.min(...Object.values(inFlight))).toBeGreaterThanOrEqual(3);
  });

  it("keeps affinity through the noise of a saturated fleet: the slack grows to a share of the least busy's in flight", () => {
    // Issue 67: dozens in flight on every replica; a fixed slack of 2 gave the prefix to no one (76
    // % hits, not 93 %).
    const loads = loadsOf({ 'm/0': load(), 'm/1': load() });
    const router = new ReplicaRouter(
      { ...SETTINGS, prefixWeight: 4, affinitySlack: 2, affinitySlackShare: 0.25 },
      loads,
    );
    const holder = router.choose(candidates('m/0', 'm/1'), chat('first')).replicaId;
    const other = holder === 'm/0' ? 'm/1' : 'm/0';
    const inFlight = (held: number, rest: number) => [
      { id: holder, inFlight: held },
      { id: other, inFlight: rest },
    ];
    // 10 more than the least busy's 40 is within a quarter of it: the prefix wins.
    expect(router.choose(inFlight(50, 40), chat('second')).replicaId).toBe(holder);
    // 11 more is not: a hot prefix spills over, and the replica it spills to holds it from then on.
    const spilled = router.choose(inFlight(51, 40), chat('third'));
    expect(spilled.replicaId).toBe(other);
    expect(spilled.scores[holder]!.prefix).toBe(0);
    // At a light load the fixed slack decides, as before.
    expect(router.choose(inFlight(5, 2), chat('fourth')).scores[holder]!.prefix).toBe(0);
    // With no share, the fixed slack alone (the behaviour before).
    const fixed = new ReplicaRouter({ ...SETTINGS, prefixWeight: 4, affinitySlack: 2, affinitySlackShare: 0 }, loads);
    const fixedHolder = fixed.choose(candidates('m/0', 'm/1'), chat('first')).replicaId;
    const fixedOther = fixedHolder === 'm/0' ? 'm/1' : 'm/0';
    const decision = fixed.choose(
      [
        { id: fixedHolder, inFlight: 45 },
        { id: fixedOther, inFlight: 40 },
      ],
      chat('second'),
    );
    expect(decision.replicaId).toBe(fixedOther);
  });

  it('sends a prompt to the replica that served its prefix, and says why', () => {
    const loads = loadsOf({ 'm/0': load(), 'm/1': load(), 'm/2': load() });
    const router = new ReplicaRouter(SETTINGS, loads);
    const first = router.choose(candidates('m/0', 'm/1', 'm/2'), chat('first question'));
    for (let i = 0; i < 5; i++) {
      const next = router.choose(candidates('m/0', 'm/1', 'm/2'), chat(`another question ${i}`));
      expect(next.replicaId).toBe(first.replicaId);
      expect(next.policy).toBe('scored');
      expect(next.prefixBlocks.matched).toBeGreaterThan(0.9 * next.prefixBlocks.total - 2);
      expect(next.scores[first.replicaId]!.prefix).toBeGreaterThan(0.9);
    }
  });

  it("keys its prefix index by organization, as a salted engine caches: another organization's equal prompt finds none of it, unless the engine shares its cache", () => {
    const ofOrg = (organization: string, question: string) => ({ ...chat(question), organization });
    const router = new ReplicaRouter(SETTINGS, loadsOf({ 'm/0': load(), 'm/1': load() }));
    const first = router.choose(candidates('m/0', 'm/1'), ofOrg('org-a', 'first'));
    expect(router.choose(candidates('m/0', 'm/1'), ofOrg('org-a', 'second')).prefixBlocks.matched).toBeGreaterThan(10);
    const other = router.choose(candidates('m/0', 'm/1'), ofOrg('org-b', 'first'));
    expect(other.prefixBlocks.matched).toBe(0);
    expect(other.scores[first.replicaId]!.prefix).toBe(0);
    const shared = new ReplicaRouter(SETTINGS, loadsOf({ 'm/0': load(), 'm/1': load() }), 'shared');
    shared.choose(candidates('m/0', 'm/1'), ofOrg('org-a', 'first'));
    expect(shared.choose(candidates('m/0', 'm/1'), ofOrg('org-b', 'first')).prefixBlocks.matched).toBeGreaterThan(10);
    const body = chat('q').body;
    expect(promptBlockHashes(body, 64, 'org-a')[0]).not.toBe(promptBlockHashes(body, 64)[0]);
    expect(promptBlockHashes(body, 64, 'org-a')).toHaveLength(promptBlockHashes(body, 64).length);
  });

  it('without a prefix, prefers the shortest queue (waiting plus sent since the scrape), then the emptiest KV cache', () => {
    const loads = loadsOf({
      'm/0': load({ waiting: 5, kvCacheUsage: 0.5 }),
      'm/1': load({ waiting: 1, kvCacheUsage: 0.9 }),
      'm/2': load({ waiting: 1, kvCacheUsage: 0.2 }),
    });
    const router = new ReplicaRouter(SETTINGS, loads);
    const decision = router.choose(candidates('m/0', 'm/1', 'm/2'), {
      body: { messages: [{ role: 'user', content: 'short' }] },
    });
    expect(decision.replicaId).toBe('m/2');
    expect(decision.scores['m/0']!.queue).toBe(0);
    expect(loads.sent['m/2']).toBe(1);
    // What this gateway sent since the scrape counts as queued: four more to m/2 make m/1 the
    // better one.
    for (let i = 0; i < 4; i++) loads.noteSent('m/2');
    expect(router.choose(candidates('m/0', 'm/1', 'm/2')).replicaId).toBe('m/1');
  });

  it('takes turns among replicas that tie on score and in flight, as when every scrape comes between two requests', () => {
    // A quiet gateway: each request's scrape zeroes what was sent since the last one, so every
    // request sees three equal replicas. Taking the first of a tie sent them all to one replica (a
    // fleet test's 10 / 5 / 0 of 15).
    const loads = loadsOf({ 'm/0': load(), 'm/1': load(), 'm/2': load() });
    const router = new ReplicaRouter(SETTINGS, loads);
    const chosen: string[] = [];
    for (let i = 0; i < 6; i++) {
      for (const id of Object.keys(loads.sent)) delete loads.sent[id];
      chosen.push(router.choose(candidates('m/0', 'm/1', 'm/2')).replicaId);
    }
    expect(chosen).toEqual(['m/0', 'm/1', 'm/2', 'm/0', 'm/1', 'm/2']);
    // The fewest in flight still goes first among equal scores.
    const busy = [
      { id: 'm/0', inFlight: 1 },
      { id: 'm/1', inFlight: 0 },
      { id: 'm/2', inFlight: 1 },
    ];
    for (const id of Object.keys(loads.sent)) delete loads.sent[id];
    expect(router.choose(busy).replicaId).toBe('m/1');
  });

  it('leaves the replica holding a short shared prefix when its queue and KV cache are full', () => {
    const loads: Record<string, ReplicaLoad | null> = { 'm/0': load(), 'm/1': load() };
    const router = new ReplicaRouter(SETTINGS, loadsOf(loads));
    const shared = 'x'.repeat(64 * 3);
    const first = router.choose(candidates('m/0', 'm/1'), { body: { prompt: shared + 'a'.repeat(64 * 5) } }).replicaId;
    const other = first === 'm/0' ? 'm/1' : 'm/0';
    loads[first] = load({ waiting: 20, kvCacheUsage: 0.95 });
    const decision = router.choose(candidates('m/0', 'm/1'), { body: { prompt: shared + 'b'.repeat(64 * 5) } });
    expect(decision.scores[first]!.prefix).toBe(0.375);
    expect(decision.replicaId).toBe(other);
  });

  it('falls back to least-loaded (fewest in flight) when a replica has no metrics', () => {
    const router = new ReplicaRouter(SETTINGS, loadsOf({ 'm/0': load(), 'm/1': null }));
    const decision = router.choose([
      { id: 'm/0', inFlight: 3 },
      { id: 'm/1', inFlight: 1 },
    ]);
    expect(decision).toMatchObject({ replicaId: 'm/1', policy: 'least-loaded-fallback', scores: {} });
    expect(new ReplicaRouter(SETTINGS, null).choose(candidates('m/0')).policy).toBe('least-loaded-fallback');
  });

  it('keeps a session on its replica when loads are equal and prompts share nothing', () => {
    const router = new ReplicaRouter(
      { ...SETTINGS, prefixWeight: 0, queueWeight: 0 },
      loadsOf({ 'm/0': load(), 'm/1': load(), 'm/2': load() }),
    );
    const first = router.choose(candidates('m/0', 'm/1', 'm/2'), { body: { messages: [], user: 'alice' } }).replicaId;
    for (let i = 0; i < 4; i++)
      expect(router.choose(candidates('m/0', 'm/1', 'm/2'), { body: { messages: [], user: 'alice' } }).replicaId).toBe(
        first,
      );
    expect(
      router.choose(candidates('m/0', 'm/1', 'm/2'), { body: { messages: [] }, session: 'bob-header' }).scores[first]!
        .session,
    ).toBe(0);
  });

  it('round-robin takes turns and least-loaded takes the fewest in flight, whatever the metrics', () => {
    const loads = loadsOf({ 'm/0': load({ waiting: 100 }), 'm/1': load() });
    const rr = new ReplicaRouter({ ...SETTINGS, policy: 'round-robin' }, loads);
    expect([0, 1, 2, 3].map(() => rr.choose(candidates('m/0', 'm/1')).replicaId)).toEqual(['m/0', 'm/1', 'm/0', 'm/1']);
    const ll = new ReplicaRouter({ ...SETTINGS, policy: 'least-loaded' }, loads);
    expect(
      ll.choose([
        { id: 'm/0', inFlight: 0 },
        { id: 'm/1', inFlight: 2 },
      ]).replicaId,
    ).toBe('m/0');
  });
});

describe('the prefix index', () => {
  it('counts only leading blocks a replica holds', () => {
    const index = new PrefixIndex({ maxEntriesPerReplica: 100, ttlMs: 60_000 });
    const a = prefixBlockHashes('a'.repeat(64 * 4), 64);
    const b = prefixBlockHashes('a'.repeat(64 * 2) + 'b'.repeat(64 * 2), 64);
    index.record(a, 'm/0', null);
    expect(index.matches(b).get('m/0')).toBe(2);
    expect(index.matches(a).get('m/0')).toBe(4);
    expect(index.matches(prefixBlockHashes('b'.repeat(64 * 4), 64)).size).toBe(0);
  });

  it("is bounded per replica by the setting and by the replica's own KV blocks, forgetting the least recently used", () => {
    const index = new PrefixIndex({ maxEntriesPerReplica: 50, ttlMs: 60_000 });
    const old = prefixBlockHashes('o'.repeat(64 * 30), 64);
    index.record(old, 'm/0', null);
    index.record(prefixBlockHashes('n'.repeat(64 * 30), 64), 'm/0', null);
    expect(index.size).toBe(50);
    expect(index.matches(old).get('m/0')).toBeUndefined();
    // A replica reporting 10 KV blocks keeps 10 hashes: the most recent ones.
    const small = prefixBlockHashes('s'.repeat(64 * 30), 64);
    index.record(small, 'm/1', 10);
    expect(index.size).toBe(60);
    index.retain(new Set(['m/1']));
    expect(index.size).toBe(10);
  });

  it('forgets hashes after their expiry', async () => {
    const index = new PrefixIndex({ maxEntriesPerReplica: 100, ttlMs: 30 });
    const hashes = prefixBlockHashes('e'.repeat(64 * 3), 64);
    index.record(hashes, 'm/0', null);
    expect(index.matches(hashes).get('m/0')).toBe(3);
    await vi.waitFor(() => expect(index.matches(hashes).size).toBe(0), { timeout: 2000, interval: 20 });
  });

  it('hashes chat messages as the one string a chat template makes of them, in chained blocks', () => {
    const body = {
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: [{ type: 'text', text: 'Hi' }, { type: 'image_url' }] },
      ],
    };
    const rendered = '<system>\nBe brief.\n<user>\nHi\n';
    for (const blockChars of [1, 4, 7, 64])
      expect(promptBlockHashes(body, blockChars)).toEqual(prefixBlockHashes(rendered, blockChars));
    expect(promptBlockHashes(body, 4)).toHaveLength(Math.floor(rendered.length / 4));
    expect(promptBlockHashes({ prompt: 'plain' }, 2)).toEqual(prefixBlockHashes('plain', 2));
    expect(promptBlockHashes({ input: 'embed me' }, 2)).toEqual(prefixBlockHashes('embed me', 2));
    expect(promptBlockHashes({}, 2)).toEqual([]);
    const [first] = prefixBlockHashes('x'.repeat(64), 64);
    const [, second] = prefixBlockHashes('y'.repeat(64) + 'x'.repeat(64), 64);
    expect(second).not.toBe(first);
    // One number per block, exact in a double: a key the prefix index compares by value.
    expect(Number.isSafeInteger(first)).toBe(true);
  });
});
