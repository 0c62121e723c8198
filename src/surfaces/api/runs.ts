import type { Context, Hono } from 'hono';
import { GatewayError } from '../../shared/http/errors.js';
import { stream, streamSSE } from 'hono/streaming';
import { z } from 'zod';
import { offsetOf, paged, pageQuery } from './pagination.js';
import { apiResource, type ClientOf } from './resource.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { readBody, readQuery } from '../../shared/http/validate.js';
import type { ApiDeps } from './deps.js';
import type { RunRow } from '../../platform/runs/service.js';

const applyBody = z.strictObject({
  stack: z.string().min(1).max(63),
  /** Absent: the whole cluster. */
  target: z.strictObject({ node_id: z.string().min(1).max(100) }).optional(),
  inputs: z.record(z.string().max(64), z.unknown()).default({}),
});
const logQuery = z.object({ follow: z.enum(['true', 'false']).default('false') });

/** The cluster id of the mount path (`/clusters/:id/runs`). */
function clusterIdOf(c: Context): string {
  const id = c.req.param('id');
  if (id === undefined) throw new GatewayError('not_found', 'There is no such cluster.');
  return id;
}

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
 * A cluster's runs (`/v1/clusters/{id}/runs`, and under `/api/v1`): apply a
 * stack (queued for a worker, `platform/runs/`), list them. Who may apply
 * what is `RunService.queue`.
 *
 * @example
 * mountResource(api, '/clusters/:id/runs', clusterRunsRoutes(deps, clientOf));
 */
export function clusterRunsRoutes(deps: ApiDeps, clientOf: ClientOf): Hono<GatewayEnv> {
  const api = apiResource(deps, clientOf);
  const { runs, runWorker } = deps;

  api.post('/', async (c) => {
    const body = await readBody(c, applyBody);
    const run = await runs.queue(c.get('actor'), {
      clusterId: clusterIdOf(c),
      stackName: body.stack,
      nodeId: body.target?.node_id,
      inputs: body.inputs,
    });
    runWorker.poke();
    return c.json(runView(run), 201);
  });

  api.get('/', async (c) => {
    const query = readQuery(c, pageQuery(['created_at'] as const));
    const { rows, total } = await runs.list(c.get('actor'), clusterIdOf(c), {
      offset: offsetOf(query.page, query.limit),
      limit: query.limit,
    });
    return c.json(paged(rows.map(runView), total, query.page, query.limit));
  });
  return api;
}

/**
 * One run (`/v1/runs/{id}`, and under `/api/v1`): read it, cancel it, read
 * or follow its log (`?follow=true`, server-sent events resumable with
 * `Last-Event-ID`). Another organization's run is 404.
 *
 * @example
 * mountResource(api, '/runs', runsRoutes(deps, clientOf));
 */
export function runsRoutes(deps: ApiDeps, clientOf: ClientOf): Hono<GatewayEnv> {
  const api = apiResource(deps, clientOf);
  const { runs, runWorker } = deps;

  api.get('/:id', async (c) => c.json(runView(await runs.get(c.get('actor'), c.req.param('id')))));

  // Signals the tool and waits for it to stop (SIGINT, then SIGKILL after the grace): 200 once the
  // run has ended, 202 if it is still stopping.
  api.post('/:id/cancel', async (c) => {
    const { run, ended } = await runs.cancelAndWait(c.get('actor'), c.req.param('id'), runWorker);
    return c.json(runView(run), ended ? 200 : 202);
  });

  api.get('/:id/log', async (c) => {
    const actor = c.get('actor');
    const run = await runs.get(actor, c.req.param('id'));
    const { follow } = readQuery(c, logQuery);
    if (follow === 'false') {
      c.header('content-type', 'text/plain; charset=utf-8');
      c.header('cache-control', 'no-store');
      return stream(c, async (out) => {
        for await (const piece of runs.logPieces(run.id)) {
          if (out.aborted) return;
          await out.write(piece.data);
        }
      });
    }
    const resumeFrom = Number(c.req.header('last-event-id'));
    const after = Number.isInteger(resumeFrom) && resumeFrom >= 0 ? resumeFrom : -1;
    return streamSSE(c, async (stream) => {
      const reader = new AbortController();
      stream.onAbort(() => reader.abort());
      for await (const item of runs.followLog(actor, run.id, after, reader.signal)) {
        if ('ended' in item) await stream.writeSSE({ event: 'end', data: JSON.stringify({ state: item.ended }) });
        else await stream.writeSSE({ event: 'log', id: String(item.seq), data: item.data });
      }
    });
  });

  return api;
}
