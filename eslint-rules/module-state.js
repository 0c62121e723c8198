// @ts-check
/**
 * `tollgate/no-module-state`: no state kept in a module between requests. What a process
 * remembers (a memo, a pool of connections, a count) belongs to a service made once in
 * `src/services.ts` and passed in, which says its bound and its key; a module holds only
 * constants. Reported at a module's top level:
 *
 * - a `let` or a `var`;
 * - a `const` made with `new` (a Map, a Set, a WeakMap, an LRU cache, a class's instance, an
 *   HTTP agent), also inside an object or array literal, unless it is a value that does not
 *   change (`RegExp`, `TextEncoder`, `TextDecoder`) or is typed read-only
 *   (`const ROLES: ReadonlySet<string> = new Set([...])`);
 * - a `const` object or array literal that the module changes (a member assigned or deleted,
 *   `push`, `set`, …);
 * - a `const` made by a function called at once (`(() => { const memo = new Map(); … })()`);
 * - a class's `static` field that is not `readonly`, or is made with `new`.
 */

/** Classes whose instances do not change once made. */
const UNCHANGING = new Set(['RegExp', 'TextEncoder', 'TextDecoder']);
/** Read-only views TypeScript checks: a value declared as one is not changed through its name. */
const READ_ONLY_TYPES = new Set(['ReadonlySet', 'ReadonlyMap', 'ReadonlyArray']);
/** Methods that change the array, Map or Set they are called on. */
const CHANGING_METHODS = new Set([
  'push',
  'pop',
  'shift',
  'unshift',
  'splice',
  'sort',
  'reverse',
  'fill',
  'copyWithin',
  'set',
  'add',
  'delete',
  'clear',
]);

/** @param {any} node an expression, with TypeScript's `as`, `satisfies` and `!` taken off */
function unwrapped(node) {
  let inner = node;
  while (inner && ['TSAsExpression', 'TSSatisfiesExpression', 'TSNonNullExpression'].includes(inner.type))
    inner = inner.expression;
  return inner;
}

/** @param {any} callee the callee of a `new` */
function calleeName(callee) {
  if (callee.type === 'Identifier') return callee.name;
  if (callee.type === 'MemberExpression' && callee.property.type === 'Identifier') return callee.property.name;
  return '';
}

/** @param {any} declarator */
function typedReadOnly(declarator) {
  const type = declarator.id.typeAnnotation?.typeAnnotation;
  if (type?.type === 'TSTypeOperator' && type.operator === 'readonly') return true;
  return type?.type === 'TSTypeReference' && READ_ONLY_TYPES.has(type.typeName?.name);
}

/**
 * The `new` expressions of a value, looked for through object and array literals (not into
 * functions: what a function makes is made per call).
 *
 * @param {any} node
 * @returns {any[]}
 */
function madeWithNew(node) {
  const value = unwrapped(node);
  if (!value) return [];
  if (value.type === 'NewExpression') return UNCHANGING.has(calleeName(value.callee)) ? [] : [value];
  if (value.type === 'ObjectExpression')
    return value.properties.flatMap((property) =>
      property.type === 'Property' ? madeWithNew(property.value) : madeWithNew(property.argument),
    );
  if (value.type === 'ArrayExpression') return value.elements.flatMap((element) => madeWithNew(element));
  return [];
}

/**
 * True when a reference to a module's constant changes what it names: `X.a = 1`, `X[k]++`,
 * `delete X.a`, `X.push(…)`, `X.a.b = 1`.
 *
 * @param {any} identifier
 */
function changes(identifier) {
  let node = identifier;
  while (node.parent?.type === 'MemberExpression' && node.parent.object === node) {
    const member = node.parent;
    const parent = member.parent;
    if (parent.type === 'AssignmentExpression' && parent.left === member) return true;
    if (parent.type === 'UpdateExpression' || (parent.type === 'UnaryExpression' && parent.operator === 'delete'))
      return true;
    const name = member.property.type === 'Identifier' && !member.computed ? member.property.name : '';
    if (parent.type === 'CallExpression' && parent.callee === member && CHANGING_METHODS.has(name)) return true;
    node = member;
  }
  return false;
}

const WHY =
  'belongs to a service made in src/services.ts, with its bound and its key (CONTRIBUTING, "Where a service lives")';

/** @type {import('eslint').Rule.RuleModule} */
export const noModuleState = {
  meta: {
    type: 'problem',
    schema: [],
    messages: {
      variable: `A module-level \`{{kind}}\` keeps state between requests: it ${WHY}.`,
      made: `A module-level \`new {{name}}\` is state kept between requests: it ${WHY}; a constant table is typed ReadonlySet or ReadonlyMap.`,
      changed: `\`{{name}}\` is a module-level value this module changes: it ${WHY}.`,
      closure: `A module-level value made by a function called at once hides its state: it ${WHY}.`,
      staticField: `A class's static field that changes is state kept between requests: it ${WHY}.`,
    },
  },
  create(context) {
    const source = context.sourceCode;
    /** @param {any} declaration a top-level variable declaration */
    const checkDeclaration = (declaration) => {
      if (declaration.kind !== 'const') {
        context.report({ node: declaration, messageId: 'variable', data: { kind: declaration.kind } });
        return;
      }
      for (const declarator of declaration.declarations) {
        const init = unwrapped(declarator.init);
        if (!init) continue;
        if (
          init.type === 'CallExpression' &&
          ['ArrowFunctionExpression', 'FunctionExpression'].includes(init.callee.type)
        )
          context.report({ node: declarator, messageId: 'closure' });
        if (!typedReadOnly(declarator))
          for (const made of madeWithNew(init))
            context.report({ node: made, messageId: 'made', data: { name: calleeName(made.callee) || 'object' } });
        if (init.type !== 'ObjectExpression' && init.type !== 'ArrayExpression') continue;
        for (const variable of source.getDeclaredVariables(declarator)) {
          const changed = variable.references.find((reference) => changes(reference.identifier));
          if (changed)
            context.report({ node: changed.identifier, messageId: 'changed', data: { name: variable.name } });
        }
      }
    };
    return {
      Program(program) {
        for (const statement of program.body) {
          const declaration =
            statement.type === 'ExportNamedDeclaration' || statement.type === 'ExportDefaultDeclaration'
              ? statement.declaration
              : statement;
          if (declaration?.type === 'VariableDeclaration') checkDeclaration(declaration);
        }
      },
      /** @param {any} node */
      PropertyDefinition(node) {
        if (!node.static) return;
        if (!node.readonly || madeWithNew(node.value).length > 0) context.report({ node, messageId: 'staticField' });
      },
    };
  },
};
