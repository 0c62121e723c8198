import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const stores = await availableStores();

type APIError = InstanceType<typeof OpenAI.APIError>;

/** The error `call` was refused with; a call that succeeds fails the test. */
function refusal(call: Promise<unknown>): Promise<APIError> {
  return call.then(
    () => {
      throw new Error('the call was not refused');
    },
    (error: unknown) => error as APIError,
  );
}

function batchFile(count: number, pad = 0): Buffer {
  const lines = Array.from({ length: count }, (_, i) =>
    JSON.stringify({
      custom_id: `req-${i + 1}`,
      method: 'POST',
      url: '/v1/embeddings',
      body: { model: 'sim-embed', input: `text ${i + 1} ${'x'.repeat(pad)}` },
    }),
  );
  return Buffer.from(`${lines.join('\n')}\n`);
}

describe.each(stores)('/v1/files bounds (%s)', (kind) => {
  let gateway: TestGateway;
  let client: OpenAI;
  let dataDir: string | null = null;

  /** The shipped stacks' packages, kept in the same blob store since 0031. */
  let packageBlobs = 0;

  /** Blobs and chunks the store holds beside the packages: none may outlive a refused upload. */
  async function storedBlobs(): Promise<number> {
    return (await allBlobs()) - packageBlobs;
  }

  async function allBlobs(): Promise<number> {
    if (kind === 'postgres') {
      const rows: unknown = await gateway.services.db.execute(
        sql`select (select count(*) from blobs) + (select count(*) from blob_chunks) as n`,
      );
      return Number((rows as Array<{ n: string }>)[0]!.n);
    }
    const entries = await readdir(path.join(dataDir!, 'blobs'), { recursive: true, withFileTypes: true }).catch(
      () => [],
    );
    return entries.filter((entry) => entry.isFile()).length;
  }

  beforeAll(async () => {
    // Embedded, on disk: the blobs' folder can be looked at.
    dataDir = kind === 'pglite' ? await mkdtemp(path.join(os.tmpdir(), 'tollgate-files-bounds-')) : null;
    gateway = await startTestGateway(kind, {
      TOLLGATE_FILES_MAX_BYTES: String(64 * 1024),
      TOLLGATE_FILES_MAX_LINES: '100',
      TOLLGATE_FILES_ORG_MAX: '3',
      TOLLGATE_FILES_ORG_MAX_BYTES: String(100 * 1024),
      ...(dataDir ? { TOLLGATE_DATA_DIR: dataDir } : {}),
    });
    const { secret } = await gateway.tenant({ key: { requestsPerMinute: 1_000_000 } });
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
    packageBlobs = await allBlobs();
  }, 120_000);
  afterAll(async () => {
    await gateway?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('refuses a file over TOLLGATE_FILES_MAX_BYTES with 413, read as it streams or declared, and keeps nothing', async () => {
    // 200 KB: under the form's allowance over the bound, so refused while it streams.
    for (const bytes of [batchFile(100, 2000), batchFile(100, 20_000)]) {
      const refused = await refusal(client.files.create({ file: await toFile(bytes, 'big.jsonl'), purpose: 'batch' }));
      expect(refused).toMatchObject({ status: 413 });
      expect(refused.message).toContain('TOLLGATE_FILES_MAX_BYTES');
    }
    const refused = await refusal(
      client.files.create({ purpose: 'user_data', file: await toFile(Buffer.alloc(70 * 1024, 7), 'big.bin') }),
    );
    expect(refused).toMatchObject({ status: 413 });
    expect((await client.files.list()).data).toEqual([]);
    expect(await storedBlobs()).toBe(0);
  });

  it('refuses a batch file of more than TOLLGATE_FILES_MAX_LINES requests, and keeps nothing', async () => {
    const refused = await refusal(
      client.files.create({ purpose: 'batch', file: await toFile(batchFile(101), 'many.jsonl') }),
    );
    expect(refused).toMatchObject({ status: 400 });
    expect(refused.message).toContain('TOLLGATE_FILES_MAX_LINES');
    // The same lines are a user_data file like any other.
    const kept = await client.files.create({ purpose: 'user_data', file: await toFile(batchFile(101), 'many.jsonl') });
    await client.files.delete(kept.id);
    expect(await storedBlobs()).toBe(0);
  });

  it("keeps an organization's files within TOLLGATE_FILES_ORG_MAX and _ORG_MAX_BYTES", async () => {
    const small = () => toFile(batchFile(5), 'small.jsonl');
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await client.files.create({ file: await small(), purpose: 'batch' }));
    const refused = await refusal(client.files.create({ file: await small(), purpose: 'batch' }));
    expect(refused).toMatchObject({ status: 400 });
    expect(refused.message).toContain('TOLLGATE_FILES_ORG_MAX=3');
    await client.files.delete(made.pop()!.id);
    await client.files.delete(made.pop()!.id);
    // 60 KB and 60 KB: the second would pass 100 KiB together.
    const large = () => toFile(Buffer.alloc(60 * 1024, 1), 'large.bin');
    const first = await client.files.create({ file: await large(), purpose: 'user_data' });
    await client.files.delete(made.pop()!.id);
    const over = await refusal(client.files.create({ file: await large(), purpose: 'user_data' }));
    expect(over).toMatchObject({ status: 400 });
    expect(over.message).toContain('TOLLGATE_FILES_ORG_MAX_BYTES');
    await client.files.delete(first.id);
    expect(await storedBlobs()).toBe(0);
  });

  it('answers 404 for a file of another project of the same organization, or of no project', async () => {
    const { projects } = gateway.services;
    const owner = await gateway.tenant();
    const projectA = await projects.create({ orgId: owner.orgId, createdBy: null, name: 'a' });
    const projectB = await projects.create({ orgId: owner.orgId, createdBy: null, name: 'b' });
    const keyOf = async (projectId?: string) => {
      const { secret } = await gateway.services.keys.create({ orgId: owner.orgId, name: 'k', projectId });
      return new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
    };
    const [inA, inB, inNone] = [await keyOf(projectA.id), await keyOf(projectB.id), await keyOf()];
    const file = await inA.files.create({ file: await toFile(batchFile(2), 'a.jsonl'), purpose: 'batch' });
    for (const stranger of [inB, inNone]) {
      await expect(stranger.files.retrieve(file.id)).rejects.toMatchObject({ status: 404 });
      await expect(stranger.files.content(file.id)).rejects.toMatchObject({ status: 404 });
      await expect(stranger.files.delete(file.id)).rejects.toMatchObject({ status: 404 });
      expect((await stranger.files.list()).data).toEqual([]);
    }
    expect((await inA.files.retrieve(file.id)).id).toBe(file.id);
    await inA.files.delete(file.id);
  });
});
