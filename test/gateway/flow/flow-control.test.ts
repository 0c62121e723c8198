import { afterEach, describe, expect, it } from 'vitest';
import { FLOW_TEST_SETTINGS } from './flow-settings.js';
import type { FlowSettings } from '../../../src/config/fleet-types.js';
import { FlowControl } from '../../../src/gateway/flow/flow-control.js';
import type { FlowPass, FlowRequest } from '../../../src/gateway/flow/flow-types.js';
import { GatewayError } from '../../../src/shared/http/errors.js';

const SETTINGS = FLOW_TEST_SETTINGS;

function request(orgId: string, band: FlowRequest['band'] = 'default', weight = 1): FlowRequest {
  return { modelId: 'm', orgId, band, weight, promptTokens: 10, completionBound: 100 };
}

/** A model with `slots` sequences in all: what the fleet reports as room. */
function fleetOf(slots: number | null) {
  const room = { slots };
  return { room, source: { freeSlots: () => room.slots } };
}

const made: FlowControl[] = [];
function flowControl(slots: number | null, settings: Partial<FlowSettings> = {}) {
  const fleet = fleetOf(slots);
  const flow = new FlowControl({ ...SETTINGS, ...settings }, fleet.source);
  made.push(flow);
  return { flow, room: fleet.room };
}

afterEach(() => {
  for (const flow of made.splice(0)) flow.close();
});

/** A wait the test leaves pending: refused when the flow control closes. */
function ignored(entered: FlowPass | Promise<FlowPass>): void {
  if (entered instanceof Promise) entered.catch(() => {});
}

const used = { promptTokens: 10, completionTokens: 20 };

describe('FlowControl', () => {
  it('passes at once while there is room, and when room is unknown', () => {
    const { flow } = flowControl(2);
    expect(flow.enter(request('a'))).not.toBeInstanceOf(Promise);
    expect(flow.enter(request('a'))).not.toBeInstanceOf(Promise);
    const waiting = flow.enter(request('a'));
    expect(waiting).toBeInstanceOf(Promise);
    ignored(waiting);
    const unknown = flowControl(null).flow;
    for (let i = 0; i < 100; i++) expect(unknown.enter(request('a'))).not.toBeInstanceOf(Promise);
  });

  it('dispatches the waiting request of the organization served least when a slot frees', async () => {
    const { flow } = flowControl(1);
    const first = flow.enter(request('flood')) as FlowPass;
    const floods = [1, 2, 3].map(() => flow.enter(request('flood')) as Promise<FlowPass>);
    const light = flow.enter(request('light')) as Promise<FlowPass>;
    const order: string[] = [];
    void light.then(() => order.push('light'));
    for (const f of floods)
      void f.then(
        () => order.push('flood'),
        () => {},
      );
    first.done(used);
    await light;
    expect(order).toEqual(['light']);
    expect(flow.waiting('flood')).toBe(3);
  });

  it('serves a higher band before a lower one', async () => {
    const { flow } = flowControl(1);
    const running = flow.enter(request('a', 'batch')) as FlowPass;
    const batch = flow.enter(request('b', 'batch')) as Promise<FlowPass>;
    const interactive = flow.enter(request('c', 'interactive')) as Promise<FlowPass>;
    running.done(used);
    const next = await interactive;
    expect(flow.waiting()).toBe(1);
    next.done(used);
    await batch;
  });

  it('refuses at once, naming the setting, when the organization or the whole queue is full', () => {
    const { flow } = flowControl(0, { queuePerOrg: 2, queueTotal: 3 });
    ignored(flow.enter(request('a')));
    ignored(flow.enter(request('a')));
    expect(() => flow.enter(request('a'))).toThrow(/TOLLGATE_FLOW_QUEUE_PER_ORG=2/);
    ignored(flow.enter(request('b')));
    let refusal: unknown;
    try {
      ignored(flow.enter(request('c')));
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(GatewayError);
    expect((refusal as GatewayError).code).toBe('overloaded');
    expect((refusal as GatewayError).status).toBe(503);
    expect((refusal as GatewayError).headers?.['Retry-After']).toBeDefined();
    expect((refusal as GatewayError).message).toMatch(/TOLLGATE_FLOW_QUEUE_TOTAL=3/);
  });

  it('refuses a request that waited the longest a request may', async () => {
    const { flow } = flowControl(0, { maxWaitMs: 100 });
    await expect(flow.enter(request('a'))).rejects.toThrow(/TOLLGATE_FLOW_MAX_WAIT_MS=100/);
    expect(flow.waiting()).toBe(0);
  });

  it('takes out a request whose client left, and dispatches nothing for it', async () => {
    const { flow, room } = flowControl(0);
    let leave = () => {};
    const waiting = flow.enter(request('a'), { onLeave: (l) => (leave = l) });
    leave();
    await expect(waiting).rejects.toThrow(/closed the connection/);
    room.slots = 5;
    flow.pump();
    expect(flow.snapshot().models[0]!.inFlight).toBe(0);
  });

  it('finds room the engines report without a request of its own ending (the poll)', async () => {
    const { flow, room } = flowControl(0);
    const waiting = flow.enter(request('a'));
    room.slots = 1;
    const pass = await waiting;
    expect(pass.waitedMs).toBeGreaterThan(0);
  });

  it('shares by weight: an organization of weight 2 is served about twice the tokens of weight 1', async () => {
    const { flow } = flowControl(1);
    const served = { heavy: 0, light: 0 };
    const dispatched: Array<{ org: 'heavy' | 'light'; pass: FlowPass }> = [];
    const enter = (org: 'heavy' | 'light') => {
      const entered = flow.enter(request(org, 'default', org === 'heavy' ? 2 : 1));
      if (entered instanceof Promise)
        void entered.then(
          (pass) => dispatched.push({ org, pass }),
          () => {},
        );
      else dispatched.push({ org, pass: entered });
    };
    enter('heavy');
    for (let i = 0; i < 600; i++) {
      for (const org of ['heavy', 'light'] as const) while (flow.waiting(org) < 3) enter(org);
      await Promise.resolve();
      const running = dispatched.shift()!;
      served[running.org] += 1;
      running.pass.done(used);
      await Promise.resolve();
    }
    expect(served.heavy / served.light).toBeGreaterThan(1.8);
    expect(served.heavy / served.light).toBeLessThan(2.2);
  });

  it('on engines that schedule by priority, a better band goes over worse bands in flight, not over its own', async () => {
    const room = { slots: 2 };
    const flow = new FlowControl(SETTINGS, { freeSlots: () => room.slots, schedulesByPriority: () => true });
    made.push(flow);
    for (let i = 0; i < 2; i++) expect(flow.enter(request('a', 'batch'))).not.toBeInstanceOf(Promise);
    const waitingLine = flow.enter(request('a', 'batch'));
    expect(waitingLine).toBeInstanceOf(Promise);
    // The engine preempts a batch line for it: dispatched at once, the waiting line still waits.
    const chat = flow.enter(request('b', 'default')) as FlowPass;
    expect(chat).not.toBeInstanceOf(Promise);
    expect(flow.enter(request('b', 'default'))).not.toBeInstanceOf(Promise);
    const third = flow.enter(request('b', 'default'));
    expect(third).toBeInstanceOf(Promise);
    // The chats hold both slots; one's end is the waiting chat's room, and still none for lines.
    chat.done(used);
    await expect(third).resolves.toMatchObject({ waitedMs: expect.any(Number) });
    let lineGot = false;
    ignored(waitingLine);
    void (waitingLine as Promise<FlowPass>).then(
      () => (lineGot = true),
      () => {},
    );
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(lineGot).toBe(false);
    // First come first served engines: the chat waits behind the lines' room as any request does.
    const { flow: fcfs } = flowControl(1);
    expect(fcfs.enter(request('a', 'batch'))).not.toBeInstanceOf(Promise);
    const waits = fcfs.enter(request('b', 'default'));
    expect(waits).toBeInstanceOf(Promise);
    ignored(waits);
  });

  it('on first-come-first-served engines, the batch band leaves a slot free while better bands are about', async () => {
    const { flow } = flowControl(3, { batchHeadroom: 1, batchHeadroomMs: 200 });
    // Alone, the batch band takes the whole fleet.
    const lines = [0, 1, 2].map(() => flow.enter(request('a', 'batch')) as FlowPass);
    for (const line of lines) expect(line).not.toBeInstanceOf(Promise);
    // A chat arrives: it waits for a line to end (a started line cannot yield), and takes its slot.
    const chat = flow.enter(request('b', 'default'));
    expect(chat).toBeInstanceOf(Promise);
    const nextLine = flow.enter(request('a', 'batch')) as Promise<FlowPass>;
    let lineAt = 0;
    void nextLine.then(() => (lineAt = performance.now()));
    lines[0]!.done(used);
    (await chat).done(used);
    // The slot the chat left stays free for the next chat, which goes at once.
    const second = flow.enter(request('b', 'default')) as FlowPass;
    expect(second).not.toBeInstanceOf(Promise);
    second.done(used);
    expect(lineAt).toBe(0);
    // Once no better band asked for 200 ms, the batch band takes the fleet again.
    const quietFrom = performance.now();
    await nextLine;
    expect(lineAt - quietFrom).toBeGreaterThan(100);
  });
});
