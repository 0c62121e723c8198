import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { z } from 'zod';

/** A conversation kept on disk, one JSON file per session, so it can be resumed. */
export interface Session {
  id: string;
  /** The project folder it was started in (`--continue` resumes the latest of the folder). */
  cwd: string;
  model: string;
  createdAt: string;
  updatedAt: string;
  /** The first task, as a title in listings. */
  title: string;
  messages: ChatCompletionMessageParam[];
  totals: { requests: number; promptTokens: number; completionTokens: number; costNanos: string };
  /**
   * The gateway's ids of every call of the session, a cancelled one too: `/cost` reads their usage
   * records.
   */
  requestIds?: string[];
}

const ID = /^\d{8}-\d{6}-[0-9a-f]{6}$/;

const count = z.number().int().nonnegative();
/**
 * What a session file must hold to be resumed: its messages are the model's, its totals the agent's
 * (checked loosely).
 */
const sessionFile = z.object({
  id: z.string().regex(ID),
  cwd: z.string().min(1),
  model: z.string().min(1),
  createdAt: z.string(),
  updatedAt: z.string(),
  title: z.string(),
  messages: z.array(z.object({ role: z.string() }).loose()),
  totals: z.object({
    requests: count,
    promptTokens: count,
    completionTokens: count,
    costNanos: z.string().regex(/^\d+$/),
  }),
  requestIds: z.array(z.string()).optional(),
});

/**
 * The sessions folder. Files are written whole (a temporary file renamed
 * over) and readable only by their owner: a conversation holds code and
 * command output.
 *
 * @example
 * const store = new SessionStore('/home/me/.config/tollgate/sessions');
 * const latest = await store.latest(process.cwd());
 */
export class SessionStore {
  constructor(readonly folder: string) {}

  create(cwd: string, model: string): Session {
    const now = new Date();
    const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
    const id = `${stamp}-${randomBytes(3).toString('hex')}`;
    return {
      id,
      cwd,
      model,
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
      title: '',
      messages: [],
      totals: { requests: 0, promptTokens: 0, completionTokens: 0, costNanos: '0' },
    };
  }

  async save(session: Session): Promise<void> {
    session.updatedAt = new Date().toISOString();
    await mkdir(this.folder, { recursive: true, mode: 0o700 });
    const file = this.fileOf(session.id);
    const temporary = `${file}.${process.pid}.tmp`;
    await writeFile(temporary, JSON.stringify(session), { mode: 0o600 });
    await rename(temporary, file);
  }

  /** The session of `id`; an id of another shape is refused, so `--session ../x` names no file. */
  async load(id: string): Promise<Session> {
    if (!ID.test(id))
      throw new Error(`"${id}" is not a session id (they look like 20260131-120000-a1b2c3; see --list-sessions)`);
    const file = this.fileOf(id);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      throw new Error(`no session ${id} in ${this.folder}`);
    }
    const malformed = (what: string) => new Error(`${file} is not a session tollgate code can resume: ${what}`);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw malformed('not JSON');
    }
    const read = sessionFile.safeParse(json);
    if (!read.success) throw malformed(problemOf(read.error));
    if (read.data.id !== id) throw malformed(`id: it says ${read.data.id}, its file name ${id}`);
    return read.data as Session;
  }

  /** Every session, the latest first. */
  async list(): Promise<Session[]> {
    let names: string[];
    try {
      names = await readdir(this.folder);
    } catch {
      return [];
    }
    const ids = names
      .filter((name) => name.endsWith('.json') && ID.test(name.slice(0, -5)))
      .map((name) => name.slice(0, -5));
    const sessions = await Promise.all(ids.map((id) => this.load(id).catch(() => null)));
    return sessions.filter((s): s is Session => s !== null).sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
  }

  /** The latest session started in `cwd`, if any. */
  async latest(cwd: string): Promise<Session | undefined> {
    return (await this.list()).find((session) => session.cwd === cwd);
  }

  private fileOf(id: string): string {
    return path.join(this.folder, `${id}.json`);
  }
}

/** The first problem of a session file, as `field: what` (`id: missing`). */
function problemOf(error: z.ZodError): string {
  const issue = error.issues[0]!;
  const where = issue.path.join('.') || 'the file';
  return issue.code === 'invalid_type' && issue.input === undefined
    ? `${where}: missing`
    : `${where}: ${issue.message}`;
}
