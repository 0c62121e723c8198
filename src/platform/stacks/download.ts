import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { GatewayError } from '../../shared/http/errors.js';

export interface DownloadRules {
  /** http:// URLs too (default: https only). */
  allowHttp: boolean;
  /** Private, loopback, link-local and other non-public addresses too (default: refused). */
  allowPrivate: boolean;
  maxBytes: number;
  timeoutMs: number;
  maxRedirects: number;
}

/**
 * Fetches a stack's .zip from a URL for `POST /v1/stacks {"url"}`, guarded
 * against server-side request forgery: https only (unless allowed), and the
 * host's address checked when the connection is made (so a name that
 * resolves to a private, loopback or link-local address is refused, and a
 * name that changes its answer between check and connect cannot slip
 * through); at most `maxRedirects` redirects, each checked the same way; at
 * most `maxBytes`, counted as they arrive; `timeoutMs` for the whole download.
 * Every refusal is a 400 naming `url` and the reason.
 *
 * @example
 * const zip = await downloadPackage('https://example.com/monitoring.zip', rules);
 */
export async function downloadPackage(url: string, rules: DownloadRules): Promise<{ zip: Buffer; fileName: string }> {
  const deadline = AbortSignal.timeout(rules.timeoutMs);
  let current = url;
  for (let redirects = 0; ; redirects++) {
    const target = checkedUrl(current, rules);
    const response = await get(target, rules, deadline);
    const status = response.statusCode ?? 0;
    if (status >= 300 && status < 400 && response.headers.location) {
      response.resume();
      if (redirects >= rules.maxRedirects) throw refusal(`More than ${rules.maxRedirects} redirects.`);
      current = new URL(response.headers.location, target).toString();
      continue;
    }
    if (status !== 200) {
      response.resume();
      throw refusal(`The server answered ${status}.`);
    }
    const declared = Number(response.headers['content-length']);
    if (Number.isFinite(declared) && declared > rules.maxBytes) {
      response.destroy();
      throw refusal(`The file is ${declared} bytes; at most ${rules.maxBytes} are taken.`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of response as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > rules.maxBytes) {
          response.destroy();
          throw refusal(`The file is larger than ${rules.maxBytes} bytes.`);
        }
        chunks.push(chunk);
      }
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      throw refusal(
        deadline.aborted ? `The download took longer than ${rules.timeoutMs} ms.` : 'The download broke off.',
      );
    }
    const fileName = decodeURIComponent(target.pathname.split('/').pop() || 'stack.zip');
    return { zip: Buffer.concat(chunks), fileName };
  }
}

function checkedUrl(text: string, rules: DownloadRules): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw refusal('It is not a URL.');
  }
  if (url.protocol !== 'https:' && !(rules.allowHttp && url.protocol === 'http:'))
    throw refusal(rules.allowHttp ? 'Only http and https URLs are taken.' : 'Only https URLs are taken.');
  if (url.username || url.password) throw refusal('URLs with credentials are not taken.');
  // An address written in the URL is connected to without a lookup: check it here.
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  if (ipaddr.isValid(literal) && !rules.allowPrivate && !isPublic(literal))
    throw refusal(`${literal} is a private, loopback or link-local address.`);
  return url;
}

function get(url: URL, rules: DownloadRules, signal: AbortSignal): Promise<IncomingMessage> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.get(
      url,
      { signal, lookup: checkedLookup(rules), headers: { accept: 'application/zip, application/octet-stream' } },
      resolve,
    );
    request.on('error', (error) => {
      if (error instanceof GatewayError) return reject(error);
      reject(
        refusal(
          signal.aborted
            ? `The download took longer than ${rules.timeoutMs} ms.`
            : `The server could not be reached (${(error as NodeJS.ErrnoException).code ?? error.message}).`,
        ),
      );
    });
  });
}

/**
 * A DNS lookup whose answers must all be public addresses (unless allowed): the connection uses
 * exactly what was checked.
 */
function checkedLookup(rules: DownloadRules): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 4);
      const refused = rules.allowPrivate ? undefined : addresses.find((a) => !isPublic(a.address));
      if (refused)
        return callback(
          refusal(`${hostname} is a private, loopback or link-local address (${refused.address}).`),
          '',
          4,
        );
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

function isPublic(address: string): boolean {
  try {
    let parsed = ipaddr.parse(address);
    if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
      parsed = (parsed as ipaddr.IPv6).toIPv4Address();
    return parsed.range() === 'unicast';
  } catch {
    return false;
  }
}

function refusal(reason: string): GatewayError {
  return new GatewayError('invalid_request', `The package could not be downloaded: ${reason}`, {
    details: [{ field: 'url', message: reason }],
  });
}
