import { describe, expect, it } from 'vitest';
import { toolAndSandboxMissing } from './tool-and-sandbox.js';

// The skip line of the run tests with the real tool names what is missing: with terraform there and
// no sandbox it said "neither tofu nor terraform is on PATH".
describe('what the real-tool run tests lack, said as it is', () => {
  it('names the sandbox when the tool is there, the tool when the sandbox is, both when both are missing', () => {
    expect(toolAndSandboxMissing('/usr/local/bin/terraform', 0)).toBe(
      'no run sandbox here (bubblewrap, or a Docker engine), though /usr/local/bin/terraform is on PATH',
    );
    expect(toolAndSandboxMissing(null, 1)).toBe('neither tofu nor terraform is on PATH');
    expect(toolAndSandboxMissing(null, 0)).toBe(
      'neither tofu nor terraform is on PATH, and no run sandbox here (bubblewrap, or a Docker engine)',
    );
    expect(toolAndSandboxMissing('/usr/local/bin/tofu', 2)).toBeNull();
  });
});
