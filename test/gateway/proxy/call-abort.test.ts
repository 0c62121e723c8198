import { describe, expect, it } from 'vitest';
import { CallAbort } from '../../../src/gateway/proxy/call-abort.js';

describe('CallAbort', () => {
  it("tells the listener of the call's open request once, with an AbortError whose cause is the reason", () => {
    const abort = new CallAbort();
    const first: Error[] = [];
    const second: Error[] = [];
    abort.onAbort((error) => first.push(error));
    // A failover's next request replaces the first's listener: the first request has ended.
    abort.onAbort((error) => second.push(error));
    const reason = new DOMException('upstream timeout', 'TimeoutError');
    abort.abort(reason);
    abort.abort(new Error('later'));
    expect(first).toEqual([]);
    expect(second).toHaveLength(1);
    expect(second[0]).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR', cause: reason });
    expect(abort.aborted).toBe(true);
    expect(abort.reason).toBe(reason);
  });

  it('tells a listener added after the abort at once', () => {
    const abort = new CallAbort();
    abort.abort();
    const errors: Error[] = [];
    abort.onAbort((error) => errors.push(error));
    expect(errors).toHaveLength(1);
    expect((errors[0]!.cause as DOMException).name).toBe('AbortError');
  });
});
