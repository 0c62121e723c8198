import { PGlite } from '@electric-sql/pglite';
const mb = () => Math.round(process.memoryUsage().rss / 1048576);
console.log('start', mb());
const db = new PGlite(process.argv[2] ?? 'memory://');
await db.query('select 1');
console.log('after open', mb(), process.memoryUsage());
