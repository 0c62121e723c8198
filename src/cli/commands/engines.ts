import { segment } from '../client.js';
import { table } from '../output.js';
import { type Command, type EngineView, type List, STRING } from './command.js';

/**
 * `engines list|scale|restart`: the fleet the gateway runs.
 *
 * @example
 * tollgate engines list
 * tollgate engines scale qwen-7b --replicas 2
 */
const describe = (e: EngineView) =>
  e.replicas.length === 0
    ? [[e.model, e.kind, `0/${e.desired_replicas}`, '-', '-', '-', '-', '-']]
    : e.replicas.map((r) => [
        e.model,
        e.kind,
        `${e.ready_replicas}/${e.desired_replicas}`,
        r.id,
        r.state,
        r.container ? r.container.name : '-',
        r.uptime_seconds === null ? '-' : `${r.uptime_seconds}s`,
        String(r.in_flight),
      ]);

const list: Command<List<EngineView>> = {
  name: 'engines list',
  args: '',
  summary: 'List engines and their replicas: state, container, uptime, requests in flight.',
  request: () => ({ method: 'GET', path: '/engines' }),
  render: ({ data }) => table([['MODEL', 'KIND', 'READY', 'REPLICA', 'STATE', 'CONTAINER', 'UPTIME', 'IN FLIGHT'], ...data.flatMap(describe)]),
};

const scale: Command<EngineView> = {
  name: 'engines scale',
  args: 'MODEL --replicas N',
  summary: "Set a Docker engine's replicas (scaling down drains replicas before removing them).",
  positionals: 1,
  options: { replicas: STRING },
  request: (a) => ({ method: 'POST', path: `/engines/${segment(a.id('model'))}/scale`, body: { replicas: a.requiredInt('replicas', 0, 64) } }),
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

export const engineCommands = [list, scale, restart];
