import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/shared/http/log.js';
import { OutageLog } from '../../../src/shared/http/outage.js';

describe('OutageLog', () => {
  function outageLog() {
    const lines: string[] = [];
    const log = createLogger('debug', (line) => lines.push(JSON.parse(line).message));
    return { lines, outage: new OutageLog(log, 'database', 'charges wait') };
  }

  it('logs one line when an outage starts and one when it ends, however many failures between', () => {
    const { lines, outage } = outageLog();
    for (let i = 0; i < 5; i++) outage.failed(new Error('down'), Date.now());
    outage.succeeded();
    outage.succeeded();
    expect(lines).toEqual(['database unreachable: charges wait', 'database reachable again']);
  });

  it('does not start another outage for an attempt that began before the last one ended', () => {
    const { lines, outage } = outageLog();
    const stuck = Date.now() - 1_000;
    outage.failed(new Error('down'), stuck);
    outage.succeeded();
    // A query sent during the outage fails just after another got through: nothing new.
    outage.failed(new Error('down'), stuck);
    expect(outage.isDown).toBe(false);
    // One sent after the recovery that fails is a new outage.
    outage.failed(new Error('down again'), Date.now() + 1);
    expect(outage.isDown).toBe(true);
    expect(lines).toEqual([
      'database unreachable: charges wait',
      'database reachable again',
      'database unreachable: charges wait',
    ]);
  });
});
