import { Hono } from 'hono';
import type { z } from 'zod';
import type { NewNodeAccess } from '../../platform/clusters/node-access.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { SignedInActor } from '../context.js';
import { createNodeBody, createProfileBody, releaseNodeBody, updateNodeBody } from '../admin/schemas.js';
import { type NodesForm, OperatorNodesPage } from './operator-nodes-pages.js';
import { operatorOnly } from './operator-orgs.js';
import { type PortalSession, type PortalContext, problems } from './session.js';
import type { PortalDeps } from './deps.js';

const DONE: Record<string, string> = {
  profile: 'Profile added: give it nodes, and a rate card to price its hours.',
  node: 'Node added: clusters of its profile can take it now.',
  access: 'Access saved: it was checked by connecting once, and work waiting on the node is retried now.',
  released: 'Node released: it is free for the next cluster.',
};

type NewSsh = NonNullable<z.infer<typeof createNodeBody>['ssh']>;
type SshChange = z.infer<typeof updateNodeBody>['ssh'];

const PROFILE_FIELDS = ['name', 'gpus', 'gpu_model', 'cpus', 'memory_gib'] as const;

/**
 * A whole number typed in a form, as the API's JSON would carry it; anything else stays text for
 * the schema to refuse.
 */
const whole = (text: string) => (text === '' ? undefined : /^\d{1,12}$/.test(text) ? Number(text) : text);

/**
 * Nodes and hardware profiles for platform admins (`/portal/operator/nodes`),
 * what `GET /admin/v1/profiles` and `GET /admin/v1/nodes` answer (never a
 * node's credential), and the CLI's actions on them: add a profile, add a
 * node (with its SSH access, checked by connecting once), change a node's
 * access, release a node left releasing. The same schemas and services as
 * `/admin/v1/profiles` and `/admin/v1/nodes`; a refusal is shown on the form
 * with what was typed (never the private key). 404 for anyone else.
 *
 * @example
 * portal.route('/operator/nodes', operatorNodesRoutes(deps, session));
 */
export function operatorNodesRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const nodes = new Hono<GatewayEnv>();
  const { operator, render, attempt, log } = nodePageTools(deps, session);

  nodes.get('/', async (c) => render(c, await operator(c), { notice: DONE[c.req.query('done') ?? ''] }));

  nodes.post('/profiles', async (c) => {
    const actor = await operator(c);
    const { text } = await readForm(c, deps, session, actor);
    const form: NodesForm = {
      form: 'profile',
      ...Object.fromEntries(PROFILE_FIELDS.map((name) => [name, text(name)])),
    };
    const input = {
      name: form.name,
      gpus_per_node: whole(text('gpus')) ?? '',
      gpu_model: text('gpu_model') || undefined,
      cpu_cores: whole(text('cpus')),
      memory_gib: whole(text('memory_gib')),
    };
    const parsed = createProfileBody.safeParse(input);
    if (!parsed.success) return render(c, actor, { error: problems(parsed.error), form, status: 400 });
    const p = parsed.data;
    return attempt(c, actor, form, async () => {
      await deps.clusters.addProfile({
        name: p.name,
        gpusPerNode: p.gpus_per_node,
        gpuModel: p.gpu_model,
        cpuCores: p.cpu_cores,
        memoryGib: p.memory_gib,
      });
      log(c, actor, 'added a profile', { profile: p.name });
      return 'profile';
    });
  });

  nodes.post('/', async (c) => {
    const actor = await operator(c);
    const { text, ssh } = await readForm(c, deps, session, actor);
    const form: NodesForm = {
      form: 'node',
      profile: text('profile'),
      address: text('address'),
      access: text('access'),
      ...sshTyped(text),
    };
    const parsed = createNodeBody.safeParse({
      profile: form.profile,
      address: form.address,
      access: form.access || undefined,
      ssh: ssh(),
    });
    if (!parsed.success) return render(c, actor, { error: problems(parsed.error), form, status: 400 });
    const input = parsed.data;
    return attempt(c, actor, form, async () => {
      const node = await deps.clusters.addNode({
        profile: input.profile,
        address: input.address,
        access: input.access,
        ssh: input.ssh && accessOf(input.ssh),
      });
      log(c, actor, 'added a node', { nodeId: node.id, profile: node.profile, address: node.address });
      return 'node';
    });
  });

  maintenanceRoutes(nodes, deps, session);
  return nodes;
}

/**
 * A node's upkeep (`nodes update`, `nodes release`): its SSH access changed, and a node left
 * releasing freed.
 */
function maintenanceRoutes(nodes: Hono<GatewayEnv>, deps: PortalDeps, session: PortalSession): void {
  const { operator, render, attempt, log } = nodePageTools(deps, session);

  nodes.post('/access', async (c) => {
    const actor = await operator(c);
    const { text, ssh } = await readForm(c, deps, session, actor);
    const form: NodesForm = { form: 'access', node: text('node'), ...sshTyped(text) };
    const parsed = updateNodeBody.safeParse({ ssh: ssh() ?? {} });
    if (!parsed.success) return render(c, actor, { error: problems(parsed.error), form, status: 400 });
    const given = parsed.data.ssh;
    if (Object.values(given).every((value) => value === undefined))
      return render(c, actor, { error: 'Give at least one of the SSH fields to change.', form, status: 400 });
    return attempt(c, actor, form, async () => {
      await deps.nodeMaintenance.changeAccess(form.node ?? '', accessOf(given));
      log(c, actor, "changed a node's access", { nodeId: form.node });
      return 'access';
    });
  });

  nodes.post('/release', async (c) => {
    const actor = await operator(c);
    const { text } = await readForm(c, deps, session, actor);
    const { force } = releaseNodeBody.parse({ force: text('force') === 'true' });
    return attempt(c, actor, { form: 'release', node: text('node') }, async () => {
      await deps.nodeMaintenance.release(text('node'), { force });
      log(c, actor, 'released a node', { nodeId: text('node'), force });
      return 'released';
    });
  });
}

/**
 * What every handler of the nodes page uses: the operator check, the page, a change whose refusal
 * shows on the form, the log line.
 */
function nodePageTools(deps: PortalDeps, session: PortalSession) {
  const operator = async (c: PortalContext) => operatorOnly(await session.signedIn(c));
  const render = async (
    c: PortalContext,
    actor: SignedInActor,
    extra: { notice?: string; error?: string; form?: NodesForm; status?: number } = {},
  ) => {
    const [profiles, rows] = await Promise.all([deps.clusters.listProfiles(), deps.clusters.listNodes()]);
    const page = (
      <OperatorNodesPage
        viewer={session.viewerOf(actor)}
        profiles={profiles}
        nodes={rows}
        notice={extra.notice}
        error={extra.error}
        form={extra.form ?? {}}
      />
    );
    return c.html(page, (extra.status ?? 200) as 200);
  };
  /**
   * Runs a change; its refusal (the service's own words, for the operator) is shown on the form
   * they used, with its status.
   */
  const attempt = async (c: PortalContext, actor: SignedInActor, form: NodesForm, change: () => Promise<string>) => {
    try {
      return c.redirect(`/portal/operator/nodes?done=${await change()}`, 303);
    } catch (error) {
      if (error instanceof GatewayError) return render(c, actor, { error: error.message, form, status: error.status });
      throw error;
    }
  };
  const log = (c: PortalContext, actor: SignedInActor, what: string, fields: Record<string, unknown>) =>
    deps.log.info(`operator ${what} in the portal`, { requestId: c.get('requestId'), ...fields, by: actor.userId });
  return { operator, render, attempt, log };
}

/**
 * A form's fields as text, its token checked; and its SSH fields as the API's `ssh` object, or
 * undefined when none was typed.
 */
async function readForm(c: PortalContext, deps: PortalDeps, session: PortalSession, actor: SignedInActor) {
  const body = await c.req.parseBody();
  session.checkToken(actor, body._csrf);
  const text = (name: string) =>
    typeof body[name] === 'string' ? (name === 'ssh_private_key' ? body[name] : body[name].trim()) : '';
  const ssh = () => {
    const fields = {
      user: text('ssh_user') || undefined,
      port: whole(text('ssh_port')),
      private_key: text('ssh_private_key').trim() === '' ? undefined : text('ssh_private_key'),
      host_key_fingerprint: text('host_key_fingerprint') || undefined,
      run_user: text('run_user') || undefined,
    };
    return Object.values(fields).every((value) => value === undefined) ? undefined : fields;
  };
  return { text, ssh };
}

/**
 * The API's `ssh` object in the clusters service's terms: whole to add a node, partial to change
 * one's access.
 */
function accessOf(ssh: NewSsh): NewNodeAccess;
function accessOf(ssh: SshChange): Partial<NewNodeAccess>;
function accessOf(ssh: SshChange): Partial<NewNodeAccess> {
  return {
    user: ssh.user,
    port: ssh.port,
    privateKey: ssh.private_key,
    hostKeyFingerprint: ssh.host_key_fingerprint,
    runUser: ssh.run_user,
  };
}

/** The SSH fields to show again on a refused form: never the private key. */
function sshTyped(text: (name: string) => string): NodesForm {
  return {
    ssh_user: text('ssh_user'),
    ssh_port: text('ssh_port'),
    host_key_fingerprint: text('host_key_fingerprint'),
    run_user: text('run_user'),
  };
}
