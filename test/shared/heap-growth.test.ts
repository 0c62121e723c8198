import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, HeapGrowth, setHeapGrowth } from '../../src/shared/heap-growth.js';

describe('setHeapGrowth', () => {
  it("fixes V8's heap growing factor at start-up", () => {
    expect(HEAP_GROWING_PERCENT).toBe(300);
    expect(setHeapGrowth([])).toBe(true);
    expect(setHeapGrowth(['--enable-source-maps'])).toBe(true);
  });

  it('leaves a value given to node alone, in either spelling', () => {
    expect(setHeapGrowth(['--heap-growing-percent=50'])).toBe(false);
    expect(setHeapGrowth(['--heap_growing_percent=50'])).toBe(false);
    expect(setHeapGrowth(['--heap-growing-percent', '50'])).toBe(false);
  });
});

describe('HeapGrowth', () => {
  const source = (parts: string[]) =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (const part of parts) controller.enqueue(new TextEncoder().encode(part));
        controller.close();
      },
    });
  const read = async (body: ReadableStream<Uint8Array>) => new Response(body).text();

  it('holds the lowered factor from a download’s first read to its end, and passes its bytes unchanged', async () => {
    const heap = new HeapGrowth(true);
    const first = heap.whileStreaming(source(['a,b\n', '1,2\n']));
    const second = heap.whileStreaming(source(['x']));
    expect(heap.streaming).toBe(0);
    const reader = first.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('a,b\n');
    expect(heap.streaming).toBe(1);
    expect(await read(second)).toBe('x');
    expect(heap.streaming).toBe(1);
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('1,2\n');
    expect((await reader.read()).done).toBe(true);
    expect(heap.streaming).toBe(0);
  });

  it('lets go when the client leaves half-way, once', async () => {
    const heap = new HeapGrowth(true);
    const body = heap.whileStreaming(source(['a', 'b', 'c']));
    const reader = body.getReader();
    await reader.read();
    expect(heap.streaming).toBe(1);
    await reader.cancel();
    expect(heap.streaming).toBe(0);
  });

  it('leaves a factor given to node alone: the body is the one given', () => {
    const heap = new HeapGrowth(false);
    const body = source(['a']);
    expect(heap.whileStreaming(body)).toBe(body);
  });
});
