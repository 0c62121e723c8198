import { defineConfig } from 'drizzle-kit';

// `npm run db:generate` writes a new migration into drizzle/ after a schema change.
export default defineConfig({
  dialect: 'postgresql',
  // Every domain's tables, one file each (schema.ts only re-exports them, so it is not read twice).
  schema: './src/shared/db/*-schema.ts',
  out: './drizzle',
});
