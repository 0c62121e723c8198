import { NOW } from './redis-lua.js';

/**
 * A Lua script of the Redis gate (`redis-gate.ts`), as ioredis defines it on a connection
 * (`defineCommand`): its first `numberOfKeys` arguments are KEYS, the rest ARGV. A script runs
 * atomically, so each operation that must see and change several keys at once is one script, one
 * round trip.
 */
export interface ScriptSource {
  /** The command's name on the connection. */
  name: string;
  numberOfKeys: number;
  lua: string;
}

/** A value sent to a script: Redis receives every argument as a string. */
export type ScriptValue = string | number;

/**
 * A gate script whose keys and arguments are named once (`gateScript`): its body reads them as
 * `KEY.name` and `ARG.name`, and `argv` writes a call's array in the same order, so neither side
 * counts positions.
 */
export interface GateScript<K extends string = string, A extends string = string> extends ScriptSource {
  /**
   * The call's arguments, keys first, from named values; `rest` after them (the script's `REST`
   * list).
   */
  argv(keys: Record<K, string>, args: Record<A, ScriptValue>, rest?: readonly ScriptValue[]): ScriptValue[];
}

/**
 * Defines a gate script from its keys' and arguments' names and its body. The body reads them as
 * `KEY.name` and `ARG.name`, and the arguments after the named ones as `REST[i]` and `#REST`, when
 * `rest` is set; each is written into the Lua as its position (`KEYS[n]`, `ARGV[n]`) here, once, so
 * a call costs no table, and a name not declared fails at start-up, not as a nil in Redis. The Lua
 * begins with `now`, the Redis server's clock (`NOW`), when `clock` is set. Bodies never read
 * `KEYS[n]` or `ARGV[n]` themselves.
 *
 * @example
 * gateScript({ name: 'tollgateCredit', keys: ['wallet'], args: ['amount'], body: "redis.call('HINCRBY', …)" });
 */
export function gateScript<const K extends string, const A extends string>(spec: {
  name: string;
  keys: readonly K[];
  args: readonly A[];
  rest?: boolean;
  clock?: boolean;
  body: string;
}): GateScript<K, A> {
  const { keys, args } = spec;
  const position = (names: readonly string[], from: string) => (_: string, name: string) => {
    const index = names.indexOf(name);
    if (index < 0) throw new Error(`${spec.name}: ${from} has no argument named ${name}`);
    return `${from}[${index + 1}]`;
  };
  let body = spec.body
    .replace(/\bKEY\.(\w+)/g, position(keys, 'KEYS'))
    .replace(/\bARG\.(\w+)/g, position(args, 'ARGV'));
  if (spec.rest)
    body = body.replaceAll('#REST', `(#ARGV - ${args.length})`).replaceAll('REST[', `ARGV[${args.length} + `);
  else if (/\bREST\b/.test(body)) throw new Error(`${spec.name}: REST read without rest arguments`);
  return {
    name: spec.name,
    numberOfKeys: keys.length,
    lua: `${spec.clock ? NOW : ''}${body}`,
    argv(keyValues, argValues, rest = []) {
      const out: ScriptValue[] = [];
      for (const name of keys) out.push(keyValues[name]);
      for (const name of args) out.push(argValues[name]);
      for (const value of rest) out.push(value);
      return out;
    },
  };
}
