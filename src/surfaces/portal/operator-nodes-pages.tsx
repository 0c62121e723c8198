import type { NodeRow, ProfileRow } from '../../platform/clusters/service.js';
import { Page, type Viewer } from './layout.js';
import { OperatorNav } from './operator-engines-pages.js';

const SCROLLS = '(scrolls sideways on a narrow screen)';
const nodeState = (node: NodeRow) => (node.clusterId ? 'allocated' : node.releasingClusterId ? 'releasing' : 'free');

/** Hardware profiles with their free and allocated nodes, and every node: as `tollgate profiles list` and `tollgate nodes list` show them. */
export function OperatorNodesPage({ viewer, profiles, nodes }: { viewer: Viewer; profiles: ProfileRow[]; nodes: NodeRow[] }) {
  return (
    <Page title="Nodes and profiles" user={viewer} current="operator">
      <OperatorNav here="nodes" />
      <h1>Nodes and profiles</h1>
      <p class="muted">
        Clusters take free nodes of one profile. Add profiles and nodes (with their SSH access) with <code>tollgate profiles add</code> and <code>tollgate nodes add</code>.
      </p>
      <h2>Profiles</h2>
      <div class="table-wrap" tabindex={0} role="region" aria-label={`Profiles ${SCROLLS}`}>
        <table>
          <thead>
            <tr>
              <th scope="col">Profile</th>
              <th scope="col" class="num">
                Free
              </th>
              <th scope="col" class="num">
                Nodes
              </th>
              <th scope="col">GPUs per node</th>
              <th scope="col" class="num fold">
                CPU cores
              </th>
              <th scope="col" class="num fold">
                Memory (GiB)
              </th>
            </tr>
          </thead>
          <tbody>
            {profiles.map((profile) => {
              const mine = nodes.filter((node) => node.profile === profile.name);
              return (
                <tr>
                  <td>{profile.name}</td>
                  <td class="num">{mine.filter((node) => nodeState(node) === 'free').length}</td>
                  <td class="num">{mine.length}</td>
                  <td>{profile.gpusPerNode ? `${profile.gpusPerNode} × ${profile.gpuModel ? profile.gpuModel : 'GPU'}` : 'none'}</td>
                  <td class="num fold">{profile.cpuCores || '—'}</td>
                  <td class="num fold">{profile.memoryGib || '—'}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {profiles.length === 0 && <p class="muted">No profile yet.</p>}
      <h2>Nodes</h2>
      <div class="table-wrap" tabindex={0} role="region" aria-label={`Nodes ${SCROLLS}`}>
        <table>
          <thead>
            <tr>
              <th scope="col">Address</th>
              <th scope="col">State</th>
              <th scope="col">Profile</th>
              <th scope="col" class="fold">
                Access
              </th>
              <th scope="col" class="fold">
                Id
              </th>
            </tr>
          </thead>
          <tbody>
            {nodes.map((node) => (
              <tr>
                <td class="wrap">{node.address}</td>
                <td class={nodeState(node) === 'free' ? 'state-active' : ''}>{nodeState(node)}</td>
                <td>{node.profile}</td>
                <td class="fold">{node.sshUser ? `${node.access}, ssh as ${node.sshUser}, port ${node.sshPort ?? 22}` : node.access}</td>
                <td class="fold">
                  <code>{node.id}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {nodes.length === 0 && <p class="muted">No node yet.</p>}
    </Page>
  );
}
