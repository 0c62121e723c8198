import type { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import { z } from 'zod';
import { offsetOf, paged, pageQuery } from '../api/pagination.js';
import type { GatewayEnv } from '../http/context.js';
import { readBody, readQuery } from '../http/validate.js';
import type { Services } from '../services.js';
import { FINAL_STATES, type RunRow } from './service.js';

const applyBody = z.strictObject({
  stack: z.string().min(1).max(63),
  /** Absent: the whole cluster. */
  target: z.strictObject({ node_id: z.string().min(1).max(100) }).optional(),
  inputs: z.record(z.string().max(64), z.unknown()).default({}),
});
const logQuery = z.object({ follow: z.enum(['true', 'false']).default('false') });
/** How often a followed log looks for new pieces (they may be written by another process). */
const FOLLOW_POLL_MS = 250;

/** A run as the API shows it. */
export function runView(run: RunRow) {
  return {
    id: run.id,
    cluster_id: run.clusterId,
    stack: run.stackName,
    target: run.nodeId ? { node_id: run.nodeId } : null,
    inputs: run.inputs,
    state: run.state,
    created_by: run.createdBy,
    created_at: run.createdAt.toISOString(),
    started_at: run.startedAt?.toISOString() ?? null,
    finished_at: run.finishedAt?.toISOString() ?? null,
    cancel_requested_at: run.cancelRequestedAt?.toISOString() ?? null,
    exit_code: run.exitCode,
    failure: run.failure,
    outputs: run.outputs,
    public_url: run.publicUrl,
  };
}

/**
 * Runs under the generic API: `POST /clusters/{id}/runs` applies a stack
 * (anyone in the cluster's organization), `GET /clusters/{id}/runs` lists
 * them, `GET /runs/{id}` shows one, `POST /runs/{id}/cancel` stops it, and
 * `GET /runs/{id}/log` gives its log as text, or followed live as
 * server-sent events with `?follow=true`.
 *
 * @example
 * registerRunRoutes(api, services);
 */
export function registerRunRoutes(api: Hono<GatewayEnv>, services: Services): void {
  const { runs, runWorker, config } = services;

  api.post('/clusters/:id/runs', async (c) => {
    const body = await readBody(c, applyBody);
    const run = await runs.queue(c.get('actor'), { clusterId: c.req.param('id'), stackName: body.stack, nodeId: body.target?.node_id, inputs: body.inputs });
    runWorker.poke();
    return c.json(runView(run), 201);
  });

  api.get('/clusters/:id/runs', async (c) => {
    const query = readQuery(c, pageQuery(['created_at'] as const));
    const { rows, total } = await runs.list(c.get('actor'), c.req.param('id'), { offset: offsetOf(query.page, query.limit), limit: query.limit });
    return c.json(paged(rows.map(runView), total, query.page, query.limit));
  });

  api.get('/runs/:id', async (c) => c.json(runView(await runs.get(c.get('actor'), c.req.param('id')))));

  // Signals the tool and waits for it to stop (SIGINT, then SIGKILL after the grace): 200 once the run has ended, 202 if it is still stopping.
  api.post('/runs/:id/cancel', async (c) => {
    const actor = c.get('actor');
    let run = await runs.requestCancel(actor, c.req.param('id'));
    runWorker.cancelHere(run.id);
    const deadline = Date.now() + config.runs.killGraceMs + 2 * config.runs.pollMs + 2_000;
    while (!FINAL_STATES.includes(run.state) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      run = await runs.get(actor, run.id);
    }
    return c.json(runView(run), FINAL_STATES.includes(run.state) ? 200 : 202);
  });

  api.get('/runs/:id/log', async (c) => {
    const actor = c.get('actor');
    const run = await runs.get(actor, c.req.param('id'));
    const { follow } = readQuery(c, logQuery);
    if (follow === 'false') {
      const pieces = await runs.readLog(run.id);
      return c.body(pieces.map((piece) => piece.data).join(''), 200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
    }
    const resumeFrom = Number(c.req.header('last-event-id'));
    return streamSSE(c, async (stream) => {
      let last = Number.isInteger(resumeFrom) && resumeFrom >= 0 ? resumeFrom : -1;
      let closed = false;
      stream.onAbort(() => {
        closed = true;
      });
      while (!closed) {
        // Read the state first: pieces stored before it ended are all read below.
        const state = (await runs.get(actor, run.id)).state;
        for (const piece of await runs.readLog(run.id, last)) {
          await stream.writeSSE({ event: 'log', id: String(piece.seq), data: piece.data });
          last = piece.seq;
        }
        if (FINAL_STATES.includes(state)) {
          await stream.writeSSE({ event: 'end', data: JSON.stringify({ state }) });
          return;
        }
        await stream.sleep(FOLLOW_POLL_MS);
      }
    });
  });
}
