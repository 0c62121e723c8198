import { createHash } from 'node:crypto';

// Icons for the stacks' emoji, drawn as SVG and served as the portal's own
// files: a system without an emoji font (a server's browser, a minimal Linux)
// would show an emoji as an empty box. Each shipped stack's emoji has its
// drawing; any other emoji, or none, is drawn as the neutral mark.

const svg = (body: string) =>
  `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 48 48" fill="none" stroke="#1f5fbf" stroke-width="3" stroke-linecap="round" stroke-linejoin="round">${body}</svg>\n`;

const DRAWINGS: Record<string, string> = {
  // A ship's wheel (Kubernetes).
  wheel: svg(
    '<circle cx="24" cy="24" r="13"/><circle cx="24" cy="24" r="4" fill="#1f5fbf"/><path d="M24 5v38M5 24h38M10.6 10.6l26.8 26.8M37.4 10.6 10.6 37.4"/>',
  ),
  // A rising line over axes (monitoring).
  chart: svg(
    '<path d="M8 8v32h32"/><path d="m13 32 8-9 6 5 11-14" stroke="#1e7b34"/><circle cx="38" cy="14" r="2.5" fill="#1e7b34" stroke="#1e7b34"/>',
  ),
  // A lightning bolt (Ray).
  bolt: svg('<path d="M27 4 11 27h11l-3 17 18-25H25z" fill="#f0b429" stroke="#8a5a00"/>'),
  // A calendar (Slurm's schedule).
  calendar: svg(
    '<rect x="7" y="10" width="34" height="31" rx="3"/><path d="M7 19h34M16 6v8M32 6v8"/><path d="M14 26h4M22 26h4M30 26h4M14 33h4M22 33h4" stroke-width="3.5"/>',
  ),
  // A rocket (serving).
  rocket: svg(
    '<path d="M24 5c7 5 9 14 7 25H17c-2-11 0-20 7-25z"/><circle cx="24" cy="18" r="3.5"/><path d="m17 24-6 6v6l7-4M31 24l6 6v6l-7-4"/><path d="M20 35c0 4 2 7 4 9 2-2 4-5 4-9" stroke="#a4262c"/>',
  ),
  // The neutral mark: a stack of layers.
  stack: svg('<path d="m24 7 17 9-17 9-17-9z"/><path d="m7 24 17 9 17-9M7 32l17 9 17-9"/>'),
};

// Emoji as manifests write them, with and without the variation selector (U+FE0F).
const BY_EMOJI: Record<string, keyof typeof DRAWINGS> = {
  '☸': 'wheel',
  '📈': 'chart',
  '⚡': 'bolt',
  '🗓': 'calendar',
  '📅': 'calendar',
  '🚀': 'rocket',
};

const ICONS = Object.fromEntries(
  Object.entries(DRAWINGS).map(([name, body]) => [
    name,
    { body, hash: createHash('sha256').update(body).digest('hex').slice(0, 12) },
  ]),
) as Record<keyof typeof DRAWINGS, { body: string; hash: string }>;

/**
 * The URL of the drawing for a stack's emoji icon (or of the neutral mark).
 *
 * @example
 * stackIconUrl('🚀'); // '/portal/assets/stack-rocket.1a2b3c4d5e6f.svg'
 */
export function stackIconUrl(emoji: string | null): string {
  const name = BY_EMOJI[(emoji ?? '').replaceAll('\uFE0F', '').trim()] ?? 'stack';
  return `/portal/assets/stack-${name}.${ICONS[name]!.hash}.svg`;
}

/** The drawing a file name of `stackIconUrl` names (the current hash only), or undefined. */
export function stackIconAt(file: string): { body: string; type: string } | undefined {
  const match = /^stack-([a-z]+)\.([0-9a-f]{12})\.svg$/.exec(file);
  const icon = match ? ICONS[match[1]!] : undefined;
  return icon && icon.hash === match![2] ? { body: icon.body, type: 'image/svg+xml' } : undefined;
}
