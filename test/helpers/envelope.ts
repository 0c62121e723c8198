import { expect } from 'vitest';

/** Asserts a response is the spec's error envelope with this status, code and type. */
export async function expectError(
  response: Response,
  status: number,
  code: string,
  type: string,
): Promise<{ message: string; details?: unknown }> {
  const body = (await response.json()) as { error: { message: string; type: string; code: string; details?: unknown } };
  expect({ status: response.status, code: body.error?.code, type: body.error?.type }).toEqual({ status, code, type });
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  return body.error;
}

/** Nothing in a client-visible text may name where or what the engine is. */
export function expectNoUpstreamDetails(text: string): void {
  for (const leak of [
    /\d{1,3}(\.\d{1,3}){3}/,
    /\.internal\b/,
    /Traceback/,
    /\.py\b/,
    /127\.0\.0\.1/,
    /localhost/,
    /vllm/i,
    /simulator/i,
  ]) {
    expect(text).not.toMatch(leak);
  }
}
