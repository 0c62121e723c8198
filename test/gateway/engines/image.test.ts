import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSimulatorImage, dockerAvailable, SIM_IMAGE_COMMAND, testDocker } from '../../helpers/docker.js';
import { freePort } from '../../helpers/processes.js';
import { until } from '../../helpers/wait.js';

// The simulator image the Docker engine tests start instead of vllm/vllm-openai:
// built locally, run with host networking and vLLM's command line.

const hasDocker = await dockerAvailable();

describe.skipIf(!hasDocker)('the vLLM simulator image', () => {
  let docker: Docker;
  let container: Docker.Container | undefined;
  let baseUrl = '';
  let image = '';

  beforeAll(async () => {
    docker = testDocker();
    const started = Date.now();
    image = await buildSimulatorImage();
    const info = await docker.getImage(image).inspect();
    console.info(`simulator image ${image}: ${(info.Size / 1e6).toFixed(1)} MB, ready in ${Date.now() - started} ms`);

    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    container = await docker.createContainer({
      Image: image,
      name: `tollgate-test-sim-${process.pid}-${port}`,
      Cmd: [
        ...SIM_IMAGE_COMMAND,
        'Qwen/Qwen2.5-0.5B-Instruct',
        '--served-model-name',
        'sim-chat',
        '--host',
        '127.0.0.1',
        '--port',
        String(port),
        '--max-model-len',
        '2048',
        '--gpu-memory-utilization',
        '0.9',
        '--enable-prefix-caching',
      ],
      Labels: { 'tollgate-test': 'image' },
      HostConfig: { NetworkMode: 'host' },
    });
    await container.start();
    await waitForHealth(container, baseUrl, 30_000);
  }, 180_000);

  afterAll(async () => {
    await container?.remove({ force: true });
  });

  it('answers /v1/models with the served name', async () => {
    const res = await fetch(`${baseUrl}/v1/models`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: Array<{ id: string; max_model_len: number }> };
    expect(body.data.map((m) => m.id)).toEqual(['sim-chat']);
    expect(body.data[0]?.max_model_len).toBe(2048);
  });

  it('completes a chat', async () => {
    const res = await fetch(`${baseUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'Hello!' }], max_tokens: 5 }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      choices: Array<{ message: { content: string } }>;
      usage: { completion_tokens: number };
    };
    expect(body.choices[0]?.message.content.length).toBeGreaterThan(0);
    expect(body.usage.completion_tokens).toBe(5);
  });

  it('logs the vLLM flags it ignores', async () => {
    const logs = (await container!.logs({ stdout: true, stderr: true })).toString();
    expect(logs).toContain('ignoring vLLM options: --gpu-memory-utilization 0.9 --enable-prefix-caching');
  });
});

/** Polls /health until 200; fails early, with the container's logs, when it exits. */
async function waitForHealth(container: Docker.Container, baseUrl: string, timeoutMs: number): Promise<void> {
  let last = '';
  await until(
    `${baseUrl}/health answers 200`,
    async () => {
      try {
        const res = await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(1_000) });
        if (res.status === 200) return true;
        last = `HTTP ${res.status}`;
      } catch (error) {
        last = (error as Error).message;
      }
      const state = (await container.inspect()).State;
      if (!state.Running) {
        const logs = (await container.logs({ stdout: true, stderr: true })).toString();
        throw new Error(`simulator container exited (code ${state.ExitCode}):\n${logs}`);
      }
      return false;
    },
    { timeout: timeoutMs, interval: 200, detail: () => `last: ${last}` },
  );
}
