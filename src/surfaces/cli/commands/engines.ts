import { segment } from '../client.js';
import { table } from '../output.js';
import { type Command, type EngineView, type List, STRING } from './command.js';

/** The autoscaling bounds, or the fixed count. */
const bounds = (e: EngineView) =>
  e.min_replicas === e.max_replicas ? String(e.max_replicas) : `${e.min_replicas}-${e.max_replicas}`;

const describe = (e: EngineView) =>
  e.replicas.length === 0
    ? [[e.model, e.kind, `0/${e.desired_replicas}`, bounds(e), '-', '-', '-', '-', '-', '-', '-', '-', '-', '-', '-']]
    : e.replicas.map((r) => [
        e.model,
        e.kind,
        `${e.ready_replicas}/${e.desired_replicas}`,
        bounds(e),
        r.id,
        r.state,
        r.host ?? '-',
        r.gpus.length > 0 ? r.gpus.join(',') : '-',
        r.container ? r.container.name : '-',
        r.uptime_seconds === null ? '-' : `${r.uptime_seconds}s`,
        String(r.in_flight),
        r.load ? String(r.load.waiting) : '-',
        r.load ? String(r.load.running) : '-',
        r.load ? percent(r.load.kv_cache_usage) : '-',
        r.load?.prefix_hit_rate == null ? '-' : percent(r.load.prefix_hit_rate),
      ]);

const percent = (share: number): string => `${Math.round(share * 100)}%`;

const list: Command<List<EngineView>> = {
  name: 'engines list',
  args: '',
  summary:
    'List engines and their replicas: replica bounds, state, host, GPUs, container, uptime, requests in flight, and what each replica reports (queue, running, KV cache use, prefix-cache hit rate).',
  request: () => ({ method: 'GET', path: '/engines' }),
  render: ({ data }) =>
    table([
      [
        'MODEL',
        'KIND',
        'READY',
        'SCALE',
        'REPLICA',
        'STATE',
        'HOST',
        'GPUS',
        'CONTAINER',
        'UPTIME',
        'IN FLIGHT',
        'QUEUE',
        'RUNNING',
        'KV',
        'PREFIX HITS',
      ],
      ...data.flatMap(describe),
    ]),
};

const scale: Command<EngineView> = {
  name: 'engines scale',
  args: 'MODEL --replicas N',
  summary: "Set a Docker engine's replicas (scaling down drains replicas before removing them).",
  positionals: 1,
  options: { replicas: STRING },
  request: (a) => ({
    method: 'POST',
    path: `/engines/${segment(a.id('model'))}/scale`,
    body: { replicas: a.requiredInt('replicas', 0, 64) },
  }),
  render: (e) => `Engine ${e.model}: ${e.desired_replicas} replicas wanted, ${e.ready_replicas} ready.`,
};

const restart: Command<EngineView> = {
  name: 'engines restart',
  args: 'MODEL',
  summary: "Replace a Docker engine's replicas, one at a time.",
  positionals: 1,
  request: (a) => ({ method: 'POST', path: `/engines/${segment(a.id('model'))}/restart` }),
  render: (e) => `Engine ${e.model} restarted: ${e.replicas.length} replicas starting.`,
};

/**
 * `engines list|scale|restart`: the fleet the gateway runs.
 *
 * @example
 * tollgate engines list
 * tollgate engines scale qwen-7b --replicas 2
 */
export const engineCommands = [list, scale, restart];
