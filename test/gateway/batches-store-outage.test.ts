import { describe, expect, it } from 'vitest';
import { bounded as batchStatement } from '../../src/gateway/batches/store.js';

describe('the batches store failing', () => {
  it('answers batches_unavailable for the batches store, not files_unavailable', async () => {
    const error = await batchStatement(Promise.reject(new Error('connection refused'))).catch(
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({ code: 'batches_unavailable', status: 503, headers: { 'Retry-After': '2' } });
  });
});
