import type { IncomingMessage } from 'node:http';
import { badRequest, internalError, type SimHttpError } from './errors.js';
import type { JsonObject } from './fields.js';

/**
 * Faults a request can ask for, by header `x-sim-fail` or body field
 * `sim_fail` (the body route works through a gateway that forwards unknown
 * body fields but not headers).
 */
export type FaultMode = '500' | '400' | 'midstream' | 'drop' | 'leak';

/** Faults that happen after generation started, so they need a valid request. */
export type StreamFault = 'midstream' | 'drop';

/** Tokens sent before a stream fault strikes. */
export const FAULT_TOKENS = 3;

const MODES: ReadonlySet<string> = new Set<FaultMode>(['500', '400', 'midstream', 'drop', 'leak']);

/** The mid-stream error message (also the 500 for non-streaming requests). */
export const MIDSTREAM_MESSAGE = 'Simulated engine failure during generation (sim_fail=midstream).';

/** Deliberately leaks a host, an address and a Python traceback, for sanitization tests. */
const LEAK_MESSAGE =
  'EngineCore failed on vllm-worker-7.internal (10.1.2.3:8000)\n' +
  'Traceback (most recent call last):\n' +
  '  File "/usr/lib/python3/dist-packages/vllm/engine.py", line 42, in step\n' +
  '    outputs = self.model_executor.execute_model(batch)\n' +
  'RuntimeError: CUDA error: an illegal memory access was encountered';

/**
 * The fault a request asks for; the header wins over the body field. An
 * unknown mode is a 400, so a typo in a test fails loudly.
 *
 * @example
 * readFault(req, { sim_fail: 'midstream' }); // 'midstream'
 */
export function readFault(req: IncomingMessage, body: JsonObject | null): FaultMode | null {
  const header = req.headers['x-sim-fail'];
  const raw = (Array.isArray(header) ? header[0] : header) ?? body?.sim_fail;
  if (raw === undefined || raw === null || raw === '') return null;
  // A number names a mode too (`"sim_fail": 500`); an object or a list names none, and is shown as
  // it was sent.
  const mode = typeof raw === 'string' || typeof raw === 'number' ? String(raw).trim().toLowerCase() : '';
  if (!MODES.has(mode)) {
    throw badRequest(
      `Unknown sim_fail mode "${typeof raw === 'string' ? raw : JSON.stringify(raw)}"; use 500, 400, midstream, drop or leak.`,
      'sim_fail',
    );
  }
  return mode as FaultMode;
}

/**
 * The error a request fails with before any work: an immediate fault, or a
 * random 500 at `failureRate`. Null when it should proceed.
 *
 * @example
 * const error = immediateFailure(fault, state.failureRate);
 * if (error) return sendError(res, error);
 */
export function immediateFailure(fault: FaultMode | null, failureRate: number): SimHttpError | null {
  switch (fault) {
    case '500':
      return internalError('Simulated internal server error (sim_fail=500).');
    case '400':
      return badRequest('Simulated bad request (sim_fail=400).');
    case 'leak':
      return internalError(LEAK_MESSAGE);
    default:
      break;
  }
  if (failureRate > 0 && Math.random() < failureRate) {
    return internalError(`Simulated engine failure (failure rate ${failureRate}).`);
  }
  return null;
}

/**
 * Narrows a fault to the ones that strike after generation started.
 *
 * @example
 * streamFault('drop'); // 'drop'
 * streamFault('500'); // null
 */
export function streamFault(fault: FaultMode | null): StreamFault | null {
  return fault === 'midstream' || fault === 'drop' ? fault : null;
}
