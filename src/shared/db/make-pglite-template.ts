import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureTemplate } from './pglite-template.js';

// The build's last step (`npm run build`): the PGlite template of the current migrations, made
// once.
const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { folder, made } = await ensureTemplate(path.resolve(dist, '..', 'drizzle'), dist);
if (made) process.stderr.write(`made the PGlite template ${path.relative(process.cwd(), folder)}\n`);
