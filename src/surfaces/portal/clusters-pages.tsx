import { identityOf, type NodeKeyRow } from '../../platform/clusters/node-keys.js';
import type { ClusterRow, NodeRow } from '../../platform/clusters/service.js';
import type { RunRow } from '../../platform/runs/service.js';
import { Notice, Page } from './layout.js';
import type { Viewer } from './layout.js';
import { RunState, time } from './runs-pages.js';

/** The organization's running clusters (a platform admin: every organization's). */
export function ClustersPage({
  viewer,
  clusters,
  create,
  error,
}: {
  viewer: Viewer;
  clusters: Array<{ cluster: ClusterRow; nodeCount: number }>;
  /** For owners and admins: the profiles with their free nodes, and what the form was filled with. */
  create: ClusterCreation | null;
  error?: string;
}) {
  return (
    <Page title="Clusters" user={viewer} current="clusters">
      <h1>Clusters</h1>
      {error && <Notice kind="error">{error}</Notice>}
      <p class="muted">
        Apply a stack from the <a href="/portal/stacks">catalog</a> to a cluster or one of its nodes.
      </p>
      {clusters.length > 0 && (
        <div class="table-wrap" tabindex={0} role="region" aria-label="Clusters (scrolls sideways on a narrow screen)">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Profile</th>
                <th scope="col" class="num">
                  Nodes
                </th>
                <th scope="col">Public domain</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {clusters.map(({ cluster, nodeCount }) => (
                <tr>
                  <td>
                    <a href={`/portal/clusters/${cluster.id}`}>{cluster.name}</a>
                  </td>
                  <td>{cluster.profile}</td>
                  <td class="num">{nodeCount}</td>
                  <td>{cluster.publicDomain}</td>
                  <td>{time(cluster.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {clusters.length === 0 && (
        <p class="muted">No clusters yet.{create ? ' Create one below.' : ' Owners and admins create them.'}</p>
      )}
      {create && <CreateClusterForm viewer={viewer} create={create} />}
    </Page>
  );
}

export interface ClusterCreation {
  profiles: Array<{ name: string; free: number; gpus: number; gpuModel: string | null }>;
  form: Record<string, string>;
}

/**
 * A new cluster: a name, free nodes of one hardware profile, and the public domain its runs' URLs
 * live under, with that domain's rules.
 */
function CreateClusterForm({ viewer, create }: { viewer: Viewer; create: ClusterCreation }) {
  const { form } = create;
  return (
    <>
      <h2 id="create">Create a cluster</h2>
      <form method="post" action="/portal/clusters" class="panel">
        <input type="hidden" name="_csrf" value={viewer.csrf} />
        <label for="name">Name</label>
        <input id="name" name="name" type="text" required maxlength={200} value={form.name ?? ''} />
        <label for="profile">Hardware profile</label>
        <select id="profile" name="profile" required aria-describedby="profile-hint">
          {create.profiles.map((profile) => (
            <option value={profile.name} selected={form.profile === profile.name}>
              {`${profile.name}: ${profile.free} free ${profile.free === 1 ? 'node' : 'nodes'}${profile.gpus ? `, ${profile.gpus} × ${profile.gpuModel ? profile.gpuModel : 'GPU'} each` : ''}`}
            </option>
          ))}
        </select>
        <p class="hint muted" id="profile-hint">
          {create.profiles.length === 0
            ? 'The operator has not added a hardware profile yet.'
            : 'The cluster takes that many free nodes of the profile, for itself alone, until it is deleted.'}
        </p>
        <label for="nodes">Nodes</label>
        <input id="nodes" name="nodes" type="number" min="1" max="1000" required value={form.nodes ?? '1'} />
        <label for="public_domain">Public domain</label>
        <input
          id="public_domain"
          name="public_domain"
          type="text"
          required
          maxlength={253}
          value={form.public_domain ?? ''}
          aria-describedby="domain-hint"
          placeholder="train.example.com"
        />
        <div class="hint muted" id="domain-hint">
          <p>
            A stack applied to this cluster is reached at <code>https://&lt;stack name&gt;.&lt;public domain&gt;</code>.
            The rules:
          </p>
          <ul>
            <li>A domain name such as train.example.com (letters, digits and hyphens, compared in lower case).</li>
            <li>
              One live cluster holds it, across the whole platform: a domain another cluster holds is refused. Deleting
              the cluster frees it.
            </li>
            <li>
              Not the portal's own host name nor a name above it: the portal is never reachable from a run's address.
            </li>
            <li>
              Point a wildcard DNS name (*.your domain) at the gateway; nothing checks that you control the domain, so
              use one you do.
            </li>
          </ul>
        </div>
        <p>
          <button type="submit">Create cluster</button>
        </p>
      </form>
    </>
  );
}

/** One cluster: its nodes and its runs, newest first. */
export function ClusterPage({
  viewer,
  cluster,
  nodes,
  keys,
  runs,
}: {
  viewer: Viewer;
  cluster: ClusterRow;
  nodes: NodeRow[];
  keys: NodeKeyRow[];
  runs: RunRow[];
}) {
  const addressOf = new Map(nodes.map((node) => [node.id, node.address]));
  const identity = identityOf(cluster.state, keys);
  return (
    <Page title={cluster.name} user={viewer} current="clusters">
      <p>
        <a href="/portal/clusters">← Clusters</a>
      </p>
      <h1>{cluster.name}</h1>
      <p class="muted">
        {cluster.profile} ·{' '}
        {identity.status === 'provisioning' ? 'provisioning: its access key is not on every node yet' : identity.status}{' '}
        · public URLs under <code>{cluster.publicDomain}</code> · <code>{cluster.id}</code>
      </p>
      <h2>Nodes</h2>
      <div class="table-wrap" tabindex={0} role="region" aria-label="Nodes (scrolls sideways on a narrow screen)">
        <table>
          <thead>
            <tr>
              <th scope="col">Address</th>
              <th scope="col">Id</th>
              <th scope="col">SSH</th>
              <th scope="col">Cluster's key</th>
            </tr>
          </thead>
          <tbody>
            {nodes.map((node) => {
              const key = identity.nodeIdentity(node.id);
              return (
                <tr>
                  <td>{node.address}</td>
                  <td>
                    <code>{node.id}</code>
                  </td>
                  <td>{node.runUser ? `${node.runUser}@${node.address}:${node.sshPort}` : '—'}</td>
                  <td>
                    {key.state === 'unmanaged'
                      ? 'not managed (no SSH access)'
                      : key.state === 'failed'
                        ? `failed (attempt ${key.attempts}): ${key.error ?? ''}`
                        : key.state}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <h2>Runs</h2>
      <div class="table-wrap" tabindex={0} role="region" aria-label="Runs (scrolls sideways on a narrow screen)">
        <table>
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Stack</th>
              <th scope="col">Target</th>
              <th scope="col">State</th>
              <th scope="col">Queued</th>
              <th scope="col">Finished</th>
              <th scope="col">Public URL</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((run) => (
              <tr>
                <td>
                  <a href={`/portal/runs/${run.id}`}>{run.id.slice(0, 12)}…</a>
                </td>
                <td>{run.stackName}</td>
                <td>{run.nodeId ? `node ${addressOf.get(run.nodeId) ?? run.nodeId}` : 'whole cluster'}</td>
                <td>
                  <RunState state={run.state} />
                </td>
                <td>{time(run.createdAt)}</td>
                <td>{time(run.finishedAt)}</td>
                <td>{run.publicUrl ? <a href={run.publicUrl}>{run.publicUrl}</a> : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {runs.length === 0 && (
        <p class="muted">
          No runs yet: pick a stack in the <a href="/portal/stacks">catalog</a> and apply it here.
        </p>
      )}
    </Page>
  );
}
