import type { NodeRow, ProfileRow } from '../../platform/clusters/service.js';
import { Notice, Page, type Viewer } from './layout.js';
import { OperatorNav } from './operator-engines-pages.js';

const SCROLLS = '(scrolls sideways on a narrow screen)';
const nodeState = (node: NodeRow) => (node.clusterId ? 'allocated' : node.releasingClusterId ? 'releasing' : 'free');

/**
 * What a refused form had typed, to show again (never a private key); `form` names which form it
 * was.
 */
export type NodesForm = Partial<Record<string, string>>;

interface NodesView {
  viewer: Viewer;
  profiles: ProfileRow[];
  nodes: NodeRow[];
  notice?: string;
  error?: string;
  form: NodesForm;
}

/**
 * Hardware profiles with their free and allocated nodes, and every node (as
 * `tollgate profiles list` and `tollgate nodes list` show them), with the
 * CLI's actions: add a profile, add a node, change a node's SSH access,
 * release a node left releasing.
 */
export function OperatorNodesPage({ viewer, profiles, nodes, notice, error, form }: NodesView) {
  return (
    <Page title="Nodes and profiles" user={viewer} current="operator">
      <OperatorNav here="nodes" />
      <h1>Nodes and profiles</h1>
      {error && <Notice kind="error">{error}</Notice>}
      {notice && <Notice kind="ok">{notice}</Notice>}
      <p class="muted">
        Clusters take free nodes of one profile. The forms below do what <code>tollgate profiles add</code>,{' '}
        <code>tollgate nodes add</code>, <code>nodes update</code> and <code>nodes release</code> do, with the same
        checks.
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
                  <td>
                    {profile.gpusPerNode
                      ? `${profile.gpusPerNode} × ${profile.gpuModel ? profile.gpuModel : 'GPU'}`
                      : 'none'}
                  </td>
                  <td class="num fold">{profile.cpuCores || '—'}</td>
                  <td class="num fold">{profile.memoryGib || '—'}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {profiles.length === 0 && <p class="muted">No profile yet.</p>}
      <ProfileForm csrf={viewer.csrf} form={form.form === 'profile' ? form : {}} />
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
              <th scope="col">Release</th>
            </tr>
          </thead>
          <tbody>
            {nodes.map((node) => (
              <tr>
                <td class="wrap">{node.address}</td>
                <td class={nodeState(node) === 'free' ? 'state-active' : ''}>{nodeState(node)}</td>
                <td>{node.profile}</td>
                <td class="fold">
                  {node.sshUser ? `${node.access}, ssh as ${node.sshUser}, port ${node.sshPort ?? 22}` : node.access}
                </td>
                <td class="fold">
                  <code>{node.id}</code>
                </td>
                <td>{node.releasingClusterId ? <ReleaseForm csrf={viewer.csrf} node={node} /> : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {nodes.length === 0 && <p class="muted">No node yet.</p>}
      <NodeForm csrf={viewer.csrf} profiles={profiles} form={form.form === 'node' ? form : {}} />
      {nodes.length > 0 && <AccessForm csrf={viewer.csrf} nodes={nodes} form={form.form === 'access' ? form : {}} />}
    </Page>
  );
}

/** One labelled text field of a form, with what was typed. */
function Field({ form, prefix, name, label, ...input }: FieldProps) {
  return (
    <div>
      <label for={`${prefix}-${name}`}>{label}</label>
      <input id={`${prefix}-${name}`} name={name} type="text" value={form[name] ?? ''} {...input} />
    </div>
  );
}

interface FieldProps {
  form: NodesForm;
  /** Which form the field is on (`profile`, `node`, `access`): its id is `<prefix>-<name>`. */
  prefix: string;
  name: string;
  label: string;
  required?: boolean;
  placeholder?: string;
  inputmode?: 'numeric';
  maxlength?: number;
}

function ProfileForm({ csrf, form }: { csrf: string; form: NodesForm }) {
  return (
    <form method="post" action="/portal/operator/nodes/profiles" class="panel" aria-labelledby="add-profile">
      <h3 id="add-profile" class="first">
        Add a profile
      </h3>
      <input type="hidden" name="_csrf" value={csrf} />
      <div class="grid">
        <Field prefix="profile" name="name" label="Name" form={form} required maxlength={63} placeholder="a100x8" />
        <Field
          prefix="profile"
          name="gpus"
          label="GPUs per node"
          form={form}
          required
          inputmode="numeric"
          placeholder="8"
        />
        <Field
          prefix="profile"
          name="gpu_model"
          label="GPU model (optional)"
          form={form}
          maxlength={100}
          placeholder="A100 80GB"
        />
        <Field prefix="profile" name="cpus" label="CPU cores (optional)" form={form} inputmode="numeric" />
        <Field prefix="profile" name="memory_gib" label="Memory, GiB (optional)" form={form} inputmode="numeric" />
      </div>
      <p class="muted">GPUs per node are metered as GPU-hours; the rest is shown to the people choosing a profile.</p>
      <button type="submit">Add profile</button>
    </form>
  );
}

/** The SSH fields of the node and access forms; the private key is never shown again. */
function SshFields({ prefix, form }: { prefix: string; form: NodesForm }) {
  return (
    <div class="grid">
      <Field prefix={prefix} name="ssh_user" label="SSH user" form={form} placeholder="ops" />
      <Field prefix={prefix} name="ssh_port" label="SSH port" form={form} inputmode="numeric" placeholder="22" />
      <Field
        prefix={prefix}
        name="host_key_fingerprint"
        label="Host key fingerprint"
        form={form}
        placeholder="SHA256:…"
      />
      <Field prefix={prefix} name="run_user" label="Run user (optional)" form={form} />
      <div class="wide">
        <label for={`${prefix}-ssh_private_key`}>Private key (OpenSSH or PEM, unencrypted)</label>
        <textarea
          id={`${prefix}-ssh_private_key`}
          name="ssh_private_key"
          rows={4}
          spellcheck={false}
          autocomplete="off"
        ></textarea>
      </div>
    </div>
  );
}

function NodeForm({ csrf, profiles, form }: { csrf: string; profiles: ProfileRow[]; form: NodesForm }) {
  return (
    <form method="post" action="/portal/operator/nodes" class="panel" aria-labelledby="add-node">
      <h3 id="add-node" class="first">
        Add a node
      </h3>
      <input type="hidden" name="_csrf" value={csrf} />
      <div class="grid">
        <div>
          <label for="node-profile">Profile</label>
          <select id="node-profile" name="profile" required>
            {profiles.map((profile) => (
              <option value={profile.name} selected={form.profile === profile.name}>
                {profile.name}
              </option>
            ))}
          </select>
        </div>
        <Field
          prefix="node"
          name="address"
          label="Address (host name or IP)"
          form={form}
          required
          maxlength={253}
          placeholder="10.0.0.5"
        />
        <Field prefix="node" name="access" label="Access note (optional)" form={form} maxlength={500} />
      </div>
      <fieldset>
        <legend>SSH access (optional)</legend>
        <p class="muted">
          With it the platform installs each cluster's key on the node. It is checked by connecting once before the node
          is added: the host key must match the fingerprint (<code>ssh-keygen -lf</code>
          ), and the key is stored sealed.
        </p>
        <SshFields prefix="node" form={form} />
      </fieldset>
      <button type="submit">Add node</button>
    </form>
  );
}

function AccessForm({ csrf, nodes, form }: { csrf: string; nodes: NodeRow[]; form: NodesForm }) {
  return (
    <form method="post" action="/portal/operator/nodes/access" class="panel" aria-labelledby="change-access">
      <h3 id="change-access" class="first">
        Change a node's SSH access
      </h3>
      <p class="muted">
        A host key that changed, a new key or account: what you leave empty is kept. Checked by connecting once before
        it is stored.
      </p>
      <input type="hidden" name="_csrf" value={csrf} />
      <label for="access-node">Node</label>
      <select id="access-node" name="node" required>
        {nodes.map((node) => (
          <option value={node.id} selected={form.node === node.id}>
            {node.address} ({node.profile})
          </option>
        ))}
      </select>
      <SshFields prefix="access" form={form} />
      <button type="submit">Save access</button>
    </form>
  );
}

/**
 * Free a node a deleted cluster's key is still on: retry the removal, or with force free it without
 * removing the key.
 */
function ReleaseForm({ csrf, node }: { csrf: string; node: NodeRow }) {
  return (
    <form method="post" action="/portal/operator/nodes/release" class="actions">
      <input type="hidden" name="_csrf" value={csrf} />
      <input type="hidden" name="node" value={node.id} />
      <span class="check">
        <input id={`force-${node.id}`} name="force" type="checkbox" value="true" />
        <label for={`force-${node.id}`}>without removing the key</label>
      </span>
      <button type="submit" class="secondary" aria-label={`Release ${node.address}`}>
        Release
      </button>
    </form>
  );
}
