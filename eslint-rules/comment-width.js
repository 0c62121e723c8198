// @ts-check
/**
 * `tollgate/comment-width`: a comment's prose ends by column 100 (code is Prettier's, at 120). A paragraph with a
 * longer line is reported and `eslint --fix` fills it again, word by word, keeping its prefix (`// `, ` * `), its
 * list marker and the indent under it. What cannot be filled is left as written: `@example` code, fenced code,
 * table rows, lines indented as code, and a word longer than the width (a URL).
 */

export const COMMENT_WIDTH = 100;

/**
 * @param {string} line one line of a comment's text, its prefix taken off
 * @returns {{ kind: 'blank' | 'fence' | 'table' | 'tag' | 'item' | 'prose' | 'indented', indent: number, marker: number }}
 */
function classify(line) {
  if (line.trim() === '') return { kind: 'blank', indent: 0, marker: 0 };
  const indent = line.length - line.trimStart().length;
  const text = line.trimStart();
  if (text.startsWith('```')) return { kind: 'fence', indent, marker: 0 };
  if (text.startsWith('|')) return { kind: 'table', indent, marker: 0 };
  if (text.startsWith('@')) return { kind: 'tag', indent, marker: 0 };
  const item = /^(?:[-*+]|\d+[.)]) /.exec(text);
  if (item) return { kind: 'item', indent, marker: item[0].length };
  return { kind: indent > 0 ? 'indented' : 'prose', indent, marker: 0 };
}

/**
 * The words of a paragraph filled into lines of at most `width` characters; the first line starts with `first`,
 * the others with `rest` (a list item's continuation indent).
 *
 * @param {string[]} words
 * @param {number} width
 * @param {string} first
 * @param {string} rest
 */
function fill(words, width, first, rest) {
  const lines = [];
  let line = first;
  let empty = true;
  for (const word of words) {
    if (!empty && line.length + 1 + word.length > width) {
      lines.push(line);
      line = rest + word;
    } else line = empty ? line + word : `${line} ${word}`;
    empty = false;
  }
  lines.push(line);
  return lines;
}

/**
 * A comment's lines (prefixes taken off) with every paragraph that has a line past `width` filled again; the
 * other lines as they were.
 *
 * @param {string[]} lines
 * @param {number} width the room a line has after its prefix
 * @returns {string[]}
 */
export function refill(lines, width) {
  const out = [];
  let code = false; // inside an `@example` or a fence: kept as written
  let fence = false;
  /** @type {{ lines: string[], first: string, rest: string } | null} */
  let paragraph = null;
  const close = () => {
    if (!paragraph) return;
    const { lines: own, first, rest } = paragraph;
    if (own.some((l) => l.length > width)) {
      const words = own.join(' ').slice(first.length).split(/\s+/).filter(Boolean);
      out.push(...fill(words, width, first, rest));
    } else out.push(...own);
    paragraph = null;
  };
  for (const line of lines) {
    const c = classify(line);
    if (fence || c.kind === 'fence') {
      close();
      if (c.kind === 'fence') fence = !fence;
      out.push(line);
      continue;
    }
    if (c.kind === 'tag') code = /^\s*@example\b/.test(line);
    if (code || c.kind === 'blank' || c.kind === 'table') {
      close();
      out.push(line);
      continue;
    }
    if (c.kind === 'tag' || c.kind === 'item') {
      close();
      const lead = line.slice(0, c.indent + c.marker);
      const first = c.kind === 'tag' ? line.slice(0, c.indent) : lead;
      paragraph = { lines: [line], first, rest: ' '.repeat(c.kind === 'item' ? lead.length : c.indent) };
      continue;
    }
    // A line indented as the open list item's text continues it; any other indented line is code.
    if (paragraph && c.indent === paragraph.rest.length && (c.kind === 'prose' || c.kind === 'indented')) {
      paragraph.lines.push(line);
      continue;
    }
    if (c.kind === 'indented') {
      close();
      out.push(line);
      continue;
    }
    if (!paragraph || paragraph.rest !== '') {
      close();
      paragraph = { lines: [line], first: '', rest: '' };
    } else paragraph.lines.push(line);
  }
  close();
  return out;
}

/** @type {import('eslint').Rule.RuleModule} */
export const commentWidth = {
  meta: {
    type: 'layout',
    fixable: 'whitespace',
    schema: [],
    messages: { wide: 'Comment lines end by column {{width}}: run `npx eslint --fix` to fill this comment again.' },
  },
  create(context) {
    const source = context.sourceCode;
    /** @param {import('estree').Comment[]} group consecutive `//` comments, or one block comment */
    const check = (group) => {
      const first = group[0];
      const last = group.at(-1);
      if (!first?.loc || !last?.loc || !first.range || !last.range) return;
      const column = first.loc.start.column;
      const lineText = source.lines[first.loc.start.line - 1] ?? '';
      if (lineText.slice(0, column).trim() !== '') return; // after code on its line: Prettier's
      const indent = ' '.repeat(column);
      const fixed = first.type === 'Line' ? fixLines(group, indent) : fixBlock(first, indent);
      if (fixed === null) return;
      context.report({
        loc: { start: first.loc.start, end: last.loc.end },
        messageId: 'wide',
        data: { width: String(COMMENT_WIDTH) },
        fix: (fixer) => fixer.replaceTextRange([first.range[0], last.range[1]], fixed),
      });
    };
    return {
      Program() {
        /** @type {import('estree').Comment[]} */
        let run = [];
        for (const comment of source.getAllComments()) {
          // A directive (`eslint-disable…`, `@ts-…`) is never filled, and ends the run before it.
          if (/^\s*(eslint|@ts-|prettier-ignore|global )/.test(comment.value)) {
            if (run.length) check(run);
            run = [];
            continue;
          }
          const alone =
            (source.lines[(comment.loc?.start.line ?? 1) - 1] ?? '').slice(0, comment.loc?.start.column ?? 0).trim() ===
            '';
          const follows =
            alone &&
            comment.type === 'Line' &&
            run.length > 0 &&
            run.at(-1)?.loc?.end.line === (comment.loc?.start.line ?? 0) - 1 &&
            run.at(-1)?.loc?.start.column === comment.loc?.start.column;
          if (!follows) {
            if (run.length) check(run);
            run = [];
          }
          if (comment.type === 'Line') run.push(comment);
          else check([comment]);
        }
        if (run.length) check(run);
      },
    };
  },
};

/**
 * `// ` comments filled again, or null when none is too wide.
 *
 * @param {import('estree').Comment[]} group
 * @param {string} indent
 */
function fixLines(group, indent) {
  const texts = group.map((c) => (c.value.startsWith(' ') ? c.value.slice(1) : c.value));
  if (!texts.some((t) => indent.length + 3 + t.length > COMMENT_WIDTH)) return null;
  if (group.some((c) => c.value.startsWith('/'))) return null; // `///` directives
  const filled = refill(texts, COMMENT_WIDTH - indent.length - 3);
  if (filled.join('\n') === texts.join('\n')) return null;
  return filled.map((t, i) => `${i === 0 ? '' : indent}//${t ? ` ${t}` : ''}`).join('\n');
}

/**
 * A `/* … *\/` comment filled again, or null when none of its lines is too wide or it is not written one
 * ` * ` line at a time.
 *
 * @param {import('estree').Comment} comment
 * @param {string} indent
 */
function fixBlock(comment, indent) {
  const value = comment.value;
  const doc = value.startsWith('*');
  const rows = value.split('\n');
  if (rows.length === 1) {
    // `/** one line */`: opened into a block when it is too wide.
    if (indent.length + value.length + 4 <= COMMENT_WIDTH || !doc) return null;
    const text = value.slice(1).trim();
    const filled = refill([text], COMMENT_WIDTH - indent.length - 3);
    if (filled.length === 1) return null;
    return ['/**', ...filled.map((t) => `${indent} *${t ? ` ${t}` : ''}`), `${indent} */`].join('\n');
  }
  const head = rows[0];
  const tail = rows.at(-1);
  const body = rows.slice(1, -1);
  if (!doc || head !== '*' || tail?.trim() !== '' || !body.every((r) => /^\s*\*( |$)/.test(r))) return null;
  const texts = body.map((r) => r.replace(/^\s*\* ?/, ''));
  if (!texts.some((t) => indent.length + 3 + t.length > COMMENT_WIDTH)) return null;
  const filled = refill(texts, COMMENT_WIDTH - indent.length - 3);
  if (filled.join('\n') === texts.join('\n')) return null;
  return ['/**', ...filled.map((t) => `${indent} *${t ? ` ${t}` : ''}`), `${indent} */`].join('\n');
}
