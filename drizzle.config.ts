import { defineConfig } from 'drizzle-kit';

// `npm run db:generate` writes a new migration into drizzle/ after a schema change.
export default defineConfig({
  dialect: 'postgresql',
  schema: [
    './src/shared/db/schema.ts',
    './src/shared/db/blob-schema.ts',
    './src/shared/db/files-schema.ts',
    './src/shared/db/batches-schema.ts',
  ],
  out: './drizzle',
});
