import type { ClusterRow, NodeRow } from '../../platform/clusters/service.js';
import type { StackRow } from '../../platform/stacks/service.js';
import { STACK_CATEGORIES } from '../../platform/stacks/manifest.js';
import { Notice, Page } from './layout.js';
import type { Viewer } from './layout.js';
import { stackIconUrl } from './stack-icons.js';

/** A cluster the viewer may apply a stack to, with its nodes. */
export interface ApplyTarget {
  cluster: ClusterRow;
  nodes: NodeRow[];
}

/**
 * A stack's icon in a fixed square: an image fitted whole (never cropped), or our drawing of its
 * emoji (a neutral mark for any other, or none): no emoji font needed.
 */
function StackIcon({ icon, large }: { icon: string | null; large?: boolean }) {
  const size = large ? 'stack-icon large' : 'stack-icon';
  if (icon?.startsWith('https://')) {
    return (
      <span class={size}>
        <img src={icon} alt="" loading="lazy" referrerpolicy="no-referrer" />
      </span>
    );
  }
  return (
    <span class={size}>
      <img src={stackIconUrl(icon)} alt="" />
    </span>
  );
}

/**
 * The catalog as cards, with search on name, title and description and a category filter; and the
 * upload form.
 */
export function StacksPage({
  viewer,
  stacks,
  total,
  q,
  category,
  error,
  notice,
}: {
  viewer: Viewer;
  stacks: StackRow[];
  total: number;
  q: string;
  category: string;
  error?: string;
  notice?: string;
}) {
  return (
    <Page title="Stacks" user={viewer} current="stacks">
      <h1>Stack catalog</h1>
      {error && <Notice kind="error">{error}</Notice>}
      {notice && <Notice kind="ok">{notice}</Notice>}
      <form method="get" action="/portal/stacks" class="actions filters" role="search">
        <div>
          <label for="stack-q">Search</label>
          <input id="stack-q" name="q" type="text" value={q} maxlength={200} placeholder="Name, title or description" />
        </div>
        <div>
          <label for="stack-category">Category</label>
          <select id="stack-category" name="category">
            <option value="">All categories</option>
            {STACK_CATEGORIES.map((name) => (
              <option value={name} selected={name === category}>
                {name}
              </option>
            ))}
          </select>
        </div>
        <div>
          <button type="submit">Show</button>
        </div>
      </form>
      <p class="muted">
        {total} {total === 1 ? 'stack' : 'stacks'}
        {q || category ? ' match' : ''}.
      </p>
      <ul class="cards">
        {stacks.map((stack) => (
          <li class="card">
            <StackIcon icon={stack.icon} />
            <div>
              <h2>
                <a href={`/portal/stacks/${stack.name}`}>{stack.title}</a>
              </h2>
              <p class="card-text">{stack.description || 'No description.'}</p>
              <p class="muted">
                <span class="badge">{stack.category}</span> {stack.visibility === 'private' ? 'Private' : 'Global'} ·{' '}
                <code>{stack.name}</code>
              </p>
            </div>
          </li>
        ))}
      </ul>
      <h2>Add a stack</h2>
      <form method="post" action="/portal/stacks/upload" enctype="multipart/form-data" class="panel">
        <input type="hidden" name="_csrf" value={viewer.csrf} />
        <p class="muted">
          A .zip of an OpenTofu or Terraform module, with a <code>manifest.json</code> or without (then its variables
          become the inputs). Yours stays private to you unless you are a platform admin.
        </p>
        <label for="stack-package">Package (.zip)</label>
        <input id="stack-package" name="package" type="file" accept=".zip,application/zip" />
        <label for="stack-url">Or its https:// address</label>
        <input
          id="stack-url"
          name="url"
          type="text"
          inputmode="url"
          maxlength={2000}
          placeholder="https://example.com/stack.zip"
        />
        <p>
          <button type="submit">Add stack</button>
        </p>
      </form>
    </Page>
  );
}

/**
 * One stack: what it is, its inputs, a download where allowed, and the apply form made from its
 * declared inputs.
 */
export function StackPage({
  viewer,
  stack,
  targets,
  values,
  error,
  details,
  notice,
}: {
  viewer: Viewer;
  stack: StackRow;
  targets: ApplyTarget[];
  values?: Record<string, string>;
  error?: string;
  details?: string[];
  notice?: string;
}) {
  const applicable = targets.filter(
    ({ cluster }) => !stack.applicableProfiles || stack.applicableProfiles.includes(cluster.profile),
  );
  return (
    <Page title={stack.title} user={viewer} current="stacks">
      <p>
        <a href="/portal/stacks">← Catalog</a>
      </p>
      <div class="stack-head">
        <StackIcon icon={stack.icon} large />
        <div>
          <h1>{stack.title}</h1>
          <p class="muted">
            <span class="badge">{stack.category}</span> {stack.visibility === 'private' ? 'Private' : 'Global'} ·{' '}
            <code>{stack.name}</code>
          </p>
        </div>
      </div>
      {notice && <Notice kind="ok">{notice}</Notice>}
      {error && (
        <div class="notice error" role="alert">
          <p>{error}</p>
          {details && details.length > 0 && (
            <ul>
              {details.map((detail) => (
                <li>{detail}</li>
              ))}
            </ul>
          )}
        </div>
      )}
      <p>{stack.description || 'No description.'}</p>
      <p class="muted">
        Applies to{' '}
        {stack.applicableProfiles
          ? `the hardware profiles ${stack.applicableProfiles.join(', ')}`
          : 'every hardware profile'}
        .
      </p>
      <p>
        <a class="button secondary" href={`/api/v1/stacks/${stack.name}/download`} download={`${stack.name}.zip`}>
          Download .zip
        </a>
      </p>
      <h2>Inputs</h2>
      {stack.inputs.length === 0 ? (
        <p class="muted">It takes no inputs.</p>
      ) : (
        <div class="table-wrap" tabindex={0} role="region" aria-label="Inputs (scrolls sideways on a narrow screen)">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">Required</th>
                <th scope="col">Default</th>
                <th scope="col">Description</th>
              </tr>
            </thead>
            <tbody>
              {stack.inputs.map((input) => (
                <tr>
                  <td>
                    <code>{input.name}</code>
                  </td>
                  <td>{input.type}</td>
                  <td>{input.required ? 'yes' : 'no'}</td>
                  <td>{input.default === undefined ? '—' : String(input.default)}</td>
                  <td class="wrap">{input.description ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <h2>Apply</h2>
      {applicable.length === 0 ? (
        <p class="muted">
          {targets.length === 0
            ? 'Your organization has no running cluster yet.'
            : 'None of your clusters has a hardware profile this stack applies to.'}{' '}
          <a href="/portal/clusters">Clusters</a>
        </p>
      ) : (
        <form method="post" action={`/portal/stacks/${stack.name}/apply`} class="panel">
          <input type="hidden" name="_csrf" value={viewer.csrf} />
          <label for="apply-target">Target</label>
          <select id="apply-target" name="target" required>
            {applicable.map(({ cluster, nodes }) => (
              <optgroup label={`${cluster.name} (${cluster.profile})`}>
                <option value={`cluster:${cluster.id}`} selected={values?.target === `cluster:${cluster.id}`}>
                  {`${cluster.name}: the whole cluster (${nodes.length} nodes)`}
                </option>
                {nodes.map((node) => (
                  <option
                    value={`node:${cluster.id}:${node.id}`}
                    selected={values?.target === `node:${cluster.id}:${node.id}`}
                  >
                    {`${cluster.name}: node ${node.address}`}
                  </option>
                ))}
              </optgroup>
            ))}
          </select>
          {stack.inputs.map((input) => (
            <div>
              <label for={`input-${input.name}`}>
                {input.name}
                {input.required ? ' (required)' : ''}
              </label>
              <input
                id={`input-${input.name}`}
                name={`input.${input.name}`}
                type={input.type === 'number' ? 'number' : 'text'}
                step={input.type === 'number' ? 'any' : undefined}
                required={input.required && input.default === undefined}
                value={values?.[`input.${input.name}`] ?? (input.default === undefined ? '' : String(input.default))}
                aria-describedby={input.description ? `input-${input.name}-help` : undefined}
              />
              {input.description && (
                <p class="muted hint" id={`input-${input.name}-help`}>
                  {input.description}
                </p>
              )}
            </div>
          ))}
          <p>
            <button type="submit">Apply {stack.title}</button>
          </p>
        </form>
      )}
    </Page>
  );
}
