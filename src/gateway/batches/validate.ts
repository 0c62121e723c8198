import { GatewayError } from '../../shared/http/errors.js';
import { describeError, type Logger } from '../../shared/http/log.js';
import type { FileStore } from '../files/store.js';
import { ingestLines } from './ingest.js';
import type { LineStore } from './line-store.js';
import type { BatchRow } from './objects.js';
import type { BatchStore } from './store.js';

/** What validating a batch reads: its stores, and how long a batch may stay `validating`. */
export interface ValidateParts {
  store: BatchStore;
  lines: LineStore;
  files: FileStore;
  log: Logger;
  settings: { validatingSeconds: number };
}

/** One entry of a failed batch's `errors.data`, in OpenAI's shape. */
interface BatchError {
  code: string;
  message: string;
  param: string | null;
  line: number | null;
}

/**
 * Validation ran past TOLLGATE_BATCHES_VALIDATING_SECONDS: thrown from the lease renewal to stop
 * reading.
 */
class ValidatingTooLong extends Error {}

/**
 * Claims one `validating` batch and reads its input file into its lines (`ingestLines`), then
 * starts it. It ends `failed`, with `errors`, instead of staying `validating`: when its input file
 * is gone, when anything but an unreachable store throws while it is read (a bad file fails the
 * same way on every replica and every lease, so trying it again only holds one of the
 * organization's batch slots for good), and when it has been validating longer than
 * TOLLGATE_BATCHES_VALIDATING_SECONDS (the store was unreachable every time, or replicas died
 * reading it). An unreachable store is left to the batch's lease: another round tries again.
 */
export async function validateOne(parts: ValidateParts, replica: string): Promise<void> {
  const batch = await parts.store.claim(replica, ['validating']);
  if (!batch) return;
  const deadline = batch.createdAt.getTime() + parts.settings.validatingSeconds * 1000;
  try {
    await validate(parts, replica, batch, deadline);
  } catch (error) {
    if (unreachable(error) && Date.now() < deadline) throw error;
    parts.log.warn('batches: a batch failed validation', { batchId: batch.id, ...describeError(error) });
    await fail(parts.store, replica, batch.id, errorOf(error, parts.settings.validatingSeconds));
  }
}

async function validate(parts: ValidateParts, replica: string, batch: BatchRow, deadline: number): Promise<void> {
  const { store, lines, files } = parts;
  if (batch.ending === 'expired') {
    await store.update(batch.id, replica, { status: 'expired', expiredAt: new Date() });
    return;
  }
  if (Date.now() >= deadline) throw new ValidatingTooLong();
  const input = await files.content({ orgId: batch.orgId, projectId: batch.projectId }, batch.inputFileId);
  if (!input) {
    const message = 'The input file was deleted before the batch read it.';
    await fail(store, replica, batch.id, { code: 'invalid_file', message, param: 'input_file_id', line: null });
    return;
  }
  const renew = async () => {
    if (Date.now() >= deadline) throw new ValidatingTooLong();
    await store.renew(batch.id, replica);
  };
  try {
    const total = await ingestLines(input.bytes, batch, lines, renew);
    await store.started(batch.id, replica, total);
  } finally {
    input.bytes.destroy();
  }
}

async function fail(store: BatchStore, replica: string, id: string, error: BatchError): Promise<void> {
  await store.update(id, replica, { status: 'failed', failedAt: new Date(), errors: JSON.stringify([error]) });
}

/**
 * The store could not be reached (a timeout, a lost connection: 503), as opposed to a statement
 * PostgreSQL refused for what it was given (SQLSTATE class 22 data exception, 23 constraint), which
 * fails again whoever tries it.
 */
function unreachable(error: unknown): boolean {
  if (!(error instanceof GatewayError) || error.status !== 503) return false;
  for (let current: unknown = error, depth = 0; current instanceof Object && depth < 6; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^2[23]/.test(code)) return false;
    current = (current as { cause?: unknown }).cause;
  }
  return true;
}

function errorOf(error: unknown, validatingSeconds: number): BatchError {
  if (error instanceof ValidatingTooLong || unreachable(error))
    return {
      code: 'validation_timeout',
      message: `The batch's input file was not read within ${validatingSeconds} seconds (TOLLGATE_BATCHES_VALIDATING_SECONDS).`,
      param: 'input_file_id',
      line: null,
    };
  return {
    code: 'invalid_file',
    message: "The batch's input file could not be read into requests; upload it again, checked as batch files are.",
    param: 'input_file_id',
    line: null,
  };
}
