import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../helpers/processes.js';

/**
 * Every relative link of README.md, CONTRIBUTING.md and docs/*.md resolves: the file exists and,
 * for a `#fragment` into a Markdown page, a heading of that page has that anchor as GitHub makes
 * it.
 */

const pages = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(path.join(repoRoot, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/**
 * GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`,
 * repeats numbered.
 */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, '');
  for (const [, heading] of withoutCode.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = heading!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

function linksOf(markdown: string): string[] {
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...withoutCode.matchAll(/\]\(([^)\s]+)(?: "[^"]*")?\)/g)]
    .map((match) => match[1]!)
    .filter((target) => !/^[a-z]+:/i.test(target));
}

describe('links in the docs', () => {
  it.each(pages)('%s: every relative link resolves', (page) => {
    const source = readFileSync(path.join(repoRoot, page), 'utf8');
    const broken: string[] = [];
    for (const target of linksOf(source)) {
      const [file, fragment] = target.split('#', 2) as [string, string | undefined];
      const resolved =
        file === ''
          ? path.join(repoRoot, page)
          : path.resolve(path.dirname(path.join(repoRoot, page)), decodeURIComponent(file));
      if (!existsSync(resolved)) {
        broken.push(`${target} (no such file)`);
        continue;
      }
      if (
        fragment !== undefined &&
        resolved.endsWith('.md') &&
        !anchorsOf(readFileSync(resolved, 'utf8')).has(decodeURIComponent(fragment))
      ) {
        broken.push(`${target} (no such heading)`);
      }
    }
    expect(broken, `${page}: broken links`).toEqual([]);
  });
});
