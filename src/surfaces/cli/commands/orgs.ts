import { segment } from '../client.js';
import { date, table } from '../output.js';
import { type Command, type List, type OrgView, type ProjectView, STRING } from './command.js';

// `orgs create|list` and `projects create|list`.
//
// @example
// tollgate orgs create --name Acme
// tollgate projects create --org org_123 --name search

const createOrg: Command<OrgView> = {
  name: 'orgs create',
  args: '--name N',
  summary: 'Create an organization with an empty wallet.',
  options: { name: STRING },
  request: (a) => ({ method: 'POST', path: '/orgs', body: { name: a.required('name') } }),
  render: (org) => `Created organization ${org.id} "${org.name}" (balance ${org.balance} ${org.currency}).`,
};

const listOrgs: Command<List<OrgView>> = {
  name: 'orgs list',
  args: '',
  summary: 'List organizations and their balances.',
  request: () => ({ method: 'GET', path: '/orgs' }),
  render: ({ data }) =>
    table([
      ['ID', 'NAME', 'BALANCE', 'CREATED'],
      ...data.map((o) => [o.id, o.name, `${o.balance} ${o.currency}`, date(o.created_at)]),
    ]),
};

const createProject: Command<ProjectView> = {
  name: 'projects create',
  args: '--org ID --name N',
  summary: 'Create a project in an organization.',
  options: { org: STRING, name: STRING },
  request: (a) => ({
    method: 'POST',
    path: `/orgs/${segment(a.id('org', 'org'))}/projects`,
    body: { name: a.required('name') },
  }),
  render: (p) => `Created project ${p.id} "${p.name}" in ${p.org_id}.`,
};

const listProjects: Command<List<ProjectView>> = {
  name: 'projects list',
  args: '--org ID',
  summary: "List an organization's projects.",
  options: { org: STRING },
  request: (a) => ({ method: 'GET', path: `/orgs/${segment(a.id('org', 'org'))}/projects` }),
  render: ({ data }) => table([['ID', 'NAME', 'CREATED'], ...data.map((p) => [p.id, p.name, date(p.created_at)])]),
};

export const orgCommands = [createOrg, listOrgs, createProject, listProjects];
