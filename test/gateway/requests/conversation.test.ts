import { describe, expect, it, vi } from 'vitest';
import type { AuthorizedRequest } from '../../../src/gateway/requests/authorize.js';
import { createConversations } from '../../../src/gateway/requests/responses/conversation.js';
import type { ResponseStore } from '../../../src/gateway/stored-responses/store.js';
import { STORE_TIMEOUT_MS } from '../../../src/shared/db/timeout.js';
import { GatewayError } from '../../../src/shared/http/errors.js';
import { createLogger } from '../../../src/shared/http/log.js';

// A database that stops answering: every store call of the Responses path waits at most the store's
// timeout, then the request is a 503 (reading the chain, before any hold) or answered unstored
// (saving it, after the answer). Before, both waited for ever.

const never = () => new Promise<never>(() => {});
const silentStore = { chain: never, save: never } as unknown as ResponseStore;
const request = {
  requestId: 'req_1',
  caller: { orgId: 'org_1', id: 'key_1' },
  clientModel: 'm',
  body: { model: 'm', input: 'Hi', previous_response_id: 'resp_1' },
} as unknown as AuthorizedRequest;

describe('the Responses path on a store that stops answering', () => {
  it('reads the continued conversation within the store timeout, then answers 503', async () => {
    vi.useFakeTimers();
    try {
      const conversations = createConversations({ store: silentStore, log: createLogger('silent') });
      const loading = conversations.load(request).catch((error: unknown) => error);
      await vi.advanceTimersByTimeAsync(STORE_TIMEOUT_MS + 1);
      const error = await loading;
      expect(error).toBeInstanceOf(GatewayError);
      expect((error as GatewayError).status).toBe(503);
      // The store of responses failed, not billing: docs/api.md names this code for a
      // previous_response_id.
      expect((error as GatewayError).code).toBe('responses_unavailable');
    } finally {
      vi.useRealTimers();
    }
  });

  it('saves a response within the store timeout, then answers it as store false', async () => {
    vi.useFakeTimers();
    try {
      const conversations = createConversations({ store: silentStore, log: createLogger('silent') });
      const response: Record<string, unknown> = { id: 'resp_2', created_at: 1, store: true };
      const keeping = conversations.keep(request, [{ type: 'message', role: 'user', content: 'Hi' }], response);
      await vi.advanceTimersByTimeAsync(STORE_TIMEOUT_MS + 1);
      await keeping;
      expect(response.store).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });
});
