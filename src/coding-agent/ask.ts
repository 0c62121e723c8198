import type { Interface } from 'node:readline/promises';
import type { Paint } from './render.js';
import { ToolRefusal } from './tools/types.js';
import type { View } from './view.js';

/**
 * "No, and do this instead": the person's instruction, sent to the model as
 * the call's refusal (`refused: the user declined this call and said what to
 * do instead: …`), so the model reads it in the same turn. Thrown by the
 * question, caught with every refusal where the call is run (loop.ts).
 */
export class Instead extends ToolRefusal {
  override name = 'Instead';

  constructor(readonly instruction: string) {
    super(`the user declined this call and said what to do instead: ${instruction}`);
  }
}

/**
 * The approval question on the prompt's line: `y` yes, `a` yes for the
 * session (when a scope is offered), `t` no and say what instead (typed after
 * the `t`, or on the next line), anything else no. A cancel (Ctrl-C) is a no.
 *
 * @example
 * setAsk(terminalAsk(rl, paint));
 */
export function terminalAsk(rl: Interface, paint: Paint): View['ask'] {
  return async (question, signal, scope) => {
    const instead = 't no, and say what to do instead';
    const choices = scope
      ? `y yes · a yes, and don't ask again this session for ${scope.label} · ${instead} · n no [y/a/t/N] `
      : `y yes · ${instead} · n no [y/t/N] `;
    let answer: string;
    try {
      answer = (await rl.question(paint.yellow(`${question} ${choices}`), { signal })).trim();
      if (/^y(es)?$/i.test(answer)) return 'yes';
      if (scope && /^a(lways)?$/i.test(answer)) return 'session';
      const told = /^t(?:\s+|$)(.*)$/is.exec(answer);
      if (!told) return 'no';
      answer = told[1]!.trim() || (await rl.question(paint.yellow('  what should it do instead? '), { signal })).trim();
    } catch {
      return 'no';
    }
    if (answer === '') return 'no';
    throw new Instead(answer);
  };
}
