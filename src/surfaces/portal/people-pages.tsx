import { PROJECT_VISIBILITIES, ROLES } from '../../shared/db/schema.js';
import type { Actor } from '../../platform/people/permissions.js';
import { canManageProject } from '../../platform/people/permissions.js';
import type { UserRow } from '../../platform/people/users.js';
import type { ProjectRow } from '../../platform/orgs/projects.js';
import { Notice, Page } from './layout.js';
import type { Viewer } from './layout.js';

const date = (at: Date) => at.toISOString().slice(0, 10);

/**
 * The projects the viewer sees; anyone adds one, creators, owners and admins change or delete
 * theirs.
 */
export function ProjectsPage({
  viewer,
  actor,
  projects,
  error,
  notice,
}: {
  viewer: Viewer;
  actor: Actor;
  projects: ProjectRow[];
  error?: string;
  notice?: string;
}) {
  return (
    <Page title="Projects" user={viewer} current="projects">
      <h1>Projects</h1>
      {error && <Notice kind="error">{error}</Notice>}
      {notice && <Notice kind="ok">{notice}</Notice>}
      <p class="muted">
        Send a project's id in <code>X-Project-ID</code> to book a request's usage to it.
      </p>
      <div class="table-wrap" tabindex={0} role="region" aria-label="Table (scrolls sideways on a narrow screen)">
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Id</th>
              <th scope="col">Visibility</th>
              <th scope="col">Description</th>
              <th scope="col">Created</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {projects.map((project) => (
              <tr>
                <td>
                  {project.name} <a href={`/portal/budgets/project/${project.id}`}>budget</a>
                </td>
                <td>
                  <code>{project.id}</code>
                </td>
                <td>{project.visibility}</td>
                <td class="wrap">{project.description || '—'}</td>
                <td>{date(project.createdAt)}</td>
                <td>
                  {canManageProject(actor, project) ? (
                    <form
                      method="post"
                      action={`/portal/projects/${project.id}/delete`}
                      data-confirm={`Delete the project “${project.name}”?`}
                    >
                      <input type="hidden" name="_csrf" value={viewer.csrf} />
                      <button type="submit" class="secondary" aria-label={`Delete project ${project.name}`}>
                        Delete
                      </button>
                    </form>
                  ) : (
                    '—'
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {projects.length === 0 && <p class="muted">No projects yet.</p>}
      <h2>Add a project</h2>
      <form method="post" action="/portal/projects" class="panel">
        <input type="hidden" name="_csrf" value={viewer.csrf} />
        <label for="project-name">Name</label>
        <input id="project-name" name="name" type="text" required maxlength={200} />
        <label for="project-description">Description</label>
        <input id="project-description" name="description" type="text" maxlength={2000} />
        <label for="project-visibility">Visibility</label>
        <select id="project-visibility" name="visibility">
          {PROJECT_VISIBILITIES.map((visibility) => (
            <option value={visibility}>
              {visibility === 'public' ? 'Public: everyone in the organization' : 'Private: you, owners and admins'}
            </option>
          ))}
        </select>
        <p>
          <button type="submit">Add project</button>
        </p>
      </form>
    </Page>
  );
}

/**
 * The organization's users; owners and admins add, change and delete them (the rules of
 * `people/permissions.ts`).
 */
export function UsersPage({
  viewer,
  actor,
  users,
  error,
  notice,
}: {
  viewer: Viewer;
  actor: Actor;
  users: UserRow[];
  error?: string;
  notice?: string;
}) {
  const manages = actor.role !== 'member' || actor.platformAdmin;
  return (
    <Page title="Users" user={viewer} current="users">
      <h1>Users</h1>
      {error && <Notice kind="error">{error}</Notice>}
      {notice && <Notice kind="ok">{notice}</Notice>}
      <div class="table-wrap" tabindex={0} role="region" aria-label="Table (scrolls sideways on a narrow screen)">
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Since</th>
              {manages && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {users.map((user) => (
              <tr>
                <td>{user.name}</td>
                <td>{user.email}</td>
                <td>
                  {manages && user.id !== actor.userId ? (
                    <form method="post" action={`/portal/users/${user.id}/role`} class="actions">
                      <input type="hidden" name="_csrf" value={viewer.csrf} />
                      <select name="role" aria-label={`Role of ${user.name}`}>
                        {ROLES.map((role) => (
                          <option value={role} selected={role === user.role}>
                            {role}
                          </option>
                        ))}
                      </select>
                      <button type="submit" class="secondary" aria-label={`Save the role of ${user.name}`}>
                        Save
                      </button>
                    </form>
                  ) : (
                    user.role
                  )}
                </td>
                <td>{date(user.createdAt)}</td>
                {manages && (
                  <td>
                    {user.id !== actor.userId ? (
                      <form
                        method="post"
                        action={`/portal/users/${user.id}/delete`}
                        data-confirm={`Delete ${user.name}? Their sessions end and their keys stop working at once.`}
                      >
                        <input type="hidden" name="_csrf" value={viewer.csrf} />
                        <button type="submit" class="danger" aria-label={`Delete ${user.name}`}>
                          Delete
                        </button>
                      </form>
                    ) : (
                      'you'
                    )}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {manages && (
        <>
          <h2>Add a user</h2>
          <form method="post" action="/portal/users" class="panel">
            <input type="hidden" name="_csrf" value={viewer.csrf} />
            <label for="user-name">Name</label>
            <input id="user-name" name="name" type="text" required maxlength={200} />
            <label for="user-email">Email</label>
            <input id="user-email" name="email" type="email" required maxlength={254} />
            <label for="user-password">Password (8 to 128 characters)</label>
            <input
              id="user-password"
              name="password"
              type="password"
              required
              minlength={8}
              maxlength={128}
              autocomplete="new-password"
            />
            <label for="user-role">Role</label>
            <select id="user-role" name="role">
              {ROLES.filter((role) => role !== 'owner' || actor.role === 'owner' || actor.platformAdmin).map((role) => (
                <option value={role} selected={role === 'member'}>
                  {role}
                </option>
              ))}
            </select>
            <p>
              <button type="submit">Add user</button>
            </p>
          </form>
        </>
      )}
    </Page>
  );
}
