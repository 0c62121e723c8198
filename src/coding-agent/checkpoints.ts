import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { resolvesInside } from './tools/paths.js';

/** Turns whose file changes `/undo` can take back, the latest kept (older checkpoints are dropped). */
export const UNDO_TURNS = 20;

/**
 * A file as it was before a turn changed it: its bytes, absent (the turn created it), or too large
 * to keep.
 */
type Before = { kind: 'content'; bytes: Buffer } | { kind: 'absent' } | { kind: 'too-large'; size: number };

/**
 * Checkpoints of the files each turn changes, taken just before the first
 * change of each file in the turn (so a turn that changes nothing keeps
 * none). Held in memory for the run of the agent; commands (`run_command`)
 * are not covered: what a shell command changes is not known.
 *
 * @example
 * checkpoints.begin();
 * await checkpoints.keep(['/home/me/app/a.ts']); // before writing it
 * const said = await checkpoints.undo(root);     // 'restored a.ts'
 */
export class Checkpoints {
  private readonly turns: Map<string, Before>[] = [];
  private current: Map<string, Before> | null = null;

  constructor(private readonly fileBytes: number) {}

  /** A new turn: its checkpoint is made at its first file change. */
  begin(): void {
    this.current = null;
  }

  /** Keeps `files` as they are now, unless this turn kept them already. */
  async keep(files: string[]): Promise<void> {
    if (this.current === null) {
      this.current = new Map();
      this.turns.push(this.current);
      if (this.turns.length > UNDO_TURNS) this.turns.shift();
    }
    for (const file of files) if (!this.current.has(file)) this.current.set(file, await this.before(file));
  }

  /** Puts back the files of the latest turn with changes; answers what it did, one line a file. */
  async undo(root: string): Promise<string[] | null> {
    const turn = this.turns.pop();
    if (this.current === turn) this.current = null;
    if (!turn) return null;
    const done: string[] = [];
    for (const [file, before] of turn) {
      const shown = path.relative(root, file);
      // The path may have become a link out of the project since: nothing is written through it.
      if (!(await resolvesInside(root, file))) done.push(`not restored: ${shown} now leads outside the project`);
      else if (before.kind === 'too-large')
        done.push(`not restored: ${shown} (${before.size} bytes, more than file_bytes, was not kept)`);
      else if (before.kind === 'absent') {
        await rm(file, { force: true });
        done.push(`removed ${shown} (the turn created it)`);
      } else {
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, before.bytes);
        done.push(`restored ${shown}`);
      }
    }
    return done;
  }

  clear(): void {
    this.turns.length = 0;
    this.current = null;
  }

  private async before(file: string): Promise<Before> {
    try {
      const { size } = await stat(file);
      if (size > this.fileBytes) return { kind: 'too-large', size };
      return { kind: 'content', bytes: await readFile(file) };
    } catch {
      return { kind: 'absent' };
    }
  }
}
