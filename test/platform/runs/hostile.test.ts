import { constants } from 'node:fs';
import { access, chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTool } from '../../../src/platform/runs/tool.js';
import { apiAs } from '../../surfaces/api/harness.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { type GatewayProcess, startGatewayProcess } from '../../helpers/processes.js';
import { requireServices } from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';
import { zipOf } from '../../helpers/zip.js';
import { OPERATOR, operatorCall, profileWithNodes, runEnded, sandboxKinds } from './harness.js';
import { toolAndSandboxMissing } from './tool-and-sandbox.js';

/**
 * A hostile member of an organization applies a private stack of one
 * `terraform_data` whose `local-exec` provisioner goes after the gateway:
 * its token file and environment, its data folder, its process (seen,
 * signalled), PostgreSQL, Redis and its own port on the host's loopback
 * (directly and through the egress proxy), the cloud metadata address, the
 * system's folders; then 10,000 processes, 4 GiB of memory and 2 GiB of
 * disk, each a bounded attempt. With the real tool, in the sandbox of an
 * embedded-default gateway process.
 *
 * A control runs the same probe with TOLLGATE_RUN_SANDBOX=none and finds
 * the leaks this test says are blocked: the probe can see them, so its
 * BLOCKED lines in the sandbox mean something.
 */

const kinds = await sandboxKinds();
const found = findTool({ pathList: process.env.PATH });
const missing = toolAndSandboxMissing(found, kinds.length);
const tool = missing === null ? found : null;
if (missing && requireServices) throw new Error(`REQUIRE_SERVICES=1 but the hostile-stack test cannot run: ${missing}`);
if (missing) console.warn(`skipping the hostile-stack test: ${missing}`);

/** A line the script printed (not the command echoed) saying an attempt got through. */
const LEAKED = /\(local-exec\): LEAK/;

/** The bounds the gateway under attack is given: small, so a bounded attempt is quick. */
const BOUNDS = { TOLLGATE_RUN_MEMORY_MB: '256', TOLLGATE_RUN_PROCESSES: '100', TOLLGATE_RUN_DISK_MB: '64' };

/**
 * How long a /v1 request polled during the attacks may take: the gateway must keep answering (a
 * loaded 2-core CI machine answers in far less).
 */
const ANSWER_WITHIN_MS = 10_000;

/**
 * How often /v1 is polled during the attacks: often enough that the shortest attack (a few hundred
 * ms) is polled inside.
 */
const SAMPLE_EVERY_MS = 100;

/**
 * More processes than a run's sandbox holds (its init, the relay, the tool, the provisioner's shell
 * and what that starts): seeing more is seeing the host's.
 */
const HANDFUL = 20;

/**
 * The system folders the probe tries to write in, by the name on its line (`/<name>`, and `root`
 * for `/`); `/tmp` is the run's own.
 */
const SYSTEM_FOLDERS: Record<string, string> = {
  root: '/',
  etc: '/etc',
  opt: '/opt',
  run: '/run',
  usr: '/usr',
  dev: '/dev',
};

/** What the probe checks, each a `BLOCKED <what>` or `LEAK <what>` line. */
const PROBED = [
  'token-file',
  'data-dir',
  'other-runs',
  'root-home',
  'home',
  'environ',
  'own-environ',
  'gateway-process',
  'process-count',
  'metadata',
  'signal',
  'uid-0',
  'capabilities',
  'new-privileges',
  ...Object.keys(SYSTEM_FOLDERS).map((name) => `write-${name}`),
];

/**
 * Each attempt prints `BLOCKED <what>` or `LEAK <what>`; the test reads them from the run's log. A
 * bounded one says when it starts.
 */
const ATTACKS: Record<string, string> = {
  // SIGNAL is TERM in the sandbox, 0 in the unsandboxed control (whose gateway must live on).
  probe: String.raw`
echo "hostile: running as uid $(id -u) in $(pwd) on $(hostname)"
cat "$DATA_DIR/admin-token" >/dev/null 2>&1 && echo "LEAK token-file" || echo "BLOCKED token-file"
ls "$DATA_DIR" >/dev/null 2>&1 && echo "LEAK data-dir" || echo "BLOCKED data-dir"
ls "$RUN_DIR" >/dev/null 2>&1 && echo "LEAK other-runs" || echo "BLOCKED other-runs"
ls /root >/dev/null 2>&1 && echo "LEAK root-home" || echo "BLOCKED root-home"
[ -n "$(ls -A /home 2>/dev/null)" ] && echo "LEAK home" || echo "BLOCKED home"
leaked=no
for f in /proc/[0-9]*/environ; do
  if tr '\0' '\n' < "$f" 2>/dev/null | grep -q -e '^TOLLGATE_' -e '^DATABASE_URL' -e '^REDIS_URL'; then leaked=yes; fi
done
[ $leaked = yes ] && echo "LEAK environ" || echo "BLOCKED environ"
env | grep -q -e '^TOLLGATE_' -e '^DATABASE_URL' -e '^REDIS_URL' && echo "LEAK own-environ" || echo "BLOCKED own-environ"
# The gateway's /proc entry, unless that pid is one of the sandbox's own that happens to have the same number.
seen=BLOCKED
if [ -e "/proc/$GATEWAY_PID" ]; then
  case "$(tr '\0' ' ' < "/proc/$GATEWAY_PID/cmdline" 2>/dev/null)" in *dist/main.js*|"") seen=LEAK;; esac
fi
echo "$seen gateway-process"
count=$(ls -d /proc/[0-9]* 2>/dev/null | wc -l)
echo "hostile: processes visible: $count"
[ "$count" -gt ${HANDFUL} ] && echo "LEAK process-count" || echo "BLOCKED process-count"
for port in 5432 6379 $GATEWAY_PORT; do
  (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && echo "LEAK direct-$port" || echo "BLOCKED direct-$port"
  answer=$( (exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\n' $port >&3 && head -n 1 <&3) 2>/dev/null)
  case "$answer" in *" 200 "*) echo "LEAK proxy-$port";; *) echo "BLOCKED proxy-$port";; esac
done
answer=$( (exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n' >&3 && head -n 1 <&3) 2>/dev/null)
case "$answer" in *" 200 "*) echo "LEAK metadata";; *) echo "BLOCKED metadata";; esac
kill -$SIGNAL "$GATEWAY_PID" 2>/dev/null && echo "LEAK signal" || echo "BLOCKED signal"
[ "$(id -u)" = 0 ] && echo "LEAK uid-0" || echo "BLOCKED uid-0"
grep -q '^CapEff:[[:space:]]*0*$' /proc/self/status && echo "BLOCKED capabilities" || echo "LEAK capabilities"
grep -q '^NoNewPrivs:[[:space:]]*1' /proc/self/status && echo "BLOCKED new-privileges" || echo "LEAK new-privileges"
# A file written is removed at once: the unsandboxed control, as root, does write it.
for name in ${Object.keys(SYSTEM_FOLDERS).join(' ')}; do
  case $name in root) file=/hostile-write-$$;; *) file=/$name/hostile-write-$$;; esac
  if touch "$file" 2>/dev/null; then rm -f "$file"; echo "LEAK write-$name"; else echo "BLOCKED write-$name"; fi
done
touch hostile-own-file && echo "hostile: wrote in its own folder"
echo "hostile: done"
`,
  // At most 10,000 tries, each a short sleep: a broken sandbox cannot take the machine down.
  // dash, not bash: bash retries a refused fork for seconds.
  fork: String.raw`
echo "hostile: starting 10000 processes"
sh -c 'for i in $(seq 1 10000); do sleep 20 >/dev/null 2>&1 & done 2>/dev/null; echo "hostile: fork loop ended"'
`,
  // A 4 GiB string in the shell; the machine has far more, so a broken sandbox survives it.
  memory: String.raw`
echo "hostile: allocating 4 GiB"
big=$(head -c 4294967296 /dev/zero | tr '\0' 'a')
echo "hostile: allocated $(printf %s "$big" | wc -c) bytes"
`,
  disk: String.raw`
echo "hostile: writing 2 GiB"
head -c 2147483648 /dev/zero > /workspace/big.bin
echo "hostile: wrote $(stat -c %s /workspace/big.bin) bytes"
`,
};

const MODULE = (script: string) => `
variable "attack" { type = string }
variable "data_dir" { type = string }
variable "run_dir" { type = string }
variable "gateway_pid" { type = number }
variable "gateway_port" { type = number }
variable "signal" {
  type    = string
  default = "TERM"
}
resource "terraform_data" "attack" {
  triggers_replace = [var.attack, timestamp()]
  provisioner "local-exec" {
    interpreter = ["/bin/bash", "-c"]
    command     = <<-EOT
${script}
EOT
    environment = {
      DATA_DIR     = var.data_dir
      RUN_DIR      = var.run_dir
      GATEWAY_PID  = tostring(var.gateway_pid)
      GATEWAY_PORT = tostring(var.gateway_port)
      SIGNAL       = var.signal
    }
  }
}
`;

/**
 * A gateway process with an organization, a member's key, the owner's cluster and the member's
 * hostile stacks.
 */
interface Target {
  gateway: GatewayProcess;
  key: string;
  port: number;
  /** Applies `hostile-<name>` as the member; the run once ended, and its log. */
  attack(
    name: string,
    inputs?: Record<string, unknown>,
  ): Promise<{ run: { state: string; failure: string | null }; log: string }>;
  close(): Promise<void>;
}

async function startTarget(env: Record<string, string>, attacks: string[]): Promise<Target> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-hostile-data-'));
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-hostile-runs-'));
  // The data folder is readable by anyone here, and the token file too: only the sandbox keeps them
  // out of reach.
  await chmod(dataDir, 0o755);
  await chmod(workDir, 0o755);
  await writeFile(path.join(dataDir, 'admin-token'), `${OPERATOR}\n`, { mode: 0o644 });
  const gateway = await startGatewayProcess('hostile-target', {
    TOLLGATE_DATA_DIR: dataDir,
    TOLLGATE_ADMIN_TOKEN: OPERATOR,
    TOLLGATE_PASSWORD_COST: '10',
    TOLLGATE_RUN_DIR: workDir,
    TOLLGATE_RUN_POLL_MS: '100',
    ...env,
  });
  const close = async () => {
    await gateway.child.stop('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
    await rm(workDir, { recursive: true, force: true });
  };
  try {
    // An organization with a member and the member's key, made through the operator API (the
    // gateway is another process).
    const org = await operatorCall(gateway, 'POST', '/orgs', { name: 'hostile org' });
    const member = await operatorCall(gateway, 'POST', `/orgs/${org.body.id}/users`, {
      name: 'Mallory',
      email: 'mallory@example.com',
      password: 'correct horse battery',
      role: 'member',
    });
    const memberKey = await operatorCall(gateway, 'POST', `/orgs/${org.body.id}/keys`, {
      name: 'mallory',
      user_id: member.body.id,
    });
    expect(memberKey.status).toBe(201);
    const key: string = memberKey.body.secret;
    const call = apiAs(gateway as unknown as TestGateway, key);
    // The organization's owner makes the cluster; the member applies to it.
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
    for (const name of attacks) {
      const form = new FormData();
      form.set(
        'package',
        new Blob([new Uint8Array(await zipOf({ [`hostile-${name}/main.tf`]: MODULE(ATTACKS[name]!) }))], {
          type: 'application/zip',
        }),
        `hostile-${name}.zip`,
      );
      // A member's private stack: any user of any organization may add one.
      const added = await fetch(`${gateway.url}/api/v1/stacks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: form,
      });
      expect(added.status).toBe(201);
    }
    const port = Number(new URL(gateway.url).port);
    return {
      gateway,
      key,
      port,
      async attack(name, inputs = {}) {
        const all = {
          attack: name,
          data_dir: dataDir,
          run_dir: workDir,
          gateway_pid: gateway.child.pid,
          gateway_port: port,
          ...inputs,
        };
        const queued = await call('POST', `/clusters/${cluster.body.id}/runs`, {
          stack: `hostile-${name}`,
          inputs: all,
        });
        expect(queued.status).toBe(201);
        const run = await runEnded(call, queued.body.id, 90_000);
        const log = await (
          await fetch(`${gateway.url}/api/v1/runs/${run.id}/log`, { headers: { authorization: `Bearer ${key}` } })
        ).text();
        return { run, log };
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Whether something accepts TCP connections on the host's loopback at `port`, as seen from this
 * test process.
 */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port, timeout: 2000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** The probe's verdict on `what`: the last `LEAK`/`BLOCKED` line the script printed for it. */
function verdict(log: string, what: string): 'LEAK' | 'BLOCKED' | null {
  const escaped = what.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const found = [...log.matchAll(new RegExp(`\\(local-exec\\): (LEAK|BLOCKED) ${escaped}$`, 'gm'))];
  return (found.at(-1)?.[1] as 'LEAK' | 'BLOCKED' | undefined) ?? null;
}

describe.each(tool ? kinds : [])('a hostile stack in the run sandbox ($name)', (kind) => {
  let target: Target;
  /** The gateway's resident memory, sampled while the runs go on. */
  const rss: number[] = [];
  /**
   * Each /v1 request polled while the runs go on: when it was sent (ms into the attacks), its
   * status (0: no answer within ANSWER_WITHIN_MS, or an error) and how long it took.
   */
  const answers: Array<{ at: number; status: number; ms: number; error?: string }> = [];
  /**
   * When each attack went on (ms into the attacks, from its POST to the end of its run): /v1 must
   * have been polled inside each.
   */
  const windows: Array<{ name: string; from: number; to: number }> = [];
  let sent = 0;
  let sampler: NodeJS.Timeout;
  let started = 0;

  /**
   * `target.attack`, its window noted: a run in the sandbox is quick (a bounded attack can end in
   * well under a second), so the check is per window, not a count.
   */
  async function attack(name: string) {
    const from = Date.now() - started;
    const ended = await target.attack(name);
    windows.push({ name, from, to: Date.now() - started });
    return ended;
  }

  beforeAll(async () => {
    target = await startTarget({ ...BOUNDS, ...kind.env }, Object.keys(ATTACKS));
    started = Date.now();
    sampler = setInterval(() => {
      void readFile(`/proc/${target.gateway.child.pid}/status`, 'utf8').then(
        (status) => rss.push(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024),
        () => {},
      );
      const at = Date.now();
      sent++;
      void fetch(`${target.gateway.url}/v1/models`, {
        headers: { authorization: `Bearer ${target.key}` },
        signal: AbortSignal.timeout(ANSWER_WITHIN_MS),
      }).then(
        (response) => answers.push({ at: at - started, status: response.status, ms: Date.now() - at }),
        (error: Error) => answers.push({ at: at - started, status: 0, ms: Date.now() - at, error: error.name }),
      );
    }, SAMPLE_EVERY_MS);
  }, 60_000);

  afterAll(async () => {
    clearInterval(sampler);
    await target?.close();
  });

  it('reads no gateway file or environment, sees and signals no gateway process, reaches none of its ports, writes nothing of the system', async () => {
    // What the probe is kept from must be there to be reached: PostgreSQL and Redis listen on the
    // host's loopback.
    for (const port of [5432, 6379, target.port])
      expect(await listening(port), `something listens on 127.0.0.1:${port} on the host`).toBe(true);
    const { run, log } = await attack('probe');
    expect(log).toContain('hostile: running as uid 65534 in /workspace/module on tollgate-run');
    expect(log).toContain('hostile: wrote in its own folder');
    expect(log).toContain('hostile: done');
    expect(log).not.toMatch(LEAKED);
    for (const what of PROBED) expect(verdict(log, what), what).toBe('BLOCKED');
    const visible = Number(/\(local-exec\): hostile: processes visible: (\d+)/.exec(log)?.[1]);
    expect(visible).toBeGreaterThan(0);
    expect(visible).toBeLessThanOrEqual(HANDFUL);
    for (const port of [5432, 6379, target.port]) {
      expect(verdict(log, `direct-${port}`)).toBe('BLOCKED');
      expect(verdict(log, `proxy-${port}`)).toBe('BLOCKED');
      expect(log).toContain(`egress: refused 127.0.0.1:${port}`);
    }
    expect(log).toContain('egress: refused 169.254.169.254:80');
    expect(log).not.toContain(OPERATOR);
    expect(run.state).toBe('APPLIED');
  }, 120_000);

  it('10,000 processes: the process bound stops them and fails the run naming it', async () => {
    const { run, log } = await attack('fork');
    expect(log).toMatch(/\(local-exec\): hostile: starting 10000 processes$/m);
    expect(run.state).toBe('FAILED');
    expect(run.failure).toContain('its process bound (100 processes, TOLLGATE_RUN_PROCESSES)');
  }, 120_000);

  it('4 GiB of memory: the memory bound stops it and fails the run naming it', async () => {
    const { run, log } = await attack('memory');
    expect(log).toMatch(/\(local-exec\): hostile: allocating 4 GiB$/m);
    // The shell was killed before it had the string: it never printed its size.
    expect(log).not.toMatch(/\(local-exec\): hostile: allocated/);
    expect(run.state).toBe('FAILED');
    expect(run.failure).toContain('its memory bound (256 MiB, TOLLGATE_RUN_MEMORY_MB)');
  }, 120_000);

  it('2 GiB of disk: the disk bound stops it and fails the run naming it', async () => {
    const { run, log } = await attack('disk');
    expect(log).toMatch(/\(local-exec\): hostile: writing 2 GiB$/m);
    const written = Number(/hostile: wrote (\d+) bytes/.exec(log)?.[1]);
    expect(written).toBeLessThanOrEqual(64 * 1024 * 1024);
    expect(run.state).toBe('FAILED');
    expect(run.failure).toContain('its disk bound (64 MiB written, TOLLGATE_RUN_DISK_MB)');
  }, 120_000);

  it('the gateway answered /v1 throughout, each request in time, in its usual memory', async () => {
    clearInterval(sampler);
    // Every request sent has its answer, or its timeout, by now: a stalled gateway cannot pass by
    // never answering.
    await until('every /v1 request sent has settled', () => answers.length === sent, {
      timeout: ANSWER_WITHIN_MS + 5000,
    });
    expect(windows.map((window) => window.name)).toEqual(Object.keys(ATTACKS));
    for (const window of windows) {
      const during = answers.filter((answer) => answer.at >= window.from && answer.at <= window.to);
      expect(
        during.length,
        `/v1 requests sent during the ${window.name} attack (${window.from}-${window.to} ms)`,
      ).toBeGreaterThan(0);
    }
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
    console.info(
      `/v1 during the attacks: ${answers.length} requests, the slowest answered in ${Math.max(...answers.map((answer) => answer.ms))} ms`,
    );
    const baseline = rss[0]!;
    console.info(
      `gateway RSS during the attacks: ${baseline.toFixed(0)} MiB at the start, at most ${Math.max(...rss).toFixed(0)} MiB`,
    );
    expect(Math.max(...rss)).toBeLessThan(baseline + 150);
  });
});

/**
 * The control: the same probe, unsandboxed (TOLLGATE_RUN_SANDBOX=none), as
 * the gateway's user (root in CI). Each leak the sandbox must block and this
 * process can itself commit is one the probe must report here, or its
 * BLOCKED lines above prove nothing. The signal is 0 (the gateway lives on);
 * the bounded attacks are not run.
 */
describe.skipIf(!tool)(
  'the hostile probe without a sandbox (TOLLGATE_RUN_SANDBOX=none): the control that shows it sees leaks',
  () => {
    let target: Target;

    beforeAll(async () => {
      target = await startTarget({ TOLLGATE_RUN_SANDBOX: 'none' }, ['probe']);
    }, 60_000);
    afterAll(async () => {
      await target?.close();
    });

    it('reports the token file, the data folder, the environment, the process, the ports and the signal as LEAK; the system folders as this user may write them', async () => {
      const { run, log } = await target.attack('probe', { signal: '0' });
      expect(log).toContain('This run is not sandboxed (TOLLGATE_RUN_SANDBOX=none)');
      expect(log).toContain('hostile: done');
      expect(run.state).toBe('APPLIED');
      const leaks = [
        'token-file',
        'data-dir',
        'other-runs',
        'environ',
        'gateway-process',
        'signal',
        'direct-5432',
        'direct-6379',
        `direct-${target.port}`,
      ];
      // This test's own view of the host: what the gateway's user can do unsandboxed, the probe
      // must find.
      if ((await readdir('/proc')).filter((name) => /^\d+$/.test(name)).length > HANDFUL + 10)
        leaks.push('process-count');
      const status = await readFile('/proc/self/status', 'utf8');
      if (!/^CapEff:\s*0+$/m.test(status)) leaks.push('capabilities');
      if (!/^NoNewPrivs:\s*1$/m.test(status)) leaks.push('new-privileges');
      if (process.getuid?.() === 0) leaks.push('uid-0', 'root-home');
      if ((await readdir('/home').catch(() => [])).length > 0) leaks.push('home');
      for (const [name, folder] of Object.entries(SYSTEM_FOLDERS))
        if (await writable(folder)) leaks.push(`write-${name}`);
      for (const what of leaks) expect(verdict(log, what), what).toBe('LEAK');
      // The gateway is alive and answering: kill -0 only asked.
      expect((await fetch(`${target.gateway.url}/health`)).status).toBe(200);
      // Nothing written in the system is left.
      for (const folder of Object.values(SYSTEM_FOLDERS))
        expect((await readdir(folder)).filter((name) => name.startsWith('hostile-write-'))).toEqual([]);
    }, 120_000);
  },
);

async function writable(folder: string): Promise<boolean> {
  return access(folder, constants.W_OK).then(
    () => true,
    () => false,
  );
}
