import { afterEach, describe, expect, it } from 'vitest';
import { FLOW_TEST_SETTINGS } from './flow-settings.js';
import { enginePriority } from '../../../src/gateway/flow/bands.js';
import { FlowControl } from '../../../src/gateway/flow/flow-control.js';
import type { FlowPass, FlowRequest } from '../../../src/gateway/flow/flow-types.js';

/**
 * Issue 80: a flood whose streams end together holds every slot, and nothing frees between its
 * waves. An organization below its share gets in without waiting for a stream to end: sent ahead of
 * the flood where the engines preempt by priority, into a slot the flood leaves free where they
 * cannot.
 */

function request(orgId: string, weight = 1): FlowRequest {
  return { modelId: 'm', orgId, band: 'default', weight, promptTokens: 10, completionBound: 100 };
}

const made: FlowControl[] = [];
function flowControl(slots: number, byPriority: boolean, shareHeadroom = 1) {
  const flow = new FlowControl(
    { ...FLOW_TEST_SETTINGS, shareHeadroom },
    { freeSlots: () => slots, schedulesByPriority: () => byPriority },
  );
  made.push(flow);
  return flow;
}

afterEach(() => {
  for (const flow of made.splice(0)) flow.close();
});

/** Enters `count` requests of `orgId`: the passes given at once, and the waits left pending. */
function enterMany(flow: FlowControl, orgId: string, count: number) {
  const passes: FlowPass[] = [];
  const waits: Array<Promise<FlowPass>> = [];
  for (let i = 0; i < count; i++) {
    const entered = flow.enter(request(orgId));
    if (entered instanceof Promise) {
      entered.catch(() => {});
      waits.push(entered);
    } else passes.push(entered);
  }
  return { passes, waits };
}

const DEFAULT = 1;

describe('an organization below its share, beside a flood that holds every slot', () => {
  it('is sent ahead of the flood at once where the engines preempt by priority', () => {
    const flow = flowControl(16, true);
    const a = enterMany(flow, 'a', 40);
    // By priority nothing is held back: A takes every slot, the rest of its flood waits.
    expect(a.passes).toHaveLength(16);
    expect(a.passes.every((pass) => pass.priority === enginePriority(DEFAULT, false))).toBe(true);
    const b = flow.enter(request('b'));
    expect(b).not.toBeInstanceOf(Promise);
    // Ahead of A's streams, behind every better band's.
    expect((b as FlowPass).priority).toBe(enginePriority(DEFAULT, true));
    expect(enginePriority(DEFAULT, true)).toBeLessThan(enginePriority(DEFAULT, false));
    expect(enginePriority(DEFAULT, true)).toBeGreaterThan(enginePriority(DEFAULT - 1, false));
    // A, far above its share, is not let in the same way.
    const more = flow.enter(request('a'));
    expect(more).toBeInstanceOf(Promise);
    (more as Promise<FlowPass>).catch(() => {});
  });

  it('stays ahead until it holds as many as the flood, and no further', () => {
    const flow = flowControl(16, true);
    enterMany(flow, 'a', 16);
    const b = enterMany(flow, 'b', 16);
    // B goes ahead up to its share, half the slots (A's streams it preempts still count as A's).
    expect(b.passes).toHaveLength(8);
    expect(b.waits).toHaveLength(8);
  });

  it('takes the slot the flood leaves free where a stream runs to its end', async () => {
    const flow = flowControl(16, false);
    // B asked for the model a moment ago: organizations mix, so the flood leaves a slot free.
    (flow.enter(request('b')) as FlowPass).done({ promptTokens: 10, completionTokens: 20 });
    const a = enterMany(flow, 'a', 40);
    // The flood leaves one slot of 16 free.
    expect(a.passes).toHaveLength(15);
    const b = flow.enter(request('b'));
    expect(b).not.toBeInstanceOf(Promise);
    // Its answer done, the slot is kept for the next one, not refilled by the flood.
    (b as FlowPass).done({ promptTokens: 10, completionTokens: 20 });
    expect(flow.waiting('a')).toBe(25);
    const next = flow.enter(request('b'));
    expect(next).not.toBeInstanceOf(Promise);
    // While B holds a slot, A's own end leaves one free beside it; once B's ends, A has all but
    // one.
    a.passes[0]!.done({ promptTokens: 10, completionTokens: 20 });
    expect(flow.waiting('a')).toBe(25);
    (next as FlowPass).done({ promptTokens: 10, completionTokens: 20 });
    await a.waits[0];
    expect(flow.waiting('a')).toBe(24);
  });

  it('leaves no slot idle when two organizations both flood, and none when set to 0', () => {
    const both = flowControl(16, false);
    const a = enterMany(both, 'a', 20);
    const b = enterMany(both, 'b', 20);
    expect(a.passes.length + b.passes.length).toBe(16);
    const none = flowControl(16, false, 0);
    expect(enterMany(none, 'a', 20).passes).toHaveLength(16);
  });

  it('keeps no slot for others while one organization is alone', () => {
    expect(enterMany(flowControl(16, false), 'a', 20).passes).toHaveLength(16);
  });

  it('always lets an organization in with its first request, however few the slots', () => {
    const flow = flowControl(1, false);
    expect(flow.enter(request('a'))).not.toBeInstanceOf(Promise);
  });
});
