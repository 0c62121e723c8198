import { describe, expect, it } from 'vitest';
import { until } from './wait.js';

describe('until', () => {
  it("answers the check's first truthy value", async () => {
    let calls = 0;
    const value = await until('the third call', () => (++calls >= 3 ? { calls } : null), { interval: 1 });
    expect(value).toEqual({ calls: 3 });
  });

  it('fails at once with what the check throws', async () => {
    let calls = 0;
    const started = performance.now();
    await expect(
      until('never', () => {
        calls += 1;
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(calls).toBe(1);
    // Before its deadline (10 s by default), so from the throw, not from timing out.
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('times out naming what it waited for, with the detail', async () => {
    await expect(
      until('pigs fly', () => false, { timeout: 50, interval: 5, detail: () => ({ pigs: 'grounded', at: 1n }) }),
    ).rejects.toThrow(/^timed out after 50 ms waiting until pigs fly\n\{\n {2}"pigs": "grounded",\n {2}"at": "1"\n\}$/);
  });
});
