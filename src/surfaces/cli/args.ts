import { parseArgs, type ParseArgsConfig } from 'node:util';
import { MoneyFormatError } from '../../gateway/billing/money.js';
import { UsageError } from './errors.js';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

/** Options every command accepts. */
export const GLOBAL_OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies OptionSpec;

/**
 * Parses the words after the command name. Unknown flags and stray words are
 * usage errors. A negative number after a flag (`--amount -1.00`) is taken as
 * its value, which node's parser would otherwise refuse as ambiguous.
 *
 * @example
 * const { values, positionals } = parseCommandLine(['--amount', '-1.00'], { amount: { type: 'string' } });
 */
export function parseCommandLine(
  argv: string[],
  options: OptionSpec,
): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    const next = argv[i + 1];
    const option = options[word.replace(/^--/, '')];
    if (word.startsWith('--') && option?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      args.push(`${word}=${next}`);
      i++;
    } else args.push(word);
  }
  try {
    const { values, positionals } = parseArgs({
      args,
      options: { ...GLOBAL_OPTIONS, ...options },
      allowPositionals: true,
      strict: true,
    });
    return { values: values, positionals };
  } catch (error) {
    throw new UsageError((error as Error).message.split('\n')[0]!.replace(/\. To specify .*$/, '.'));
  }
}

/**
 * Typed reads of parsed flags; each throws a `UsageError` naming the flag, so
 * every value is checked before a request is made.
 *
 * @example
 * const rpm = args.int('rpm', 1, 1_000_000); // undefined when absent
 */
export class Args {
  constructor(
    private readonly values: Record<string, string | boolean | undefined>,
    private readonly positionals: string[],
  ) {}

  optional(flag: string): string | undefined {
    const value = this.values[flag];
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${flag} needs a value`);
    return value;
  }

  required(flag: string): string {
    const value = this.optional(flag);
    if (value === undefined) throw new UsageError(`--${flag} is required`);
    return value;
  }

  /** An id: in a URL path, so never empty and never a dot segment. */
  id(label: string, flag?: string): string {
    const value = flag ? this.required(flag) : this.positionals[0];
    if (!value || value.split('/').some((part) => part === '' || part === '.' || part === '..')) {
      throw new UsageError(flag ? `--${flag} must be an id` : `${label} is required`);
    }
    return value;
  }

  /** A positional argument as typed (a file's path), or undefined when absent. */
  positional(index = 0): string | undefined {
    return this.positionals[index];
  }

  /** Whether a flag was given at all, with or without a value. */
  has(flag: string): boolean {
    return this.values[flag] !== undefined;
  }

  flag(flag: string): boolean | undefined {
    return this.values[flag] === true ? true : undefined;
  }

  int(flag: string, min: number, max: number): number | undefined {
    const text = this.optional(flag);
    if (text === undefined) return undefined;
    const value = Number(text);
    if (!/^\d+$/.test(text) || value < min || value > max)
      throw new UsageError(`--${flag} must be a whole number from ${min} to ${max}, not "${text}"`);
    return value;
  }

  requiredInt(flag: string, min: number, max: number): number {
    this.required(flag);
    return this.int(flag, min, max)!;
  }

  /** A positive limit, or null for "unlimited". */
  limit(flag: string, max: number): number | null | undefined {
    return this.optional(flag) === 'unlimited' ? null : this.int(flag, 1, max);
  }

  /** One of a fixed set of words, e.g. a role. */
  choice<T extends string>(flag: string, choices: readonly T[]): T | undefined {
    const text = this.optional(flag);
    if (text === undefined) return undefined;
    if (!choices.includes(text as T))
      throw new UsageError(`--${flag} must be one of ${choices.join(', ')}, not "${text}"`);
    return text as T;
  }

  bool(flag: string): boolean | undefined {
    const text = this.optional(flag);
    if (text === undefined) return undefined;
    if (text !== 'true' && text !== 'false') throw new UsageError(`--${flag} must be true or false, not "${text}"`);
    return text === 'true';
  }

  /** A decimal amount, checked with the API's own rules but sent as the string typed. */
  money(flag: string, check: (text: string) => unknown): string {
    const text = this.required(flag);
    try {
      check(text);
    } catch (error) {
      if (error instanceof MoneyFormatError) throw new UsageError(`--${flag}: ${error.message}`);
      throw error;
    }
    return text.trim();
  }

  /** Refuses positionals a command does not take (`orgs list extra`). */
  positionalCount(expected: number): void {
    const extra = this.positionals.slice(expected);
    if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
  }
}
