import { describe, expect, it } from 'vitest';
import { withinStoreOr503 } from '../../../src/shared/db/timeout.js';
import { GatewayError } from '../../../src/shared/http/errors.js';

/** A statement that never answers, as over a dead network. */
const hung = (): Promise<never> => new Promise<never>(() => {});

describe('a store that fails or does not answer', () => {
  it('is a 503 of the code the store names, with Retry-After', async () => {
    const error = await withinStoreOr503(hung(), 'files_unavailable', 'The files cannot be read.', 20).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ code: 'files_unavailable', status: 503, headers: { 'Retry-After': '2' } });
    expect((error as GatewayError).message).toBe('The files cannot be read. Retry with backoff.');
  });

  it("lets the work's own GatewayError through as it is", async () => {
    const own = new GatewayError('not_found', 'No such file.');
    await expect(withinStoreOr503(Promise.reject(own), 'files_unavailable', 'x')).rejects.toBe(own);
  });
});
