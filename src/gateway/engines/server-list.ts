import { lookup as dnsLookup } from 'node:dns/promises';
import type { Logger } from '../../shared/http/log.js';
import type { StaticDefinition } from './definitions.js';
import { engineKindProbe } from './kinds.js';
import type { ReplicaState } from './types.js';

// An engine's servers as a list: from its `urls`, or one per address its DNS name resolves to, kept
// in step as addresses come and go.

/**
 * Every address a name resolves to now (dns.lookup with `all`, as getaddrinfo answers: /etc/hosts,
 * then DNS). Tests pass their own.
 */
export type LookupAll = (name: string) => Promise<string[]>;

export const systemLookup: LookupAll = async (name) =>
  (await dnsLookup(name, { all: true, verbatim: true })).map((entry) => entry.address);

/** One of the operator's servers, as one replica of its engine. */
export interface Server {
  id: string;
  /** Without `/v1`: `http://10.0.0.5:8000`. */
  url: string;
  state: ReplicaState;
  failures: number;
  inFlight: number;
  served: number;
  since: number;
  /** Which server it is: the definition's `engine`, or found out once it answers. */
  kind: ReturnType<typeof engineKindProbe>;
}

/** The replicas' base URLs: the list as given, or one per address the name resolves to. */
export async function serverUrls(definition: StaticDefinition, lookup: LookupAll): Promise<string[]> {
  if (definition.urls) return definition.urls.map(baseOf);
  const dns = definition.dns!;
  const addresses = await lookup(dns.name);
  return [...new Set(addresses)]
    .sort()
    .map((address) => `${dns.scheme}://${address.includes(':') ? `[${address}]` : address}:${dns.port}`);
}

/**
 * Adds the addresses that appeared (not in rotation until their /health answers) and drops the ones
 * that went.
 */
export function syncServers(
  servers: Map<string, Server>,
  definition: StaticDefinition,
  urls: string[],
  log: Logger,
  headers: Record<string, string>,
): void {
  const wanted = new Set(urls.map((url) => `${definition.model}/${new URL(url).host}`));
  for (const [id] of servers) {
    if (wanted.has(id)) continue;
    servers.delete(id);
    log.info('engine server gone from the list; out of rotation', { model: definition.model, replica: id });
  }
  for (const url of urls) {
    const id = `${definition.model}/${new URL(url).host}`;
    if (servers.has(id)) continue;
    const kind = engineKindProbe(url, headers, definition.engine);
    servers.set(id, { id, url, state: 'starting', failures: 0, inFlight: 0, served: 0, since: Date.now(), kind });
    log.info('engine server found', { model: definition.model, replica: id });
  }
}

/** `http://host:8000`, `http://host:8000/` or `http://host:8000/v1`: the form without `/v1`. */
export function baseOf(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/v1$/, '');
}
