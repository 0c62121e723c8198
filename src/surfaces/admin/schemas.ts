import { z } from 'zod';
import { MoneyFormatError, parseAmount, pricePerTokenFromMillion } from '../../gateway/billing/money.js';
import { ROLES, TASK_TYPES } from '../../shared/db/schema.js';
import { emailField } from '../../platform/people/email.js';
import { passwordField } from '../../platform/people/passwords.js';
import { KEY_EXPIRIES } from '../../gateway/keys/bounds.js';
import { keySettingsFields } from '../../gateway/keys/settings.js';
import { currencyCode } from '../../platform/costs/currencies.js';
import { EARLIEST_YEAR, wholeSecondInstant } from '../../platform/costs/window.js';

// Request bodies of the management API. Unknown fields are refused (a typo such
// as `rpm` must not pass silently), and money arrives only as decimal strings,
// parsed here into bigint nanos so no float ever reaches a balance or a price.

const name = z.string().trim().min(1).max(200);
const note = z.string().trim().min(1).max(500);
const limit = (max: number) => z.int().min(1).max(max);

/** A decimal string, never a JSON number: `"12.50"`, not `12.5`. */
function decimal(parse: (text: string) => bigint) {
  return z
    .string({
      error: (issue) =>
        typeof issue.input === 'number'
          ? 'Send amounts as decimal strings such as "12.50", not JSON numbers.'
          : undefined,
    })
    .transform((text, ctx) => {
      try {
        return parse(text);
      } catch (error) {
        if (!(error instanceof MoneyFormatError)) throw error;
        ctx.addIssue({ code: 'custom', message: error.message });
        return z.NEVER;
      }
    });
}

const amount = decimal(parseAmount);
const pricePerMillion = decimal(pricePerTokenFromMillion);

/** An organization's weight in the fleet's fair share (docs/fair-sharing.md). */
export const orgUpdateBody = z.strictObject({ share_weight: z.int().min(1).max(1000) });

/** Creating an organization or a project: a name. */
export const nameBody = z.strictObject({ name });

export const topupBody = z.strictObject({
  amount: amount.refine((nanos) => nanos > 0n, 'A top-up must be greater than 0.'),
  note: note.optional(),
});

export const adjustmentBody = z.strictObject({
  amount: amount.refine((nanos) => nanos !== 0n, 'An adjustment cannot be 0.'),
  note,
});

export const createKeyBody = z.strictObject({
  ...z.object(keySettingsFields).partial().shape,
  name: keySettingsFields.name,
  expiry: z.enum(KEY_EXPIRIES).optional(),
  project_id: z.string().min(1).max(100).optional(),
  user_id: z.string().min(1).max(100).optional(),
});

const email = emailField;

export const operatorCreateUserBody = z.strictObject({
  name,
  email,
  password: passwordField,
  role: z.enum(ROLES).optional(),
  platform_admin: z.boolean().optional(),
});
export const operatorUpdateUserBody = z
  .strictObject({ name, email, password: passwordField, role: z.enum(ROLES), platform_admin: z.boolean() })
  .partial()
  .refine((patch) => Object.keys(patch).length > 0, {
    message: 'Send at least one field to change.',
    when: (payload: { issues: unknown[] }) => payload.issues.length === 0,
  });
export const operatorUsersQuery = z.object({ org_id: z.string().min(1).max(100).optional() });

const atLeastOne = (body: object) => Object.keys(body).length > 0;
// Only when the fields themselves passed: an unknown field is the one thing to report.
const EMPTY_PATCH = {
  message: 'Send at least one field to change.',
  when: (payload: { issues: unknown[] }) => payload.issues.length === 0,
};

export const updateKeyBody = z.strictObject(keySettingsFields).partial().refine(atLeastOne, EMPTY_PATCH);

const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;

export const createModelBody = z.strictObject({
  id: z.string().regex(MODEL_ID, 'Use 1-128 letters, digits or "._:/-", starting with a letter or digit.'),
  display_name: name,
  hf_repo_id: z.string().trim().min(1).max(200),
  task_type: z.enum(TASK_TYPES),
  context_length: limit(10_000_000),
  enabled: z.boolean().optional(),
});

export const updateModelBody = z
  .strictObject({ display_name: name, context_length: limit(10_000_000), enabled: z.boolean() })
  .partial()
  .refine(atLeastOne, EMPTY_PATCH);

/**
 * A model's whole price. The cached-input price (prompt tokens the engine read from its prefix
 * cache) is optional, null or absent meaning the input price, and never above it: a request's hold
 * prices every prompt token at the input price, the most it can cost. The batch prices (a batch
 * line's tokens) are optional too, null or absent meaning the input and output prices, and never
 * above them: a batch runs on room nobody else wants.
 */
export const setPriceBody = z
  .strictObject({
    input_per_million: pricePerMillion,
    cached_input_per_million: pricePerMillion.nullable().optional(),
    output_per_million: pricePerMillion,
    batch_input_per_million: pricePerMillion.nullable().optional(),
    batch_output_per_million: pricePerMillion.nullable().optional(),
  })
  .refine((price) => (price.cached_input_per_million ?? 0n) <= price.input_per_million, {
    message: 'cached_input_per_million cannot be above input_per_million.',
    path: ['cached_input_per_million'],
  })
  .refine((price) => (price.batch_input_per_million ?? 0n) <= price.input_per_million, {
    message: 'batch_input_per_million cannot be above input_per_million.',
    path: ['batch_input_per_million'],
  })
  .refine((price) => (price.batch_output_per_million ?? 0n) <= price.output_per_million, {
    message: 'batch_output_per_million cannot be above output_per_million.',
    path: ['batch_output_per_million'],
  });

// Query strings stay lenient about extra parameters (cache busters, tracing).
export const ledgerQuery = z.object({ limit: z.coerce.number().pipe(limit(500)).default(50) });
export const modelsQuery = z.object({ include_disabled: z.enum(['true', 'false']).default('false') });

export const scaleEngineBody = z.strictObject({ replicas: z.number().int().min(0).max(64) });

export const createProfileBody = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, 'Use 1-63 of a-z 0-9 . _ -, starting with a letter or digit.'),
  gpus_per_node: z.int().min(0).max(64),
  gpu_model: z.string().trim().max(100).optional(),
  cpu_cores: z.int().min(0).max(100_000).optional(),
  memory_gib: z.int().min(0).max(100_000_000).optional(),
});
/** An account name on a node: what `useradd` takes. */
const unixUser = z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/, 'A user name such as ops (a-z 0-9 _ -, at most 32).');
const sshPrivateKey = z
  .string()
  .min(1)
  .max(16_384)
  .regex(/-----BEGIN [A-Z ]*PRIVATE KEY-----/, 'An unencrypted private key in OpenSSH or PEM format.');
const hostKeyFingerprint = z
  .string()
  .regex(
    /^SHA256:[A-Za-z0-9+/]{43}$/,
    "The host key's fingerprint as `ssh-keygen -lf` prints it: SHA256: and 43 base64 characters.",
  );
export const createNodeBody = z.strictObject({
  profile: z.string().min(1).max(100),
  address: z
    .string()
    .trim()
    .min(1)
    .max(253)
    .regex(/^[A-Za-z0-9.:_-]+$/, 'A host name or an IP address.'),
  access: z.string().trim().max(500).optional(),
  /**
   * How the platform reaches the node over SSH to install clusters' keys: checked once before the
   * node is added.
   */
  ssh: z
    .strictObject({
      user: unixUser,
      port: z.int().min(1).max(65535).default(22),
      private_key: sshPrivateKey,
      host_key_fingerprint: hostKeyFingerprint,
      run_user: unixUser.optional(),
    })
    .optional(),
});
/**
 * New SSH access for a node: what is not given is kept; checked by connecting once before it is
 * stored.
 */
export const updateNodeBody = z.strictObject({
  ssh: z.strictObject({
    user: unixUser.optional(),
    port: z.int().min(1).max(65535).optional(),
    private_key: sshPrivateKey.optional(),
    host_key_fingerprint: hostKeyFingerprint.optional(),
    run_user: unixUser.optional(),
  }),
});
export const releaseNodeBody = z.strictObject({ force: z.boolean().default(false) });

/**
 * A non-negative decimal string with at most 12 decimal places (prices and conversion rates are
 * exact to 10^-12).
 */
const exactDecimal = z
  .string({
    error: (issue) =>
      typeof issue.input === 'number' ? 'Send decimals as strings such as "2.50", not JSON numbers.' : undefined,
  })
  .regex(/^\d{1,18}(\.\d{1,12})?$/, 'Must be a decimal such as 2.50, with at most 12 decimal places.');

export const createRateCardBody = z
  .strictObject({
    profile: z.string().min(1).max(100),
    currency: currencyCode,
    node_hour_price: exactDecimal,
    gpu_hour_price: exactDecimal,
    effective_from: wholeSecondInstant,
    effective_to: wholeSecondInstant.nullable().optional(),
  })
  .refine((card) => !card.effective_to || card.effective_to > card.effective_from, {
    message: 'Must be after effective_from.',
    path: ['effective_to'],
  });
export const rateCardsQuery = z.object({ profile: z.string().min(1).max(100).optional() });

export const setConversionRateBody = z.strictObject({
  rate: exactDecimal.refine((rate) => /[1-9]/.test(rate), 'Must be greater than 0.'),
});
export const conversionRateKey = z
  .object({
    base: currencyCode,
    quote: currencyCode,
    // As reports: nothing is costed before the epoch (and PostgreSQL has no year 0).
    date: z.iso
      .date('Must be a date as YYYY-MM-DD.')
      .refine((date) => Number(date.slice(0, 4)) >= EARLIEST_YEAR, `Must be in ${EARLIEST_YEAR} or later.`),
  })
  .refine((key) => key.base !== key.quote, { message: 'Must differ from base.', path: ['quote'] });
export const conversionRatesQuery = z.object({ base: currencyCode.optional(), quote: currencyCode.optional() });
export const costsQuery = z.object({ org_id: z.string().min(1).max(100).optional() });

/** The fields of `source` that were sent: a change leaves the absent ones alone. */
export function definedOnly<T extends object>(source: T): Partial<T> {
  return Object.fromEntries(Object.entries(source).filter(([, value]) => value !== undefined)) as Partial<T>;
}
