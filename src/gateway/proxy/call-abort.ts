/**
 * What ends an engine call early: the upstream timeout, the client leaving, a
 * stream's relay giving up. A plain object rather than an AbortController: an
 * AbortSignal given to `http.request` costs about 20 µs of CPU a request (a
 * weak listener and an end-of-stream watcher on every request), where this
 * costs nothing until it fires (CONTRIBUTING, "Measured on the request path").
 *
 * @example
 * const abort = new CallAbort();
 * setTimeout(() => abort.abort(new DOMException('upstream timeout', 'TimeoutError')), ms);
 * abort.onAbort((error) => request.destroy(error));
 */
export class CallAbort {
  aborted = false;
  /** What `abort` was given: the timeout's or the client's DOMException. */
  reason: unknown = undefined;
  #listener: ((error: Error) => void) | null = null;

  abort(reason: unknown = new DOMException('This operation was aborted', 'AbortError')): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listener = this.#listener;
    this.#listener = null;
    listener?.(abortedError(reason));
  }

  /**
   * Calls `listener` with an `AbortError` (its cause, the reason) when the call is aborted, at once
   * if it was. One listener at a time: a call has one engine request open, so a request sent after
   * a failover replaces the last one's.
   */
  onAbort(listener: (error: Error) => void): void {
    if (this.aborted) listener(abortedError(this.reason));
    else this.#listener = listener;
  }
}

/**
 * The error an aborted request fails with: as node's own for an aborted signal (name `AbortError`,
 * code `ABORT_ERR`).
 */
function abortedError(reason: unknown): Error {
  return Object.assign(new Error('The operation was aborted', { cause: reason }), {
    name: 'AbortError',
    code: 'ABORT_ERR',
  });
}
