import type { clusterView } from '../../api/clusters.js';
import type { runView } from '../../api/runs.js';
import { segment } from '../client.js';
import { UsageError } from '../errors.js';
import { date, fields, table } from '../output.js';
import { type Command, STRING } from './command.js';

// `clusters list|create|get|delete` and `runs apply|list|get|cancel|log`
// (an organization's, as a user: with an API key, `--api-key` or
// $TOLLGATE_API_KEY); the operator's hardware is in `nodes.ts`.
//
// @example
// tollgate clusters create --name training --profile a100x8 --nodes 2 --domain train.example.com
// --api-key sk-gw-... tollgate runs apply cls_... --stack monitoring --inputs '{"retention_days":
// 30}'

type ClusterView = ReturnType<typeof clusterView>;
type RunView = ReturnType<typeof runView>;
/** The generic API's pages (`/v1/clusters`, `/v1/clusters/{id}/runs`). */
interface Page<T> {
  data: T[];
  pagination: { page: number; limit: number; total: number; pages: number };
}

const listClusters: Command<Page<ClusterView>> = {
  name: 'clusters list',
  args: '[--api-key KEY]',
  summary: "List your organization's clusters (a platform admin: every organization's).",
  api: 'public',
  options: { 'api-key': STRING },
  request: () => ({ method: 'GET', path: '/clusters?limit=100' }),
  render: ({ data }) =>
    table([
      ['ID', 'NAME', 'PROFILE', 'DOMAIN', 'STATE', 'CREATED'],
      ...data.map((c) => [c.id, c.name, c.profile, c.public_domain, c.state, date(c.created_at)]),
    ]),
};

const createCluster: Command<ClusterView> = {
  name: 'clusters create',
  args: '--name N --profile P --nodes K --domain D [--api-key KEY]',
  summary:
    'Create a cluster of K free nodes of a profile (owners and admins); its runs get public URLs under the domain.',
  api: 'public',
  options: { name: STRING, profile: STRING, nodes: STRING, domain: STRING, 'api-key': STRING },
  request: (a) => ({
    method: 'POST',
    path: '/clusters',
    body: {
      name: a.required('name'),
      profile: a.required('profile'),
      nodes: a.int('nodes', 1, 1000) ?? missing('nodes'),
      public_domain: a.required('domain'),
    },
  }),
  render: (c) =>
    `Created cluster ${c.id} (${c.name}) with ${c.nodes?.length ?? 0} ${c.profile} nodes: ${c.nodes?.map((n) => n.address).join(', ')}.`,
};

const getCluster: Command<ClusterView> = {
  name: 'clusters get',
  args: 'ID [--api-key KEY]',
  summary: 'Show a cluster and its nodes.',
  api: 'public',
  positionals: 1,
  options: { 'api-key': STRING },
  request: (a) => ({ method: 'GET', path: `/clusters/${segment(a.id('cluster id'))}` }),
  render: (c) =>
    fields([
      ['id', c.id],
      ['name', c.name],
      ['profile', c.profile],
      ['public domain', c.public_domain],
      ['state', c.state],
      ['status', c.status ?? ''],
      ['created', c.created_at],
      ['deleted', c.deleted_at],
      [
        'nodes',
        c.nodes
          ?.map(
            (n) => `${n.id} (${n.address}, key ${n.identity.state}${n.identity.error ? `: ${n.identity.error}` : ''})`,
          )
          .join(', ') ?? '',
      ],
    ]),
};

const deleteCluster: Command<null> = {
  name: 'clusters delete',
  args: 'ID [--api-key KEY]',
  summary: 'Delete a cluster: its nodes are freed, and its metered time ends now.',
  api: 'public',
  positionals: 1,
  options: { 'api-key': STRING },
  request: (a) => ({ method: 'DELETE', path: `/clusters/${segment(a.id('cluster id'))}` }),
  render: (_, a) => `Deleted cluster ${a.id('cluster id')}.`,
};

const renderRun = (r: RunView) =>
  fields([
    ['id', r.id],
    ['stack', r.stack],
    ['cluster', r.cluster_id],
    ['target', r.target ? `node ${r.target.node_id}` : 'the whole cluster'],
    ['state', r.state],
    ['created', r.created_at],
    ['started', r.started_at],
    ['finished', r.finished_at],
    ['exit code', r.exit_code],
    ['failure', r.failure],
    ['public URL', r.public_url],
    ['outputs', r.outputs ? JSON.stringify(r.outputs) : null],
  ]);

const applyStack: Command<RunView> = {
  name: 'runs apply',
  args: 'CLUSTER_ID --stack NAME [--node NODE_ID] [--inputs JSON] [--api-key KEY]',
  summary:
    "Apply a stack to a cluster (or one of its nodes) as a queued run; --inputs is a JSON object of the stack's inputs.",
  api: 'public',
  positionals: 1,
  options: { stack: STRING, node: STRING, inputs: STRING, 'api-key': STRING },
  request: (a) => ({
    method: 'POST',
    path: `/clusters/${segment(a.id('cluster id'))}/runs`,
    body: {
      stack: a.required('stack'),
      ...(a.has('node') ? { target: { node_id: a.required('node') } } : {}),
      inputs: inputsOf(a.optional('inputs')),
    },
  }),
  render: (r) =>
    `Queued run ${r.id}: ${r.stack} on ${r.target ? `node ${r.target.node_id}` : `cluster ${r.cluster_id}`}. Follow it with: tollgate runs log ${r.id}`,
};

const listRuns: Command<Page<RunView>> = {
  name: 'runs list',
  args: 'CLUSTER_ID [--api-key KEY]',
  summary: "List a cluster's runs, newest first.",
  api: 'public',
  positionals: 1,
  options: { 'api-key': STRING },
  request: (a) => ({ method: 'GET', path: `/clusters/${segment(a.id('cluster id'))}/runs?limit=100` }),
  render: ({ data }) =>
    table([
      ['ID', 'STACK', 'STATE', 'CREATED', 'FINISHED', 'PUBLIC URL'],
      ...data.map((r) => [r.id, r.stack, r.state, date(r.created_at), date(r.finished_at), r.public_url ?? '-']),
    ]),
};

const getRun: Command<RunView> = {
  name: 'runs get',
  args: 'ID [--api-key KEY]',
  summary: 'Show a run: its state, timings, exit status, outputs and public URL.',
  api: 'public',
  positionals: 1,
  options: { 'api-key': STRING },
  request: (a) => ({ method: 'GET', path: `/runs/${segment(a.id('run id'))}` }),
  render: renderRun,
};

const cancelRun: Command<RunView> = {
  name: 'runs cancel',
  args: 'ID [--api-key KEY]',
  summary: 'Cancel a run: a queued one at once; a running one is interrupted (SIGINT, then SIGKILL) and waited for.',
  api: 'public',
  positionals: 1,
  options: { 'api-key': STRING },
  request: (a) => ({ method: 'POST', path: `/runs/${segment(a.id('run id'))}/cancel` }),
  render: renderRun,
};

const runLog: Command<string> = {
  name: 'runs log',
  args: 'ID [--api-key KEY]',
  summary: "Print a run's log so far (to follow it live: GET /v1/runs/{id}/log?follow=true, server-sent events).",
  api: 'public',
  positionals: 1,
  options: { 'api-key': STRING },
  request: (a) => ({ method: 'GET', path: `/runs/${segment(a.id('run id'))}/log` }),
  render: (text) => text,
};

function inputsOf(json: string | undefined): Record<string, unknown> {
  if (json === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw new UsageError('--inputs must be a JSON object, e.g. \'{"grafana_port": 3000}\'');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new UsageError('--inputs must be a JSON object, e.g. \'{"grafana_port": 3000}\'');
  return parsed as Record<string, unknown>;
}

function missing(flag: string): never {
  throw new UsageError(`--${flag} is required`);
}

export const clusterCommands: Command[] = [
  listClusters,
  createCluster,
  getCluster,
  deleteCluster,
  applyStack,
  listRuns,
  getRun,
  cancelRun,
  runLog,
] as Command[];
