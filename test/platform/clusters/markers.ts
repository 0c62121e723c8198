import { createPrivateKey } from 'node:crypto';
import { sql } from 'drizzle-orm';
import ssh2 from 'ssh2';
import type { Database } from '../../../src/shared/db/client.js';
import { rowsOf } from '../../../src/shared/db/rows.js';

/**
 * What of an unencrypted OpenSSH ed25519 private key would show if it leaked:
 * never its first base64 line (a fixed header, the same for every such key),
 * but every line after it, the same lines as bytes (a `bytea` dumps as hex),
 * those lines inside the whole file in base64, and the private scalar itself
 * in hex, base64 and base64url.
 *
 * @example
 * for (const marker of secretMarkers(privateKey)) expect(dump).not.toContain(marker);
 */
export function secretMarkers(privateKey: string): string[] {
  const parsed = ssh2.utils.parseKey(privateKey);
  if (parsed instanceof Error || Array.isArray(parsed)) throw new Error('not one private key ssh2 reads');
  const seed = Buffer.from(createPrivateKey(parsed.getPrivatePEM()).export({ format: 'jwk' }).d!, 'base64url');
  const lines = privateKey.split('\n').filter((line) => line && !line.startsWith('-----'));
  const secretLines = lines.slice(1).filter((line) => line.length >= 16);
  const markers = [seed.toString('hex'), seed.toString('base64').replace(/=+$/, ''), seed.toString('base64url')];
  for (const line of secretLines) {
    markers.push(line, Buffer.from(line).toString('hex'));
    // The line inside the whole file in base64: the whole 3-byte groups it covers.
    const at = privateKey.indexOf(line);
    const from = Math.ceil(at / 3) * 3;
    const to = Math.floor((at + line.length) / 3) * 3;
    markers.push(Buffer.from(privateKey.slice(from, to)).toString('base64'));
  }
  return markers;
}

/**
 * Every row of every table of the database, each as PostgreSQL's text of the row (a `bytea` as `\x`
 * and hex).
 */
export async function dumpDatabase(db: Database): Promise<string> {
  const tables = rowsOf<Record<string, string>>(
    await db.execute(
      sql`select table_schema as schema, table_name as name from information_schema.tables where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema') order by 1, 2`,
    ),
  );
  const parts: string[] = [];
  for (const table of tables) {
    const rows = rowsOf<Record<string, string>>(
      await db.execute(sql.raw(`select t::text as row from "${table.schema}"."${table.name}" t`)),
    );
    parts.push(`-- ${table.schema}.${table.name}: ${rows.length} rows`, ...rows.map((row) => row.row!));
  }
  return parts.join('\n');
}
