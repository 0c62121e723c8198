import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTool } from '../../../src/platform/runs/tool.js';
import { apiAs } from '../../surfaces/api/harness.js';
import type { TestGateway } from '../../helpers/gateway.js';
import { type GatewayProcess, startGatewayProcess } from '../../helpers/processes.js';
import { requireServices } from '../../helpers/services.js';
import { zipOf } from '../../helpers/zip.js';
import { OPERATOR, operatorCall, profileWithNodes, runEnded, sandboxKinds } from './harness.js';

/**
 * A hostile member of an organization applies a private stack of one
 * `terraform_data` whose `local-exec` provisioner goes after the gateway:
 * its token file and environment, its data folder, PostgreSQL, Redis and
 * its own port on the host's loopback (directly and through the egress
 * proxy), the cloud metadata address, a signal to its process; then 10,000
 * processes, 4 GiB of memory and 2 GiB of disk, each a bounded attempt. With
 * the real tool, in the sandbox of an embedded-default gateway process.
 */

const kinds = await sandboxKinds();
const tool = kinds.length > 0 ? findTool({ pathList: process.env.PATH }) : null;
if (!tool && requireServices) throw new Error('REQUIRE_SERVICES=1 but the hostile-stack test cannot run: it needs a sandbox and a real tofu or terraform on PATH');
if (!tool) console.warn('skipping the hostile-stack test: it needs the sandbox and a real tofu or terraform on PATH');

/** A line the script printed (not the command echoed) saying an attempt got through. */
const LEAKED = /\(local-exec\): LEAK/;

/** The bounds the gateway under attack is given: small, so a bounded attempt is quick. */
const BOUNDS = { TOLLGATE_RUN_MEMORY_MB: '256', TOLLGATE_RUN_PROCESSES: '100', TOLLGATE_RUN_DISK_MB: '64' };

/** Each attempt prints `BLOCKED <what>` or `LEAK <what>`; the test reads them from the run's log. */
const ATTACKS: Record<string, string> = {
  probe: String.raw`
echo "hostile: running as uid $(id -u) in $(pwd) on $(hostname)"
cat "$DATA_DIR/admin-token" >/dev/null 2>&1 && echo "LEAK token-file" || echo "BLOCKED token-file"
ls "$DATA_DIR" >/dev/null 2>&1 && echo "LEAK data-dir" || echo "BLOCKED data-dir"
ls "$RUN_DIR" >/dev/null 2>&1 && echo "LEAK other-runs" || echo "BLOCKED other-runs"
leaked=no
for f in /proc/[0-9]*/environ; do
  if tr '\0' '\n' < "$f" 2>/dev/null | grep -q -e '^TOLLGATE_' -e '^DATABASE_URL' -e '^REDIS_URL'; then leaked=yes; fi
done
[ $leaked = yes ] && echo "LEAK environ" || echo "BLOCKED environ"
echo "hostile: processes visible: $(ls -d /proc/[0-9]* | wc -l)"
for port in 5432 6379 $GATEWAY_PORT; do
  (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && echo "LEAK direct-$port" || echo "BLOCKED direct-$port"
  answer=$( (exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'CONNECT 127.0.0.1:%s HTTP/1.1\r\n\r\n' $port >&3 && head -n 1 <&3) 2>/dev/null)
  case "$answer" in *" 200 "*) echo "LEAK proxy-$port";; *) echo "BLOCKED proxy-$port";; esac
done
answer=$( (exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'CONNECT 169.254.169.254:80 HTTP/1.1\r\n\r\n' >&3 && head -n 1 <&3) 2>/dev/null)
case "$answer" in *" 200 "*) echo "LEAK metadata";; *) echo "BLOCKED metadata";; esac
kill -TERM "$GATEWAY_PID" 2>/dev/null && echo "LEAK signal" || echo "BLOCKED signal"
touch /usr/hostile 2>/dev/null && echo "LEAK system-write" || echo "BLOCKED system-write"
echo "hostile: done"
`,
  // At most 10,000 tries, each a short sleep: a broken sandbox cannot take the machine down.
  // dash, not bash: bash retries a refused fork for seconds.
  fork: String.raw`
sh -c 'for i in $(seq 1 10000); do sleep 20 >/dev/null 2>&1 & done 2>/dev/null; echo "hostile: fork loop ended"'
`,
  // A 4 GiB string in the shell; the machine has far more, so a broken sandbox survives it.
  memory: String.raw`
big=$(head -c 4294967296 /dev/zero | tr '\0' 'a')
echo "hostile: allocated $(printf %s "$big" | wc -c) bytes"
`,
  disk: String.raw`
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
    }
  }
}
`;

describe.each(tool ? kinds : [])('a hostile stack in the run sandbox ($name)', (kind) => {
  let gateway: GatewayProcess;
  let dataDir: string;
  let workDir: string;
  let call: ReturnType<typeof apiAs>;
  let key: string;
  let clusterId: string;
  /** The gateway's resident memory, sampled while the runs go on. */
  const rss: number[] = [];
  const answers: number[] = [];
  let sampler: NodeJS.Timeout;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-hostile-data-'));
    workDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-hostile-runs-'));
    // The data folder is readable by anyone here, and the token file too: only the sandbox keeps them out of reach.
    await chmod(dataDir, 0o755);
    await chmod(workDir, 0o755);
    await writeFile(path.join(dataDir, 'admin-token'), `${OPERATOR}\n`, { mode: 0o644 });
    gateway = await startGatewayProcess('hostile-target', {
      TOLLGATE_DATA_DIR: dataDir,
      TOLLGATE_ADMIN_TOKEN: OPERATOR,
      TOLLGATE_PASSWORD_COST: '10',
      TOLLGATE_RUN_DIR: workDir,
      TOLLGATE_RUN_POLL_MS: '100',
      ...BOUNDS,
      ...kind.env,
    });
    // An organization with a member and the member's key, made through the operator API (the gateway is another process).
    const org = await operatorCall(gateway, 'POST', '/orgs', { name: 'hostile org' });
    const member = await operatorCall(gateway, 'POST', `/orgs/${org.body.id}/users`, { name: 'Mallory', email: 'mallory@example.com', password: 'correct horse battery', role: 'member' });
    const memberKey = await operatorCall(gateway, 'POST', `/orgs/${org.body.id}/keys`, { name: 'mallory', user_id: member.body.id });
    expect(memberKey.status).toBe(201);
    key = memberKey.body.secret;
    call = apiAs(gateway as unknown as TestGateway, key);
    // The organization's owner makes the cluster; the member applies to it.
    const owner = await operatorCall(gateway, 'POST', `/orgs/${org.body.id}/users`, { name: 'Olive', email: 'olive@example.com', password: 'correct horse battery', role: 'owner' });
    const ownerKey = await operatorCall(gateway, 'POST', `/orgs/${org.body.id}/keys`, { name: 'olive', user_id: owner.body.id });
    const profile = await profileWithNodes(gateway, 1);
    const cluster = await apiAs(gateway as unknown as TestGateway, ownerKey.body.secret)('POST', '/clusters', { name: 'victim', profile, nodes: 1, public_domain: `${profile}.example.test` });
    expect(cluster.status).toBe(201);
    clusterId = cluster.body.id;
    for (const [name, script] of Object.entries(ATTACKS)) {
      const form = new FormData();
      form.set('package', new Blob([new Uint8Array(await zipOf({ [`hostile-${name}/main.tf`]: MODULE(script) }))], { type: 'application/zip' }), `hostile-${name}.zip`);
      // A member's private stack: any user of any organization may add one.
      const added = await fetch(`${gateway.url}/api/v1/stacks`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
      expect(added.status).toBe(201);
    }
    sampler = setInterval(() => {
      void readFile(`/proc/${gateway.child.pid}/status`, 'utf8').then(
        (status) => rss.push(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024),
        () => {},
      );
      void fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } }).then(
        (response) => answers.push(response.status),
        () => answers.push(0),
      );
    }, 250);
  }, 60_000);

  afterAll(async () => {
    clearInterval(sampler);
    await gateway?.child.stop('SIGTERM');
    await rm(dataDir, { recursive: true, force: true });
    await rm(workDir, { recursive: true, force: true });
  });

  async function attack(name: string): Promise<{ run: { state: string; failure: string | null }; log: string }> {
    const inputs = { attack: name, data_dir: dataDir, run_dir: workDir, gateway_pid: gateway.child.pid, gateway_port: Number(new URL(gateway.url).port) };
    const queued = await call('POST', `/clusters/${clusterId}/runs`, { stack: `hostile-${name}`, inputs });
    expect(queued.status).toBe(201);
    const run = await runEnded(call, queued.body.id, 90_000);
    const log = await (await fetch(`${gateway.url}/api/v1/runs/${run.id}/log`, { headers: { authorization: `Bearer ${key}` } })).text();
    return { run, log };
  }

  it('reads no gateway file or environment, reaches none of its ports, signals nothing, writes nothing of the system', async () => {
    const { run, log } = await attack('probe');
    expect(log).toContain('hostile: running as uid 65534 in /workspace/module on tollgate-run');
    expect(log).toContain('hostile: done');
    expect(log).not.toMatch(LEAKED);
    for (const what of ['token-file', 'data-dir', 'other-runs', 'environ', 'metadata', 'signal', 'system-write']) expect(log).toContain(`BLOCKED ${what}`);
    for (const port of [5432, 6379, Number(new URL(gateway.url).port)]) {
      expect(log).toContain(`BLOCKED direct-${port}`);
      expect(log).toContain(`BLOCKED proxy-${port}`);
      expect(log).toContain(`egress: refused 127.0.0.1:${port}`);
    }
    expect(log).toContain('egress: refused 169.254.169.254:80');
    expect(log).not.toContain(OPERATOR);
    expect(run.state).toBe('APPLIED');
  }, 120_000);

  it('10,000 processes: the process bound stops them and fails the run naming it', async () => {
    const { run } = await attack('fork');
    expect(run.state).toBe('FAILED');
    expect(run.failure).toContain('its process bound (100 processes, TOLLGATE_RUN_PROCESSES)');
  }, 120_000);

  it('4 GiB of memory: the memory bound stops it and fails the run naming it', async () => {
    const { run, log } = await attack('memory');
    // The shell was killed before it had the string: it never printed its size.
    expect(log).not.toMatch(/\(local-exec\): hostile: allocated/);
    expect(run.state).toBe('FAILED');
    expect(run.failure).toContain('its memory bound (256 MiB, TOLLGATE_RUN_MEMORY_MB)');
  }, 120_000);

  it('2 GiB of disk: the disk bound stops it and fails the run naming it', async () => {
    const { run, log } = await attack('disk');
    const written = Number(/hostile: wrote (\d+) bytes/.exec(log)?.[1]);
    expect(written).toBeLessThanOrEqual(64 * 1024 * 1024);
    expect(run.state).toBe('FAILED');
    expect(run.failure).toContain('its disk bound (64 MiB written, TOLLGATE_RUN_DISK_MB)');
  }, 120_000);

  it('the gateway answered /v1 throughout, in its usual memory', () => {
    expect(answers.length).toBeGreaterThan(10);
    expect(answers.every((status) => status === 200)).toBe(true);
    const baseline = rss[0]!;
    console.info(`gateway RSS during the attacks: ${baseline.toFixed(0)} MiB at the start, at most ${Math.max(...rss).toFixed(0)} MiB`);
    expect(Math.max(...rss)).toBeLessThan(baseline + 150);
  });
});
