import type { ErrorDetail } from '../../shared/http/errors.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { StackInput } from '../stacks/manifest.js';

/** The inputs of a run once checked: every declared input with a value (given, or its default). */
export type RunInputs = Record<string, number | string>;

/**
 * Checks the inputs given to a run against the stack's declarations and
 * fills in defaults: each must be declared, of its type (`number`: a finite
 * JSON number, `string`: a string), and every required one given. All the
 * errors are reported at once, one detail per input (400 VALIDATION_ERROR).
 *
 * @example
 * checkInputs([{ name: 'replicas', type: 'number', required: false, default: 1 }], {}); // { replicas: 1 }
 */
export function checkInputs(declared: StackInput[], given: Record<string, unknown>): RunInputs {
  const details: ErrorDetail[] = [];
  const known = new Map(declared.map((input) => [input.name, input]));
  for (const name of Object.keys(given)) {
    if (!known.has(name)) details.push({ field: `inputs.${name}`, message: `The stack declares no input ${name}.` });
  }
  const values: RunInputs = {};
  for (const input of declared) {
    const value = given[input.name];
    if (value === undefined || value === null) {
      if (input.default !== undefined) values[input.name] = input.default;
      else if (input.required) details.push({ field: `inputs.${input.name}`, message: 'Required.' });
      continue;
    }
    if (input.type === 'number' ? typeof value !== 'number' || !Number.isFinite(value) : typeof value !== 'string') {
      details.push({ field: `inputs.${input.name}`, message: `Must be a ${input.type}.` });
      continue;
    }
    values[input.name] = value as number | string;
  }
  if (details.length > 0)
    throw new GatewayError('invalid_request', 'The inputs do not match what the stack declares.', { details });
  return values;
}
