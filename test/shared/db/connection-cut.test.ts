import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../src/shared/db/client.js';
import { createTestDatabase, postgresAdminUrl, postgresAvailable } from '../../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy.js';

const available = await postgresAvailable();

// A database restarted or failed over cuts connections the gateway is still opening. What its
// driver does then must reach the caller as an error: an unhandled rejection ends a Node process,
// and with it every stream it serves.
describe.runIf(available)('a PostgreSQL connection cut at its first statement', () => {
  let proxy: TcpProxy;
  let url: string;
  let drop: () => Promise<void>;
  const unhandled: unknown[] = [];
  const record = (reason: unknown) => void unhandled.push(reason);

  beforeAll(async () => {
    const database = await createTestDatabase();
    drop = database.drop;
    proxy = await startTcpProxy(Number(new URL(postgresAdminUrl).port || 5432));
    const through = new URL(database.url);
    through.hostname = '127.0.0.1';
    through.port = String(proxy.port);
    url = through.toString();
    process.on('unhandledRejection', record);
  });
  afterAll(async () => {
    process.off('unhandledRejection', record);
    await proxy?.stop();
    await drop?.();
  });

  it('fails the statement that needed it, with an error its caller catches, and nothing else', async () => {
    // Every statement the driver sends on a new connection holds "select": the first one seen is
    // cut.
    proxy.cutAt('select');
    await expect(openStore({ databaseUrl: url, dataDir: 'memory://', poolSize: 1 })).rejects.toThrow();
    const store = await openStore({ databaseUrl: url, dataDir: 'memory://', poolSize: 1 });
    try {
      expect(await store.db.execute(sql`select 1 as one`)).toBeTruthy();
    } finally {
      await store.close();
    }
    // A rejection nobody awaited surfaces on a later turn of the event loop.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(unhandled).toEqual([]);
  });
});
