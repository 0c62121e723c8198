import type { TranslationBounds } from '../../config/types.js';
import type { ErrorDetail } from '../../shared/http/errors.js';

/**
 * The shape checks the Messages and Responses translations share (TOLLGATE_TRANSLATION_*), each
 * linear in the body and run with its other field checks, before the key's limits are taken or a
 * byte is translated: a body past one is a 400 whose detail names the setting. They never echo what
 * they refuse (an id of a megabyte, a NUL), only where it is.
 */

/**
 * Control characters and unpaired surrogates: what no id carries, and what a database refuses (a
 * NUL, SQLSTATE 22021).
 */
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const NOT_IN_AN_ID = /[\u0000-\u001f\u007f]|\p{Cs}/u;

/**
 * A name or an id: a string of 1 to `maxNameChars` characters, no control character, no unpaired
 * surrogate.
 */
export function nameErrors(value: unknown, field: string, bounds: TranslationBounds): ErrorDetail[] {
  if (typeof value !== 'string' || value.length === 0) return [{ field, message: 'must be a non-empty string' }];
  // Characters as a reader counts them (code points: an emoji is one), not JavaScript's UTF-16
  // units.
  const characters = value.length > bounds.maxNameChars ? codePoints(value) : value.length;
  if (characters > bounds.maxNameChars)
    return [
      {
        field,
        message: `must be at most ${bounds.maxNameChars} characters (TOLLGATE_TRANSLATION_MAX_NAME_CHARS); it holds ${characters}`,
      },
    ];
  if (NOT_IN_AN_ID.test(value)) return [{ field, message: 'must not hold control characters or unpaired surrogates' }];
  return [];
}

/** As `nameErrors`, for a field that may be absent (undefined or null). */
export function optionalNameErrors(value: unknown, field: string, bounds: TranslationBounds): ErrorDetail[] {
  return value === undefined || value === null ? [] : nameErrors(value, field, bounds);
}

/**
 * The 400 detail for a list longer than its bound; `what` says what is counted (`tools`), when the
 * field does not.
 */
export function countError(field: string, count: number, max: number, setting: string, what = ''): ErrorDetail[] {
  const counted = what ? ` ${what}` : '';
  return count > max ? [{ field, message: `must hold at most ${max}${counted} (${setting}); it holds ${count}` }] : [];
}

/**
 * A string's length in code points; a value within a bound in UTF-16 units is within it in these
 * too.
 */
function codePoints(value: string): number {
  let count = 0;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    // A high surrogate followed by a low one is one code point; an unpaired one counts alone.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < value.length) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
