import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../../config/index.js';
import { dockerClientFor } from '../../../shared/docker/client.js';
import { GatewayError } from '../../../shared/http/errors.js';
import { findTool } from '../tool.js';
import { BubblewrapSandbox, findPrograms, isRoot } from './bubblewrap.js';
import { DockerSandbox } from './docker.js';
import { dockerReady } from './docker-ready.js';
import { INSIDE } from './inside.js';
import type { Sandbox } from './types.js';
import { Unsandboxed } from './unsandboxed.js';

/**
 * How long a failed probe is remembered before the next apply probes again (an operator may install
 * bubblewrap meanwhile).
 */
const RETRY_PROBE_MS = 30_000;

/**
 * Chooses what runs execute in (`TOLLGATE_RUN_SANDBOX`): `none` only when
 * the operator says so; `docker` or `bubblewrap` when asked; `auto` is
 * docker when the engine at TOLLGATE_RUN_DOCKER_HOST answers and holds the
 * runner image (TOLLGATE_RUN_IMAGE), else bubblewrap. Whichever is chosen
 * must pass a probe (a command in a sandbox like a run's); a sandbox that
 * cannot be had here is never replaced by a weaker one: applying answers 503
 * naming the setting.
 *
 * @example
 * const sandboxes = new SandboxChooser(config.runs);
 * const sandbox = await sandboxes.require(); // throws the 503 when there is none
 */
export class SandboxChooser {
  private probed: { at: number; result: Sandbox | string } | null = null;
  private probing: Promise<Sandbox | string> | null = null;

  /** `warn`: the gateway's log, for what weakens a sandbox that still works (see BLIND_CGROUP). */
  constructor(
    private readonly config: Config['runs'],
    private readonly warn?: (message: string) => void,
  ) {}

  /** The sandbox runs execute in, or why there is none (probed once; a failure again after 30 s). */
  async get(): Promise<Sandbox | string> {
    if (this.probed && (typeof this.probed.result !== 'string' || Date.now() - this.probed.at < RETRY_PROBE_MS))
      return this.probed.result;
    this.probing ??= this.probe()
      .catch(
        (error: unknown) =>
          `the sandbox could not be set up (${error instanceof Error ? error.message.slice(0, 200) : 'unknown error'})`,
      )
      .then((result) => {
        this.probed = { at: Date.now(), result };
        this.probing = null;
        return result;
      });
    return this.probing;
  }

  /** The sandbox, or the 503 that refuses to queue a run without one. */
  async require(): Promise<Sandbox> {
    const found = await this.get();
    if (typeof found !== 'string') return found;
    throw new GatewayError(
      'runner_unavailable',
      `This gateway cannot isolate runs: ${found}. Give it a Docker engine holding the runner image (TOLLGATE_RUN_SANDBOX=docker, TOLLGATE_RUN_IMAGE), or install bubblewrap, socat and util-linux and give it a cgroup it may manage (TOLLGATE_RUN_SANDBOX=bubblewrap, TOLLGATE_RUN_CGROUP), or set TOLLGATE_RUN_SANDBOX=none to run stacks unisolated.`,
      { headers: { 'Retry-After': '60' } },
    );
  }

  private async probe(): Promise<Sandbox | string> {
    const { config } = this;
    if (config.sandbox === 'none') return new Unsandboxed();
    if (config.sandbox === 'bubblewrap') return this.bubblewrap();
    const docker = dockerClientFor({ docker_host: config.dockerHost });
    const why = await dockerReady(docker, config.image, config.dockerHost);
    if (why === null) return this.tried(this.dockerSandbox(docker));
    if (config.sandbox === 'docker') return why;
    // auto: bubblewrap, and when it cannot be had either, both reasons (the operator may fix
    // either).
    const bubblewrap = await this.bubblewrap().catch(
      (error: unknown) =>
        `bubblewrap could not be set up (${error instanceof Error ? error.message.slice(0, 200) : 'unknown error'})`,
    );
    return typeof bubblewrap === 'string'
      ? `neither sandbox is available (docker: ${why}; bubblewrap: ${bubblewrap})`
      : bubblewrap;
  }

  private dockerSandbox(docker: ReturnType<typeof dockerClientFor>): DockerSandbox {
    const { config } = this;
    const root = isRoot();
    return new DockerSandbox({
      docker,
      image: config.image,
      user: root ? config.sandboxUser : { uid: process.getuid?.() ?? 65534, gid: process.getgid?.() ?? 65534 },
      chown: root,
      bounds: config.bounds,
      providerMirror: config.providerMirror,
      cliConfig: config.cliConfig,
      mounts: config.mounts,
      lifetimeSeconds: Math.ceil((config.timeoutMs + config.killGraceMs) / 1000) + 60,
      warn: this.warn,
    });
  }

  private async bubblewrap(): Promise<Sandbox | string> {
    const { config } = this;
    const root = isRoot();
    const programs = findPrograms((name) => findTool({ configured: name, pathList: config.searchPath }), root);
    if ('missing' in programs) return `${programs.missing} is not installed`;
    return this.tried(
      new BubblewrapSandbox({
        programs,
        user: root ? config.sandboxUser : null,
        cgroup: config.cgroup,
        bounds: config.bounds,
        providerMirror: config.providerMirror,
        cliConfig: config.cliConfig,
        mounts: config.mounts,
      }),
    );
  }

  /** The sandbox when `true` runs in one like a run's here, else why not. */
  private async tried(sandbox: Sandbox): Promise<Sandbox | string> {
    await mkdir(this.config.workDir, { recursive: true, mode: 0o711 });
    const folder = await mkdtemp(path.join(this.config.workDir, 'probe-'));
    try {
      return (await probeSandbox(sandbox, folder)) ?? sandbox;
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }
}

/** Runs `true` in a sandbox like a run's, to learn whether it works here; the error when not. */
async function probeSandbox(sandbox: Sandbox, folder: string): Promise<string | null> {
  const box = await sandbox.open({
    runId: `probe-${process.pid}`,
    folder,
    tool: '/bin/true',
    env: {},
    egress: { nodes: [], hosts: [] },
    say: () => {},
  });
  let output = '';
  try {
    const exit = await box.exec({
      args: [],
      cwd: INSIDE.work,
      signal: new AbortController().signal,
      killGraceMs: 1000,
      onOutput: (text) => (output += text),
    });
    if (exit.code === 0) return null;
    const why = (exit.error ?? output.trim()) || `exit ${exit.code ?? exit.signal}`;
    const hint = /Permission denied/.test(why)
      ? ' (the sandbox user must be able to reach TOLLGATE_RUN_DIR and the tool: every folder above them needs o+x)'
      : '';
    return `a test ${sandbox.kind} sandbox failed: ${why.slice(0, 300)}${hint}`;
  } finally {
    await box.close();
  }
}
