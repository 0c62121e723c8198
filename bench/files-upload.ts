// A 200 MB, 50,000-line batch file uploaded to a built gateway (`npm run build` first), in a
// process of its own, and read back: the gateway's resident memory sampled throughout. Embedded by
// default (blobs in the data folder); BENCH_DATABASE_URL=postgres://… runs it on PostgreSQL (blobs
// in chunks there).
//
//   npm run build && npx tsx bench/files-upload.ts [megabytes]
//
// Measured (2 cores, RSS sampled every 100 ms, no collection forced), 200 MiB, 50,000 lines:
//   folder:   upload 3.2 s, peak +27 MiB; download 1.5 s, peak +41 MiB
//   postgres: peak +75 MiB up, +88 MiB down (median of 3, on a box loaded by other work: times not
//   comparable). Before each chunk went by binary COPY (src/shared/blobs/copy-binary.ts), as
//   postgres.js's hex text of a bytea parameter or result: +115 MiB up, +109 MiB down, the rest
//   garbage not yet collected.
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ADMIN_TOKEN, gatewayEnv } from './gateway-env.js';
import { freePort, rssMiB, startBuilt, waitForHealth } from './processes.js';

const megabytes = Number(process.argv[2] ?? 200);
const fileBytes = megabytes * 1024 * 1024;
const lines = 50_000;
const lineBytes = Math.floor(fileBytes / lines);
const root = path.resolve(import.meta.dirname, '..');

/** One batch line of `lineBytes`, its newline included. */
function line(i: number): string {
  const head = JSON.stringify({ custom_id: `req-${i}`, method: 'POST', url: '/v1/embeddings', body: { input: '' } });
  return head.replace('"input":""', `"input":"${'x'.repeat(lineBytes - head.length - 1)}"`) + '\n';
}

function* form(boundary: string): Generator<Buffer> {
  yield Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="bench.jsonl"\r\n\r\n`,
  );
  for (let i = 1; i <= lines; i += 64) {
    let chunk = '';
    for (let j = i; j < i + 64 && j <= lines; j++) chunk += line(j);
    yield Buffer.from(chunk);
  }
  yield Buffer.from(`\r\n--${boundary}--\r\n`);
}

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-bench-files-'));
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const gateway = startBuilt('gateway', 'dist/main.js', [], {
  cwd: root,
  env: gatewayEnv({
    port,
    name: 'files',
    dataDir,
    enginesFile: path.join(root, 'engines/engines.json'),
    databaseUrl: process.env.BENCH_DATABASE_URL,
  }),
});
try {
  await waitForHealth(gateway, `${url}/health`, 90_000);
  const call = async (route: string, body: unknown) => {
    const answer = await fetch(`${url}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!answer.ok) throw new Error(`${route}: ${answer.status} ${await answer.text()}`);
    return (await answer.json()) as Record<string, string>;
  };
  const org = await call('/admin/v1/orgs', { name: 'bench files' });
  const { secret } = await call(`/admin/v1/orgs/${org.id}/keys`, { name: 'bench' });
  const before = (await rssMiB(gateway.pid))!;
  let peak = before;
  const sampler = setInterval(() => {
    void rssMiB(gateway.pid).then((rss) => (peak = Math.max(peak, rss ?? 0)));
  }, 100);
  const boundary = 'benchboundary7f3a';
  const started = Date.now();
  const answer = await new Promise<string>((resolve, reject) => {
    const request = http.request(
      `${url}/v1/files`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      },
      (response) => {
        let text = '';
        response.on('data', (part: Buffer) => (text += part.toString()));
        response.on('end', () => resolve(`${response.statusCode} ${text}`));
      },
    );
    request.on('error', reject);
    pipeline(Readable.from(form(boundary)), request).catch(reject);
  });
  const uploadMs = Date.now() - started;
  const uploadPeak = peak;
  console.log(answer);
  const id = (JSON.parse(answer.slice(4)) as { id: string }).id;
  peak = (await rssMiB(gateway.pid))!;
  const downloadStarted = Date.now();
  const read = await new Promise<number>((resolve, reject) => {
    http
      .get(`${url}/v1/files/${id}/content`, { headers: { authorization: `Bearer ${secret}` } }, (response) => {
        let bytes = 0;
        response.on('data', (chunk: Buffer) => (bytes += chunk.length));
        response.on('end', () => resolve(bytes));
      })
      .on('error', reject);
  });
  clearInterval(sampler);
  console.log(
    JSON.stringify({
      store: process.env.BENCH_DATABASE_URL ? 'postgres' : 'folder',
      fileMiB: megabytes,
      lines,
      uploadSeconds: uploadMs / 1000,
      downloadSeconds: (Date.now() - downloadStarted) / 1000,
      bytesRead: read,
      rssBeforeMiB: before,
      uploadPeakGrowthMiB: uploadPeak - before,
      downloadPeakGrowthMiB: peak - before,
    }),
  );
} finally {
  await gateway.stop();
  await rm(dataDir, { recursive: true, force: true });
}
