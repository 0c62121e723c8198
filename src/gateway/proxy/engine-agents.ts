import http from 'node:http';
import https from 'node:https';
import { urlToHttpOptions } from 'node:url';
import { LRUCache } from 'lru-cache';

/** Idle keep-alive connections kept per engine address (host and port), for each scheme. */
export const IDLE_CONNECTIONS_PER_ENGINE = 256;
/**
 * Engine URLs kept parsed, the one least recently asked for forgotten first: a replica has a few
 * paths.
 */
export const PARSED_URLS_KEPT = 1_000;

/** An engine URL as node:http is asked for it. */
export interface ParsedEngineUrl {
  https: boolean;
  options: http.RequestOptions;
}

/**
 * How the gateway reaches the engines: keep-alive connections reused across requests (one pair of
 * node:http agents, keyed by the engine's address, bounded by `IDLE_CONNECTIONS_PER_ENGINE` idle
 * connections each), and the engines' URLs parsed once (keyed by URL, bounded by
 * `PARSED_URLS_KEPT`: parsing one costs about 16 k instructions, callgrind, against 0.3 k to find
 * it kept). One per process, made in services.ts and passed to every engine call (`postUpstream`).
 * node:http rather than fetch: fetch's WHATWG streams and per-request objects cost the gateway more
 * CPU per request than all of its own work.
 */
export class EngineAgents {
  readonly http = new http.Agent({ keepAlive: true, maxFreeSockets: IDLE_CONNECTIONS_PER_ENGINE });
  readonly https = new https.Agent({ keepAlive: true, maxFreeSockets: IDLE_CONNECTIONS_PER_ENGINE });
  private readonly parsedUrls = new LRUCache<string, ParsedEngineUrl>({ max: PARSED_URLS_KEPT });

  /** `url` parsed, once however often it is asked for. */
  parsed(url: string): ParsedEngineUrl {
    let parsed = this.parsedUrls.get(url);
    if (!parsed) {
      const target = new URL(url);
      parsed = { https: target.protocol === 'https:', options: urlToHttpOptions(target) };
      this.parsedUrls.set(url, parsed);
    }
    return parsed;
  }
}
