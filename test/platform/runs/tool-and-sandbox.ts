/**
 * What a test of the real OpenTofu or Terraform in a run sandbox lacks on this machine, said as it
 * is (the tool, the sandbox, or both), or null when it has both: a newcomer with terraform and no
 * bubblewrap is told to get bubblewrap, not terraform.
 *
 * @example
 * toolAndSandboxMissing('/usr/local/bin/terraform', 0);
 * // 'no run sandbox here (bubblewrap, or a Docker engine), though /usr/local/bin/terraform is on PATH'
 */
export function toolAndSandboxMissing(tool: string | null, sandboxes: number): string | null {
  const noTool = 'neither tofu nor terraform is on PATH';
  const noSandbox = 'no run sandbox here (bubblewrap, or a Docker engine)';
  if (!tool && sandboxes === 0) return `${noTool}, and ${noSandbox}`;
  if (!tool) return noTool;
  if (sandboxes === 0) return `${noSandbox}, though ${tool} is on PATH`;
  return null;
}
