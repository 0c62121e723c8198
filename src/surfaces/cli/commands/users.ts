// `users create|list|get|update|delete`. A password is never a command-line
// argument (it would stay in the shell's history and show in the process
// list): it is piped with `--password-stdin`, or asked on the terminal with
// echo off, twice.
//
// @example
// printf '%s\n' "$PASSWORD" | tollgate users create --org org_123 --name Ada --email
// ada@example.com --password-stdin tollgate users update usr_123 --role admin --platform-admin
// false
import type { Role } from '../../../shared/db/schema.js';
import type { Args } from '../args.js';
import { segment } from '../client.js';
import { CliError, UsageError } from '../errors.js';
import { date, fields, table } from '../output.js';
import { askHidden, type Input, readAll } from '../terminal.js';
import { BOOLEAN, type Command, type List, STRING, type UserView } from './command.js';

const ROLES: readonly Role[] = ['owner', 'admin', 'member'];

// `password` is declared only to refuse it with a reason, instead of "Unknown option".
const passwordOptions = { 'password-stdin': BOOLEAN, password: STRING };

/**
 * The password for a create (always) or an update (with `--password-stdin`).
 * Piped: all of stdin, less one trailing newline. On a terminal: asked twice
 * with echo off, even under `--password-stdin`, so it never shows on screen.
 */
async function password(a: Args, input: Input): Promise<string> {
  if (input.stdin.isTTY) {
    const [first, second] = await askHidden(input, ['Password: ', 'Confirm password: ']);
    if (first === '') throw new CliError('no password entered');
    if (first !== second) throw new CliError('the passwords do not match; nothing was sent');
    return first!;
  }
  if (!a.flag('password-stdin'))
    throw new UsageError(
      'standard input is not a terminal, so the password cannot be asked: pipe it in with --password-stdin',
    );
  const text = (await readAll(input.stdin)).replace(/\r?\n$/, '');
  if (text === '') throw new UsageError('--password-stdin: standard input held no password');
  return text;
}

function refusePasswordArgument(a: Args): void {
  if (a.has('password')) {
    throw new UsageError(
      '--password is not accepted: a password on the command line stays in shell history and shows in the process list. Pipe it in with --password-stdin, or run in a terminal to be asked for it.',
    );
  }
}

const describe = (u: UserView) =>
  fields([
    ['id', u.id],
    ['name', u.name],
    ['email', u.email],
    ['role', u.role],
    ['org', u.org_id],
    ['platform admin', u.platform_admin ? 'yes' : 'no'],
    ['created', date(u.created_at)],
  ]);

const create: Command<UserView> = {
  name: 'users create',
  args: '--org ID --name N --email E [--role owner|admin|member] [--platform-admin] [--password-stdin]',
  summary:
    'Add a person to an organization. The password is asked on the terminal (twice, not shown) or piped with --password-stdin; never an argument.',
  options: { org: STRING, name: STRING, email: STRING, role: STRING, 'platform-admin': BOOLEAN, ...passwordOptions },
  request: async (a, input) => {
    refusePasswordArgument(a);
    const path = `/orgs/${segment(a.id('org', 'org'))}/users`;
    const body = {
      name: a.required('name'),
      email: a.required('email'),
      role: a.choice('role', ROLES),
      platform_admin: a.flag('platform-admin'),
    };
    return { method: 'POST', path, body: { ...body, password: await password(a, input) } };
  },
  render: (u) =>
    `Created user ${u.id} "${u.name}" <${u.email}>, ${u.role} of ${u.org_id}${u.platform_admin ? ', platform admin' : ''}.`,
};

const list: Command<List<UserView>> = {
  name: 'users list',
  args: '[--org ID]',
  summary: 'List users, of one organization or of all.',
  options: { org: STRING },
  request: (a) => ({
    method: 'GET',
    path: a.has('org') ? `/users?org_id=${encodeURIComponent(a.id('org', 'org'))}` : '/users',
  }),
  render: ({ data }) =>
    table([
      ['ID', 'NAME', 'EMAIL', 'ROLE', 'PLATFORM ADMIN', 'CREATED'],
      ...data.map((u) => [u.id, u.name, u.email, u.role, u.platform_admin ? 'yes' : 'no', date(u.created_at)]),
    ]),
};

const get: Command<UserView> = {
  name: 'users get',
  args: 'ID',
  summary: 'Show one user.',
  positionals: 1,
  request: (a) => ({ method: 'GET', path: `/users/${segment(a.id('user ID'))}` }),
  render: describe,
};

const update: Command<UserView> = {
  name: 'users update',
  args: 'ID [--name N] [--email E] [--role owner|admin|member] [--platform-admin true|false] [--password-stdin]',
  summary: "Change a user's name, email, role, platform admin flag or (with --password-stdin) password.",
  options: { name: STRING, email: STRING, role: STRING, 'platform-admin': STRING, ...passwordOptions },
  positionals: 1,
  request: async (a, input) => {
    refusePasswordArgument(a);
    const path = `/users/${segment(a.id('user ID'))}`;
    const body = {
      name: a.optional('name'),
      email: a.optional('email'),
      role: a.choice('role', ROLES),
      platform_admin: a.bool('platform-admin'),
    };
    const newPassword = a.flag('password-stdin');
    if (!newPassword && Object.values(body).every((value) => value === undefined))
      throw new UsageError('nothing to change: pass at least one of the flags below');
    return { method: 'PATCH', path, body: newPassword ? { ...body, password: await password(a, input) } : body };
  },
  render: describe,
};

const remove: Command<null> = {
  name: 'users delete',
  args: 'ID',
  summary: 'Delete a user.',
  positionals: 1,
  request: (a) => ({ method: 'DELETE', path: `/users/${segment(a.id('user ID'))}` }),
  render: (_, a) => `deleted user ${a.id('user ID')}`,
};

export const userCommands = [create, list, get, update, remove];
