import { z } from 'zod';

/** The catalog's categories, as the spec lists them. */
export const STACK_CATEGORIES = ['Scheduler', 'Orchestration', 'ML Framework', 'Monitoring', 'Custom'] as const;

/** A stack's name: its id in URLs (`/v1/stacks/{name}`), lower-case letters, digits and `-`. */
export const STACK_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;
const INPUT_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

/** An emoji (one grapheme of pictographs) or an https image URL. */
const icon = z.union([
  z
    .string()
    .regex(
      /^\p{Extended_Pictographic}(\p{Emoji_Modifier}|\u{FE0F}|\u{200D}\p{Extended_Pictographic})*$/u,
      'Must be one emoji or an https:// image URL.',
    ),
  z.url({ protocol: /^https$/, error: 'Must be one emoji or an https:// image URL.' }).max(2000),
]);

const input = z
  .strictObject({
    name: z.string().regex(INPUT_NAME, 'Use a letter or _ first, then letters, digits, _ or - (at most 64).'),
    type: z.enum(['number', 'string']),
    required: z.boolean().default(false),
    default: z.union([z.number(), z.string().max(10_000)]).optional(),
    description: z.string().max(2000).optional(),
  })
  .refine((i) => i.default === undefined || typeof i.default === (i.type === 'number' ? 'number' : 'string'), {
    message: "The default must be of the input's type.",
    path: ['default'],
  });

/**
 * A stack's description: what `manifest.json` holds, and what the API's
 * create and update take (the same rules for both). `name` is ours, not the
 * spec's: absent, the package derives it as it does without a manifest.
 */
export const stackManifest = z.strictObject({
  name: z
    .string()
    .regex(STACK_NAME, 'Use 1-63 lower-case letters, digits or -, starting with a letter or digit.')
    .optional(),
  title: z.string().trim().min(1).max(200),
  description: z.string().max(5000).default(''),
  category: z.enum(STACK_CATEGORIES).default('Custom'),
  icon: icon.optional(),
  /** Hardware profiles it applies to; absent: all. */
  applicable_profiles: z.array(z.string().min(1).max(100)).max(100).optional(),
  /**
   * A web port the module serves on its node: each run gets a public URL
   * `https://<stack>.<cluster's public domain>` routed to it.
   */
  web_port: z.int().min(1).max(65535).optional(),
  inputs: z
    .array(input)
    .max(200)
    .default([])
    .refine((inputs) => new Set(inputs.map((i) => i.name)).size === inputs.length, 'Input names must be unique.'),
});

/** A read package's manifest: the file's fields, its name always set (given or derived). */
export type StackManifest = z.output<typeof stackManifest> & { name: string };
export type StackInput = StackManifest['inputs'][number];
