import type { FlowSettings } from '../../../src/config/fleet-types.js';

/** Flow control's settings in its unit tests: small bounds, a quick poll, no batch headroom. */
export const FLOW_TEST_SETTINGS: FlowSettings = {
  enabled: true,
  queuePerOrg: 100,
  queueTotal: 1000,
  maxWaitMs: 60_000,
  inputWeight: 1,
  outputWeight: 2,
  pollMs: 10,
  batchHeadroom: 0,
  batchHeadroomMs: 30_000,
  peers: false,
};
