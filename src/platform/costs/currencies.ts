import { z } from 'zod';

// The currency table, from the runtime's ICU data (`Intl`), never a
// hand-written list: every code `Intl.supportedValuesOf('currency')` knows,
// its English name (`Intl.DisplayNames`), its symbol and narrow symbol
// (`formatToParts` in the `en` locale) and its minor-unit digits (the
// fraction digits `Intl.NumberFormat` uses for it: JPY 0, USD 2, KWD 3).
// Built once, on first use.
//
// ICU's digits are CLDR's, which differ from ISO 4217's exponent for a few
// codes (HUF: CLDR 0, ISO 2); reports round to the digits shown here, so
// what a report shows and what the table says always agree.
//
// @example
// minorUnits('KWD'); // 3
// isCurrency('EUR'); // true

export interface CurrencyInfo {
  code: string;
  name: string;
  symbol: string;
  narrow_symbol: string;
  minor_units: number;
}

let table: ReadonlyMap<string, CurrencyInfo> | undefined;

/** Every currency, by code, in code order. */
export function currencies(): ReadonlyMap<string, CurrencyInfo> {
  table ??= new Map(Intl.supportedValuesOf('currency').map((code) => [code, describe(code)]));
  return table;
}

function isCurrency(code: string): boolean {
  return currencies().has(code);
}

/** Its minor-unit digits; throws for a code the table does not hold (callers validate codes first). */
export function minorUnits(code: string): number {
  const info = currencies().get(code);
  if (!info) throw new RangeError(`Unknown currency ${code}.`);
  return info.minor_units;
}

function describe(code: string): CurrencyInfo {
  const symbolOf = (currencyDisplay: 'symbol' | 'narrowSymbol') =>
    new Intl.NumberFormat('en', { style: 'currency', currency: code, currencyDisplay })
      .formatToParts(1)
      .find((part) => part.type === 'currency')?.value ?? code;
  return {
    code,
    name: new Intl.DisplayNames('en', { type: 'currency' }).of(code) ?? code,
    symbol: symbolOf('symbol'),
    narrow_symbol: symbolOf('narrowSymbol'),
    minor_units:
      new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions().maximumFractionDigits ?? 2,
  };
}

/** An ISO 4217 code the runtime knows, upper-case as written: `EUR`. */
export const currencyCode = z
  .string()
  .refine(
    (code) => /^[A-Z]{3}$/.test(code) && isCurrency(code),
    'Must be an ISO 4217 code this server knows, in capitals, such as EUR (see GET /v1/billing/currencies).',
  );
