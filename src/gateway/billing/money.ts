// Money is an integer count of nano-units (1e-9) of the gateway's currency, held
// in a bigint. Amounts cross the API as decimal strings, parsed here exactly:
// no float ever touches a balance, a price or a charge.
//
// @example
// parseAmount('12.50');            // 12_500_000_000n
// formatAmount(12_500_000_000n);   // '12.50'
// pricePerTokenFromMillion('0.15'); // 150n nanos per token

const NANOS_PER_UNIT = 1_000_000_000n;
const SCALE_DIGITS = 9;

export class MoneyFormatError extends Error {
  override name = 'MoneyFormatError';
}

/** Parses a decimal amount such as "12.50" or "-3" into nanos. At most 9 decimal places. */
export function parseAmount(text: string): bigint {
  const match = /^(-)?(\d{1,12})(?:\.(\d{1,9}))?$/.exec(text.trim());
  if (!match)
    throw new MoneyFormatError(`"${text}" is not an amount: use digits with at most 9 decimal places, like 12.50.`);
  const [, sign, whole, fraction = ''] = match;
  const nanos = BigInt(whole!) * NANOS_PER_UNIT + BigInt(fraction.padEnd(SCALE_DIGITS, '0'));
  return sign ? -nanos : nanos;
}

/**
 * Formats nanos as a decimal string with at least two decimal places and no trailing zeros past
 * them.
 */
export function formatAmount(nanos: bigint): string {
  const negative = nanos < 0n;
  const magnitude = negative ? -nanos : nanos;
  const whole = magnitude / NANOS_PER_UNIT;
  const fraction = (magnitude % NANOS_PER_UNIT)
    .toString()
    .padStart(SCALE_DIGITS, '0')
    .replace(/0+$/, '')
    .padEnd(2, '0');
  return `${negative ? '-' : ''}${whole}.${fraction}`;
}

/**
 * Prices are set per million tokens (how operators and users quote them) and
 * stored per token in nanos, so a charge is one exact multiplication. A price
 * per million with more than 3 decimal places would not be a whole number of
 * nanos per token and is refused rather than rounded.
 */
export function pricePerTokenFromMillion(text: string): bigint {
  const perMillion = parseAmount(text);
  if (perMillion < 0n) throw new MoneyFormatError('A price cannot be negative.');
  if (perMillion % 1_000_000n !== 0n) {
    throw new MoneyFormatError(
      `"${text}" per million tokens has more than 3 decimal places; prices are exact to 0.001 per million tokens.`,
    );
  }
  return perMillion / 1_000_000n;
}

export function pricePerMillion(nanosPerToken: bigint): string {
  return formatAmount(nanosPerToken * 1_000_000n);
}

/**
 * A model's per-token prices; a cached-input price of null (or none) is the input price, and a
 * batch price of null (or none) the price of the same token outside a batch.
 */
export interface TokenPrice {
  inputPerToken: bigint;
  cachedInputPerToken?: bigint | null;
  outputPerToken: bigint;
  batchInputPerToken?: bigint | null;
  batchOutputPerToken?: bigint | null;
}

/**
 * What a prompt token the engine read from its prefix cache costs: the cached-input price, else the
 * input price.
 */
export function cachedInputPrice(price: TokenPrice): bigint {
  return price.cachedInputPerToken ?? price.inputPerToken;
}

/**
 * The prices a batch line is billed at: the batch input and output prices, each the usual one when
 * unset; a cached prompt token at the cached-input price, but never above the batch input price (a
 * batch never makes a cached token dearer than an uncached one).
 *
 * @example
 * batchPrice({ inputPerToken: 150n, outputPerToken: 600n, batchInputPerToken: 75n }); // input 75, cached 75, output 600
 */
export function batchPrice(price: TokenPrice): TokenPrice {
  const input = price.batchInputPerToken ?? price.inputPerToken;
  const cached = cachedInputPrice(price);
  return {
    inputPerToken: input,
    cachedInputPerToken: cached < input ? cached : input,
    outputPerToken: price.batchOutputPerToken ?? price.outputPerToken,
  };
}

/**
 * A model's prices as every surface shows them: per million tokens as decimal strings, and per
 * token in nano-units (integers as strings), so nothing is lost to floats; the cached-input price
 * filled in as it is billed.
 *
 * @example
 * shownPrice({ inputPerToken: 150n, outputPerToken: 600n }).cachedInputPerMillion; // "0.15"
 */
export function shownPrice(price: TokenPrice) {
  const cached = cachedInputPrice(price);
  const batch = batchPrice(price);
  return {
    inputPerMillion: pricePerMillion(price.inputPerToken),
    cachedInputPerMillion: pricePerMillion(cached),
    outputPerMillion: pricePerMillion(price.outputPerToken),
    batchInputPerMillion: pricePerMillion(batch.inputPerToken),
    batchOutputPerMillion: pricePerMillion(batch.outputPerToken),
    inputNanosPerToken: price.inputPerToken.toString(),
    cachedInputNanosPerToken: cached.toString(),
    outputNanosPerToken: price.outputPerToken.toString(),
    batchInputNanosPerToken: batch.inputPerToken.toString(),
    batchOutputNanosPerToken: batch.outputPerToken.toString(),
  };
}

/**
 * The exact cost of a request: its uncached prompt tokens at the input price,
 * its cached ones (the engine read them from its prefix cache) at the
 * cached-input price, and its completion at the output price.
 *
 * @example
 * costOf({ promptTokens: 1000, cachedTokens: 800, completionTokens: 10 }, { inputPerToken: 150n, cachedInputPerToken: 15n, outputPerToken: 600n });
 * // 200n * 150n + 800n * 15n + 10n * 600n = 48_000n
 */
export function costOf(
  usage: { promptTokens: number; completionTokens: number; cachedTokens?: number },
  price: TokenPrice,
): bigint {
  const cached = BigInt(Math.min(usage.cachedTokens ?? 0, usage.promptTokens));
  const uncached = BigInt(usage.promptTokens) - cached;
  return (
    uncached * price.inputPerToken +
    cached * cachedInputPrice(price) +
    BigInt(usage.completionTokens) * price.outputPerToken
  );
}
