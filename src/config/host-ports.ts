import { z } from 'zod';

/**
 * A comma-separated list of `host:port` (a name or an IPv4 address), as ioredis's startup nodes and
 * sentinels.
 */
export function hostPortList(name: string) {
  return z
    .string()
    .regex(/^[^\s,:]+:\d{1,5}(,[^\s,:]+:\d{1,5})*$/, `${name} must be host:port pairs separated by commas`)
    .transform((list) =>
      list.split(',').map((pair) => {
        const [host, port] = pair.split(':');
        return { host: host!, port: Number(port) };
      }),
    );
}
