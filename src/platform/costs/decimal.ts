// Exact decimals as scaled bigints, and the one rounding of the cost
// reports. Prices and conversion rates carry 12 decimal places (the
// `numeric(30, 12)` columns), so `"2.5"` is `2_500_000_000_000n`. An amount is
// computed as an exact fraction and rounded once, half to even, to the
// currency's minor units: no float, no intermediate rounding.
//
// @example
// const price = parseDecimal('2.50');                     // 2_500_000_000_000n
// roundHalfEven(5n, 2n);                                  // 2n (2.5 → 2)
// formatMinor(123_456n, 3);                               // '123.456'

const RATE_SCALE = 12;
export const RATE_ONE = 10n ** BigInt(RATE_SCALE);

class DecimalFormatError extends Error {
  override name = 'DecimalFormatError';
}

/** Parses a non-negative decimal string ("12", "0.35", "1.000000000001") into units of 10^-12. */
export function parseDecimal(text: string): bigint {
  const match = /^(\d{1,18})(?:\.(\d{1,12}))?$/.exec(text);
  if (!match)
    throw new DecimalFormatError(
      `"${text}" is not a decimal: use digits with at most ${RATE_SCALE} decimal places, like 2.50.`,
    );
  return BigInt(match[1]!) * RATE_ONE + BigInt((match[2] ?? '').padEnd(RATE_SCALE, '0'));
}

/**
 * A scaled value as the shortest exact decimal string: `2_500_000_000_000n` → "2.5", `RATE_ONE *
 * 3n` → "3".
 */
export function formatDecimal(value: bigint, scale = RATE_SCALE): string {
  const text = formatScaled(value, scale);
  return text.includes('.') ? text.replace(/\.?0+$/, '') : text;
}

/** A scaled integer with exactly `scale` decimal places: (1234n, 2) → "12.34", (5n, 0) → "5". */
export function formatScaled(value: bigint, scale: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale);
  return `${negative ? '-' : ''}${whole}${scale > 0 ? `.${fraction}` : ''}`;
}

/**
 * An amount in minor units as the currency writes it: JPY (0) "1235", USD (2) "12.35", KWD (3)
 * "1.235".
 */
export const formatMinor = formatScaled;

/**
 * `numerator / denominator` rounded to the nearest integer, a tie to the even
 * one (banker's rounding: ties go up as often as down, so sums of many lines
 * carry no drift). Both non-negative; the denominator positive.
 */
export function roundHalfEven(numerator: bigint, denominator: bigint): bigint {
  if (denominator <= 0n || numerator < 0n)
    throw new RangeError('roundHalfEven takes a non-negative numerator and a positive denominator.');
  const quotient = numerator / denominator;
  const twice = (numerator % denominator) * 2n;
  if (twice > denominator || (twice === denominator && quotient % 2n === 1n)) return quotient + 1n;
  return quotient;
}
