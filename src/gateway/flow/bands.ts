import { BANDS } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';

// The priority bands of the fleet's flow control (docs/fair-sharing.md): a
// waiting request of a higher band is always dispatched before a lower one;
// within a band, organizations share fairly by the tokens they are served.

/**
 * Highest first: the order a saturated fleet serves them in, and vLLM's `priority` (lower is served
 * first).
 */
export { BANDS };
export type Band = (typeof BANDS)[number];

/** A key's band when nobody set one. */
export const DEFAULT_BAND: Band = 'default';

/** The header a request names a band in (no higher than its key's). */
export const BAND_HEADER = 'x-tollgate-band';

/** 0 for `interactive` to 3 for `batch`: the engine's priority, and the queue's order. */
export function bandRank(band: Band): number {
  return BANDS.indexOf(band);
}

/**
 * The `priority` a request is sent with to engines that schedule by priority (vLLM's, lower served
 * first, a better one preempting a running worse one): two a band, so that a request `ahead` (its
 * organization below its share, `ModelFlow.belowShare`) goes before its own band's others and
 * after every better band's.
 */
export function enginePriority(rank: number, ahead: boolean): number {
  return 2 * rank + (ahead ? 0 : 1);
}

export function isBand(value: unknown): value is Band {
  return typeof value === 'string' && (BANDS as readonly string[]).includes(value);
}

/**
 * The band a request runs in: the one its `X-Tollgate-Band` header names, at or below its key's;
 * the key's when it names none. A band above the key's is a 403 (asking does not raise a key), an
 * unknown one a 400.
 */
export function requestedBand(asked: string | undefined, keyBand: Band): Band {
  if (asked === undefined || asked === '') return keyBand;
  const band = asked.trim().toLowerCase();
  if (!isBand(band))
    throw new GatewayError(
      'invalid_request',
      `${BAND_HEADER} must be one of ${BANDS.join(', ')}; got "${asked.slice(0, 40)}".`,
      {
        details: [{ field: BAND_HEADER, message: `one of ${BANDS.join(', ')}` }],
      },
    );
  if (bandRank(band) < bandRank(keyBand))
    throw new GatewayError(
      'forbidden',
      `This key may use the ${keyBand} band or a lower one (${BANDS.slice(bandRank(keyBand)).join(', ')}); it asked for ${band}. An owner or the operator sets a key's band.`,
    );
  return band;
}

/**
 * The bands an organization's owners and admins may give a key: `default` and below. A higher band
 * is served before every other organization's `default`, so `interactive` is the operator's to
 * grant (the operator API, a platform admin); an owner may keep it on a key that has it, or lower
 * it, but not give it. Throws 403 naming who may.
 */
export function assertOwnerMayGive(band: Band, current: Band): void {
  if (bandsOwnersGive(current).includes(band)) return;
  throw new GatewayError(
    'forbidden',
    `An organization's owners and admins set a key's band to ${BANDS.slice(bandRank(DEFAULT_BAND)).join(', ')}; ` +
      `only the operator grants ${band}.`,
  );
}

/**
 * The bands an owner or admin may choose for a key now in `current`, highest first
 * (`assertOwnerMayGive`'s rule).
 */
export function bandsOwnersGive(current: Band): Band[] {
  return BANDS.filter((band) => band === current || bandRank(band) >= bandRank(DEFAULT_BAND));
}
