import { describe, expect, it } from 'vitest';
import { HEAP_GROWING_PERCENT, setHeapGrowth } from '../../src/server/heap-growth.js';

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
