import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTerminal, tmuxMissing } from '../../coding-agent/terminal.js';
import { batchFile, chatLine, startBatch } from '../../helpers/batches.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { repoRoot } from '../../helpers/processes.js';

const LINES = 12;
/** The lines of the file: `LINES` that run, and one of another url (failed on reading). */
const TOTAL = LINES + 1;
const screens = path.join(repoRoot, 'test-results', 'cli');

/**
 * `tollgate batches watch` in a real terminal (tmux), as a person sees it: a batch that takes some
 * seconds on the simulator, its progress bar seen part-way and at its end, at a normal width and a
 * narrow one. The screens are saved under test-results/cli/ to read.
 */
describe.skipIf(tmuxMissing !== null)('tollgate batches watch, in tmux', () => {
  let gateway: TestGateway;
  let client: OpenAI;
  let key: string;
  let tmp: string;

  beforeAll(async () => {
    // Two lines at a time, each about a second: the batch takes some seconds, and `watch` asks
    // every two.
    gateway = await startTestGateway('pglite', {
      TOLLGATE_BATCHES_CONCURRENCY: '2',
      TOLLGATE_SIM_TTFT_MS: '700',
      TOLLGATE_SIM_ITL_MS: '20',
    });
    key = (await gateway.tenant({ credit: '10.00', key: { requestsPerMinute: 100_000, maxConcurrency: 100 } })).secret;
    client = new OpenAI({ apiKey: key, baseURL: gateway.baseURL });
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-cli-watch-'));
    // A short command to type: the typed line itself fits a narrow terminal.
    await writeFile(
      path.join(tmp, 'tg'),
      `#!/bin/sh\nexec "${process.execPath}" "${path.join(repoRoot, 'bin/tollgate.mjs')}" "$@"\n`,
    );
    await chmod(path.join(tmp, 'tg'), 0o755);
    await mkdir(screens, { recursive: true });
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  for (const columns of [80, 40]) {
    it(`redraws one line in place at ${columns} columns, and ends on the final status and a clean prompt`, async () => {
      const file = Buffer.concat([
        batchFile(LINES, '/v1/chat/completions', chatLine),
        batchFile(1, '/v1/embeddings', chatLine, 'wrong-url'),
      ]);
      const batch = await startBatch(client, file, '/v1/chat/completions');
      const term = openTerminal(
        `watch-${columns}`,
        tmp,
        {
          TOLLGATE_URL: gateway.url,
          TOLLGATE_API_KEY: key,
          BATCH: batch.id,
        },
        { columns, rows: 30 },
      );
      const save = (moment: string) =>
        writeFile(path.join(screens, `batches-watch-${columns}-${moment}.txt`), term.rows());
      try {
        // The prompt a person sets (bash as root ignores PS1 from its environment), on a clear
        // screen.
        term.type("PS1='$ '; clear");
        term.press('Enter');
        await term.shows('the prompt', /^\$ ?$/m);
        term.type('./tg batches watch $BATCH; echo $?');
        term.press('Enter');

        // Part-way: some lines done, not all, while it runs.
        const partWay = new RegExp(`in_progress.*\\b([2-9]|1[0-2])/${TOTAL}\\b`);
        await term.shows('the bar part-way', partWay, 30_000);
        await save('part-way');
        expectOneBar(term.rows(), columns, 'in_progress');

        await term.shows('the end and the prompt', /^\d+\n\$ ?$/m, 40_000);
        await save('end');
        const rows = term.rows();
        expectOneBar(rows, columns, 'completed');
        const bar = barRow(rows);
        expect(bar, rows).toMatch(new RegExp(`\\b${TOTAL}/${TOTAL}\\b`));
        expect(bar, rows).toContain(`1 failed`);
        expect(bar, rows).toMatch(/\[#+\]/); // full
        // The bar ends with a newline: the batch's details start on the next row, the shell's
        // prompt on a row of its own after them.
        const lines = rows.trimEnd().split('\n');
        const at = lines.findIndex((line) => line === bar);
        expect(lines[at + 1], rows).toMatch(/^id:\s+batch_/);
        expect(lines.slice(-2), rows).toEqual(['0', '$']); // exit code 0, then the prompt
      } finally {
        term.close();
      }
    }, 90_000);
  }
});

const BAR = /\[[#.]+\]/;

/** The one row of the screen with the bar on it. */
function barRow(rows: string): string {
  return rows
    .split('\n')
    .find((row) => BAR.test(row))!
    .trimEnd();
}

/**
 * One row has the bar, whole (its status, the bar, done/total and failed) and short of the last
 * column; no other row has a bar or a count of it left behind by a redraw.
 */
function expectOneBar(rows: string, columns: number, status: string): void {
  const drawn = rows.split('\n').map((row) => row.trimEnd());
  expect(
    drawn.filter((row) => BAR.test(row)),
    rows,
  ).toHaveLength(1);
  expect(
    drawn.filter((row) => new RegExp(`\\d/${TOTAL}\\b`).test(row)),
    rows,
  ).toHaveLength(1);
  const bar = barRow(rows);
  expect(bar, rows).toMatch(
    new RegExp(`^(batch_[0-9a-f]+ )?${status} \\[[#.]+\\] \\d+/${TOTAL}( done)?, \\d+ failed$`),
  );
  expect(bar.length, rows).toBeLessThan(columns);
}
