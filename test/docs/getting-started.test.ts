import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseEngineDefinitions } from '../../src/gateway/engines/definitions.js';
import { freePort, repoRoot } from '../helpers/processes.js';

/**
 * The getting-started page's commands run as written: every `sh` block marked `<!--
 * getting-started-script -->` in docs/getting-started.md, in order, as one script, in bash with
 * `-e` and `pipefail`, in a fresh folder, as a newcomer would type them. What a reader does by hand
 * is done by small stand-ins, and only that: `npm ci` is already done by this checkout; `npm
 * start`, which a reader runs in a terminal of its own and stops with Ctrl-C before starting again,
 * runs in the background and stops the one before it; the key the reader copies from the start's
 * output is the one it printed; port 8080 and the simulator's 8001 are free ports of this machine.
 */

// Stops each process the page started, then waits (up to 30 s each) until it has exited: a gateway
// still closing its embedded database writes into the folder the clean-up is removing.
const stopAll = (pids: string) =>
  `for pid in $(cat "${pids}" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done; ` +
  `for pid in $(cat "${pids}" 2>/dev/null); do for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done; done`;

function shims(repo: string, pids: string, log: string, port: number): string {
  return `
npx() { if [ "$1" = tollgate ]; then shift; node "${repo}/bin/tollgate.mjs" "$@"; else command npx "$@"; fi; }
npm() {
  case "$1" in
    ci) ;;
    start)
      if [ -s "${pids}.gateway" ]; then old=$(cat "${pids}.gateway"); kill "$old"; while kill -0 "$old" 2>/dev/null; do sleep 0.1; done; fi
      TOLLGATE_ENGINES_FILE="\${TOLLGATE_ENGINES_FILE:-${repo}/engines/engines.json}" PORT=${port} \\
        node "${repo}/dist/main.js" >>"${log}" 2>&1 &
      echo $! >"${pids}.gateway"; echo $! >>"${pids}"
      for _ in $(seq 1 600); do curl -sf http://127.0.0.1:${port}/health/ready >/dev/null && return 0; sleep 0.1; done
      cat "${log}" >&2; return 1 ;;
    run) if [ "$2" = sim ]; then shift 3; echo $BASHPID >>"${pids}"; exec node "${repo}/dist/sim/main.js" "$@" >>"${log}.sim" 2>&1; fi; command npm "$@" ;;
    *) command npm "$@" ;;
  esac
}
`;
}

describe('docs/getting-started.md', () => {
  let folder = '';
  afterAll(async () => {
    if (folder === '') return;
    spawnSync('bash', ['-c', stopAll(path.join(folder, 'pids'))]);
    await rm(folder, { recursive: true, force: true });
  });

  it('every command of the page exits 0, in order, in a fresh folder', async () => {
    folder = await mkdtemp(path.join(os.tmpdir(), 'tollgate-getting-started-'));
    const [port, simPort] = [await freePort(), await freePort()];
    const page = await readFile(path.join(repoRoot, 'docs/getting-started.md'), 'utf8');
    const markers = page.match(/<!-- getting-started-script -->/g) ?? [];
    const blocks = [...page.matchAll(/<!-- getting-started-script -->\n```sh\n([\s\S]*?)```/g)].map(
      (match) => match[1]!,
    );
    expect(blocks.length, 'a marker not followed by an sh block').toBe(markers.length);
    // Every sh block of the page runs: what is not run is shown as text or JSON, not as a command.
    expect(page.match(/```sh\n/g)).toHaveLength(blocks.length);
    const log = path.join(folder, 'gateway.log');
    // One pass over the page's text, so nothing put in is read again: a free port or the folder's
    // random name may hold the digits 8001 or 8080 (38001 did, in CI).
    const stands: Record<string, string> = {
      'sk-gw-…': `$(grep -o 'sk-gw-[A-Za-z0-9_-]*' "${log}" | head -1)`,
      '8001': String(simPort),
      '127.0.0.1:8080': `127.0.0.1:${port}`,
    };
    const script = blocks.join('\n').replaceAll(/sk-gw-…|\b8001\b|127\.0\.0\.1:8080\b/g, (found) => stands[found]!);
    const work = path.join(folder, 'work');
    const run = spawnSync(
      'bash',
      [
        '-c',
        `mkdir -p "${work}" && cd "${work}" && bash -euxo pipefail -c "$0"`,
        shims(repoRoot, path.join(folder, 'pids'), log, port) + script,
      ],
      {
        env: {
          ...Object.fromEntries(
            Object.entries(process.env).filter(([key]) => !/^(TOLLGATE_|DATABASE_URL$|REDIS_URL$|PORT$)/.test(key)),
          ),
          TOLLGATE_URL: `http://127.0.0.1:${port}`,
          TOLLGATE_PASSWORD_COST: '10',
        },
        encoding: 'utf8',
        timeout: 90_000,
      },
    );
    expect(run.status, `${run.stderr.slice(-4000)}`).toBe(0);
    // curl exits 0 on an error answer: none of the page's requests got one.
    expect(run.stdout).not.toMatch(/"error":/);
    // The chat through the reader's own server was answered by it, and charged.
    expect(run.stdout).toMatch(/"model":"qwen-7b"/);
    expect(run.stdout).toMatch(/"usage":\{"prompt_tokens":\d+/);
  }, 180_000);

  // A GPU is needed to run them: the engines the page shows as JSON are at least ones the gateway
  // accepts.
  it('every engine it shows is one the gateway accepts', async () => {
    const page = await readFile(path.join(repoRoot, 'docs/getting-started.md'), 'utf8');
    const shown = [...page.matchAll(/```json\n([\s\S]*?)```/g)].map((match) => match[1]!);
    expect(shown.length).toBeGreaterThanOrEqual(2);
    for (const text of shown) {
      const file = text.trimStart().startsWith('{ "engines"') ? text : `{ "engines": [${text}] }`;
      expect(parseEngineDefinitions(file, 'docs/getting-started.md').length).toBeGreaterThan(0);
    }
  });
});
