import { customType } from 'drizzle-orm/pg-core';

/** Binary data (a stack's .zip, a blob's chunk), as bytea. */
export const bytea = customType<{ data: Buffer; driverData: Buffer | Uint8Array }>({
  dataType: () => 'bytea',
  fromDriver: (value) => Buffer.from(value),
});
