import { mkdtemp, chmod, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTool } from '../../../src/platform/runs/tool.js';
import { apiAs } from '../../surfaces/api/harness.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { type GatewayProcess, startGatewayProcess } from '../../helpers/processes.js';
import { createTestDatabase, postgresAvailable, requireServices } from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';
import { zipOf } from '../../helpers/zip.js';
import { skippedWithout } from '../../helpers/skips.js';
import { OPERATOR, operatorCall, profileWithNodes, sandboxKinds, type SandboxKind } from './harness.js';
import { toolAndSandboxMissing } from './tool-and-sandbox.js';

/**
 * What a run leaves behind is untrusted: a member's stack, applied with the
 * real tool, replaces its state file with a link to the gateway's own
 * environment (which holds the operator token), a link to /dev/zero, a FIFO,
 * a 400 MB sparse file; prints a long log; declares a large output and one
 * holding a NUL; never exits. In each sandbox (bubblewrap, docker, none),
 * each run ends within its bound with a sentence naming the setting, the
 * gateway answers /v1 throughout in its usual memory, and the token is in no
 * answer, log, state given back to the next run, or the gateway's own log.
 *
 * Scaled to keep the suite quick (the tool itself is slow to print much): the
 * log bound is 1 MiB and the run prints 3 MiB; the outputs' bound is 256 KiB
 * and the output 512 KiB; the timeout is 15 s. The state cases share a stack
 * that has a state already (OpenTofu and Terraform remove a state file they
 * made empty). The gateway stores in PostgreSQL when one answers here (else
 * in the embedded store).
 */

type UntrustedKind = SandboxKind | { name: 'none'; env: Record<string, string> };

/**
 * The case of sandbox `name` (`none`: TOLLGATE_RUN_SANDBOX=none, beside a sandbox), or null where
 * it cannot run here, said with a warning (a failure under REQUIRE_SERVICES=1 when no sandbox or no
 * tool is here; a missing Docker engine is sandboxKinds' to say).
 */
export async function untrustedOutputKind(name: UntrustedKind['name']): Promise<UntrustedKind | null> {
  const kinds: UntrustedKind[] = await sandboxKinds();
  const missing = toolAndSandboxMissing(findTool({ pathList: process.env.PATH }), kinds.length);
  if (missing && requireServices)
    throw new Error(`REQUIRE_SERVICES=1 but the untrusted-output test cannot run: ${missing}`);
  if (missing) {
    console.warn(`skipping the untrusted-output test: ${missing}`);
    skippedWithout(`what a run leaves behind: ${missing}`);
    return null;
  }
  kinds.push({ name: 'none', env: { TOLLGATE_RUN_SANDBOX: 'none' } });
  const kind = kinds.find((candidate) => candidate.name === name) ?? null;
  if (!kind) skippedWithout(`what a run leaves behind (${name}): no ${name} sandbox here`);
  return kind;
}

const TIMEOUT_S = 15;
const GRACE_MS = 2000;
/**
 * A run is final within its timeout, the kill grace and 5 s to record it (the worker's bound), plus
 * the test's own polling.
 */
const FINAL_WITHIN_MS = TIMEOUT_S * 1000 + GRACE_MS + 5000 + 2000;
const SETTINGS = {
  TOLLGATE_RUN_TIMEOUT_SECONDS: String(TIMEOUT_S),
  TOLLGATE_RUN_KILL_GRACE_MS: String(GRACE_MS),
  TOLLGATE_RUN_LEASE_MS: '3000',
  TOLLGATE_RUN_WORKERS: '4',
  TOLLGATE_RUN_LOG_MB: '1',
  TOLLGATE_RUN_OUTPUTS_KB: '256',
};

/** Each case's script, run by the stack's provisioner after it printed the state the run was given. */
const CASES: Record<string, string> = {
  show: 'true',
  'link-secret': 'rm -f terraform.tfstate; ln -s /proc/self/environ terraform.tfstate; echo "hostile: state linked"',
  sparse: 'rm -f terraform.tfstate; truncate -s 400M terraform.tfstate; echo "hostile: state sparse"',
  'big-output': 'echo "hostile: a 512 KiB output"',
  'big-log': `yes "$(head -c 3999 /dev/zero | tr '\\0' x)" | head -c 3145728; echo; echo "hostile: printed 3 MiB"`,
  'nul-output': 'echo "hostile: an output with a NUL"',
  'never-exits': `trap '' INT TERM; echo "hostile: never ending"; while :; do sleep 1; done`,
  'link-zero': 'rm -f terraform.tfstate; ln -s /dev/zero terraform.tfstate; echo "hostile: state linked"',
  fifo: 'rm -f terraform.tfstate; mkfifo terraform.tfstate; echo "hostile: state a FIFO"',
};

/** The stacks: the state cases share one, each other case has its own. */
const STACKS = ['state', 'big-output', 'big-log', 'nul-output', 'never-exits'];

const MODULE = `
variable "attack" { type = string }
resource "terraform_data" "attack" {
  triggers_replace = [var.attack, timestamp()]
  provisioner "local-exec" {
    interpreter = ["/bin/bash", "-c"]
    command     = <<-EOT
echo "hostile: previous state: $(head -c 100000 terraform.tfstate 2>/dev/null | tr '\\0\\n' '  ')"
case "$ATTACK" in
${Object.entries(CASES)
  .map(([name, script]) => `${name}) ${script} ;;`)
  .join('\n')}
esac
EOT
    environment = { ATTACK = var.attack }
  }
}
output "big" { value = var.attack == "big-output" ? format("%0524288d", 0) : "small" }
output "nul" { value = var.attack == "nul-output" ? "a\\u0000b" : "plain" }
`;

interface Target {
  gateway: GatewayProcess;
  /** The owner's key: /v1 is sampled with it (the member's polls its runs, within its hourly limit). */
  ownerKey: string;
  /**
   * Applies the case's stack; the run once final (or as last seen at the bound), how long it took,
   * its log, and every answer read.
   */
  apply(stack: string, attack?: string): Promise<{ run: any; ms: number; log: string; answers: string }>;
  close(): Promise<void>;
}

async function startTarget(env: Record<string, string>): Promise<Target> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-untrusted-data-'));
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-untrusted-runs-'));
  await chmod(workDir, 0o755);
  const database = (await postgresAvailable()) ? await createTestDatabase() : null;
  const gateway = await startGatewayProcess('untrusted-output', {
    ...(database ? { DATABASE_URL: database.url } : {}),
    TOLLGATE_DATA_DIR: dataDir,
    TOLLGATE_ADMIN_TOKEN: OPERATOR,
    TOLLGATE_PASSWORD_COST: '10',
    TOLLGATE_RUN_DIR: workDir,
    TOLLGATE_RUN_POLL_MS: '100',
    ...SETTINGS,
    ...env,
  });
  const close = async () => {
    await gateway.child.stop('SIGTERM');
    await database?.drop();
    await rm(dataDir, { recursive: true, force: true });
    await rm(workDir, { recursive: true, force: true });
  };
  try {
    const org = await operatorCall(gateway, 'POST', '/orgs', { name: 'hostile org' });
    const member = await operatorCall(gateway, 'POST', `/orgs/${org.body.id}/users`, {
      name: 'Mallory',
      email: 'mallory@example.com',
      password: 'correct horse battery',
      role: 'member',
    });
    const key: string = (
      await operatorCall(gateway, 'POST', `/orgs/${org.body.id}/keys`, { name: 'mallory', user_id: member.body.id })
    ).body.secret;
    const owner = await operatorCall(gateway, 'POST', `/orgs/${org.body.id}/users`, {
      name: 'Olive',
      email: 'olive@example.com',
      password: 'correct horse battery',
      role: 'owner',
    });
    const ownerKey = await operatorCall(gateway, 'POST', `/orgs/${org.body.id}/keys`, {
      name: 'olive',
      user_id: owner.body.id,
    });
    const profile = await profileWithNodes(gateway, 1);
    const cluster = await apiAs(gateway as unknown as TestGateway, ownerKey.body.secret)('POST', '/clusters', {
      name: 'victim',
      profile,
      nodes: 1,
      public_domain: `${profile}.example.test`,
    });
    expect(cluster.status).toBe(201);
    const call = apiAs(gateway as unknown as TestGateway, key);
    for (const name of STACKS) {
      const form = new FormData();
      form.set(
        'package',
        new Blob([new Uint8Array(await zipOf({ [`hostile-${name}/main.tf`]: MODULE }))], { type: 'application/zip' }),
        `hostile-${name}.zip`,
      );
      expect(
        (
          await fetch(`${gateway.url}/api/v1/stacks`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}` },
            body: form,
          })
        ).status,
      ).toBe(201);
    }
    return {
      gateway,
      ownerKey: ownerKey.body.secret,
      async apply(name, attack = name) {
        const from = Date.now();
        const queued = await call('POST', `/clusters/${cluster.body.id}/runs`, {
          stack: `hostile-${name}`,
          inputs: { attack },
        });
        expect(queued.status, JSON.stringify(queued.body)).toBe(201);
        let run: any = queued.body;
        await until(
          `run ${run.id} (${name}) is final`,
          async () => {
            run = (await call('GET', `/runs/${queued.body.id}`)).body;
            return ['APPLIED', 'FAILED', 'CANCELED'].includes(run.state);
          },
          // Polled every 250 ms: the key's 1,000 requests an hour are shared by every run of this
          // file.
          { timeout: FINAL_WITHIN_MS, interval: 250, detail: () => run },
        ).catch(() => {});
        const ms = Date.now() - from;
        const response = await fetch(`${gateway.url}/api/v1/runs/${run.id}/log`, {
          headers: { authorization: `Bearer ${key}` },
          signal: AbortSignal.timeout(20_000),
        });
        const log = await response.text();
        expect(response.status).toBe(200);
        const list = await (
          await fetch(`${gateway.url}/api/v1/clusters/${cluster.body.id}/runs`, {
            headers: { authorization: `Bearer ${key}` },
          })
        ).text();
        return { run, ms, log, answers: `${JSON.stringify(run)}\n${list}\n${log}` };
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * The cases in sandbox `kind`, one gateway for them all; nothing where `kind` is null (see
 * `untrustedOutputKind`). One file a sandbox, so the three run beside each other.
 */
export function describeUntrustedOutput(kind: UntrustedKind | null): void {
  if (kind) describeIn(kind);
}

function describeIn(kind: UntrustedKind): void {
  describe(`what a run leaves behind is untrusted (${kind.name})`, () => {
    let target: Target;
    const rss: number[] = [];
    const answers: Array<{ status: number; ms: number }> = [];
    let sent = 0;
    let sampler: NodeJS.Timeout;

    beforeAll(async () => {
      target = await startTarget(kind.env);
      sampler = setInterval(() => {
        void readFile(`/proc/${target.gateway.child.pid}/status`, 'utf8').then(
          (status) => rss.push(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024),
          () => {},
        );
        const at = Date.now();
        sent++;
        void fetch(`${target.gateway.url}/v1/models`, {
          headers: { authorization: `Bearer ${target.ownerKey}` },
          signal: AbortSignal.timeout(10_000),
        }).then(
          (response) => answers.push({ status: response.status, ms: Date.now() - at }),
          () => answers.push({ status: 0, ms: Date.now() - at }),
        );
      }, 250);
    }, 60_000);

    afterAll(async () => {
      clearInterval(sampler);
      await target?.close();
    });

    /** The operator token (in the gateway's environment) is in nothing the member reads. */
    const noSecret = (text: string) => expect(text.includes(OPERATOR), 'the operator token in an answer').toBe(false);

    it('a state linked to the gateway environment: not kept, never given back; the run fails naming why', async () => {
      // A state to keep first: the tool removes a state file it made empty, link and all.
      expect((await target.apply('state', 'show')).run.state).toBe('APPLIED');
      const { run, ms, answers } = await target.apply('state', 'link-secret');
      noSecret(answers);
      expect(ms).toBeLessThan(FINAL_WITHIN_MS);
      expect(run.state, run.failure).toBe('FAILED');
      expect(run.failure).toContain('not a regular file');
      // The next run is given the state kept: the token would be in its log.
      const next = await target.apply('state', 'show');
      noSecret(next.answers);
      expect(next.log).toContain('hostile: previous state: {');
    }, 90_000);

    it('a 400 MB sparse state: refused past TOLLGATE_RUN_STATE_MB', async () => {
      const { run, ms, answers } = await target.apply('state', 'sparse');
      noSecret(answers);
      expect(ms).toBeLessThan(FINAL_WITHIN_MS);
      expect(run.state, run.failure).toBe('FAILED');
      expect(run.failure).toContain('TOLLGATE_RUN_STATE_MB');
    }, 60_000);

    it('a 512 KiB output: applied without it, past TOLLGATE_RUN_OUTPUTS_KB (256); the run and its list stay small', async () => {
      const { run, ms, log, answers } = await target.apply('big-output');
      noSecret(answers);
      expect(ms).toBeLessThan(FINAL_WITHIN_MS);
      expect(run.state, run.failure).toBe('APPLIED');
      expect(run.outputs).toBeNull();
      expect(log).toContain('TOLLGATE_RUN_OUTPUTS_KB');
      // The run and the runs list hold no output past the bound (the log, cut at its own bound,
      // shows what apply printed).
      expect(JSON.stringify(run).length).toBeLessThan(16 * 1024);
    }, 60_000);

    it('3 MiB of log: cut at TOLLGATE_RUN_LOG_MB, saying so; the run goes on and ends', async () => {
      const { run, ms, log } = await target.apply('big-log');
      expect(ms).toBeLessThan(FINAL_WITHIN_MS);
      expect(run.state, run.failure).toBe('APPLIED');
      expect(Buffer.byteLength(log)).toBeLessThan(1024 * 1024 + 64 * 1024);
      expect(log).toContain('TOLLGATE_RUN_LOG_MB');
      expect(log).toMatch(/Applied\./);
    }, 60_000);

    it('an output holding a NUL: escaped and stored; the run is final', async () => {
      const { run, ms } = await target.apply('nul-output');
      expect(ms).toBeLessThan(FINAL_WITHIN_MS);
      expect(run.state, run.failure).toBe('APPLIED');
      expect(run.outputs.nul).toBe('a\\u0000b');
    }, 60_000);

    it('a tool that never exits: FAILED within the timeout and the kill grace', async () => {
      const { run, ms } = await target.apply('never-exits');
      expect(ms).toBeLessThan(FINAL_WITHIN_MS);
      expect(run.state, run.failure).toBe('FAILED');
      expect(run.failure).toContain(`longer than ${TIMEOUT_S} s`);
    }, 60_000);

    it('a state linked to /dev/zero, and a FIFO: not read; each run fails naming why', async () => {
      for (const name of ['link-zero', 'fifo']) {
        const { run, ms, answers } = await target.apply('state', name);
        noSecret(answers);
        expect(ms, name).toBeLessThan(FINAL_WITHIN_MS);
        expect(run.state, `${name}: ${run.failure}`).toBe('FAILED');
        expect(run.failure, name).toContain('not a regular file');
      }
    }, 90_000);

    it('the gateway answered /v1 throughout, in its usual memory, and logged no secret', async () => {
      clearInterval(sampler);
      await until('every /v1 request sent has settled', () => answers.length === sent, { timeout: 15_000 });
      const baseline = rss[0]!;
      console.info(
        `${kind.name}: gateway RSS ${baseline.toFixed(0)} MiB at the start, at most ${Math.max(...rss).toFixed(0)} MiB; /v1 slowest ${Math.max(...answers.map((a) => a.ms))} ms over ${answers.length} requests`,
      );
      expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
      expect(Math.max(...rss)).toBeLessThan(baseline + 150);
      noSecret(target.gateway.child.output());
    });
  });
}
