import { readFileSync } from 'node:fs';
import type Docker from 'dockerode';
import { lazily } from '../lazy-require.js';

const dockerode = lazily<typeof Docker>('dockerode');

/**
 * Where a Docker engine listens (an engine definition's `docker_host` and `tls`, or a run sandbox's
 * socket).
 */
export interface DockerAddress {
  /** `unix:///var/run/docker.sock` or `tcp://host:port`. */
  docker_host: string;
  /** Client certificate files for a TCP engine over TLS. */
  tls?: { ca: string; cert: string; key: string };
}

const clients = new Map<string, Docker>();

/**
 * The dockerode client for a definition's Docker engine: the local socket, or
 * a remote engine over TCP (with TLS client files), so one gateway can drive
 * GPU boxes beyond its own. One client per engine address.
 *
 * @example
 * const docker = dockerClientFor({ docker_host: 'tcp://gpu-2:2376', tls: { ca, cert, key } });
 */
export function dockerClientFor(definition: DockerAddress): Docker {
  const key = definition.docker_host;
  let client = clients.get(key);
  if (!client) {
    client = new (dockerode())(connectionOf(definition));
    clients.set(key, client);
  }
  return client;
}

function connectionOf({ docker_host: host, tls }: DockerAddress): Docker.DockerOptions {
  if (host.startsWith('unix://')) return { socketPath: host.slice('unix://'.length) };
  const url = new URL(host.replace(/^tcp:/, tls ? 'https:' : 'http:'));
  const options: Docker.DockerOptions = {
    host: url.hostname,
    port: Number(url.port || (tls ? 2376 : 2375)),
    protocol: tls ? 'https' : 'http',
  };
  if (tls)
    Object.assign(options, { ca: readFileSync(tls.ca), cert: readFileSync(tls.cert), key: readFileSync(tls.key) });
  return options;
}
