import { bigint, timestamp } from 'drizzle-orm/pg-core';

// Columns every domain's schema writes alike. Money columns hold integer nano-units of the
// gateway's currency (1 USD = 1_000_000_000), as bigint: never floats. See
// `src/gateway/billing/money.ts`.

export const createdAt = () => timestamp('created_at', { withTimezone: true }).notNull().defaultNow();
export const money = (name: string) => bigint(name, { mode: 'bigint' });
