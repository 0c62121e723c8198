import { NOW } from './redis-lua.js';

/**
 * A Lua script of the Redis gate (`redis-gate.ts`), as ioredis defines it on a connection (`defineCommand`): its
 * first `numberOfKeys` arguments are KEYS, the rest ARGV. A script runs atomically, so each operation that must
 * see and change several keys at once is one script, one round trip.
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
 * A gate script whose keys and arguments are named once (`gateScript`): its Lua reads them as `KEY.name` and
 * `ARG.name`, and `argv` writes a call's array in the same order, so neither side counts positions.
 */
export interface GateScript<K extends string = string, A extends string = string> extends ScriptSource {
  /** The call's arguments, keys first, from named values; `rest` after them (the script's `REST` list). */
  argv(keys: Record<K, string>, args: Record<A, ScriptValue>, rest?: readonly ScriptValue[]): ScriptValue[];
}

/**
 * Defines a gate script from its keys' and arguments' names and its body. The Lua begins with `KEY` and `ARG`,
 * tables of the named values; `REST`, the list of the arguments after them, when `rest` is set; and `now`, the
 * Redis server's clock (`NOW`), when `clock` is set. Bodies never read `KEYS[n]` or `ARGV[n]` themselves.
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
  const table = (names: readonly string[], from: string, offset = 0) =>
    names.map((name, index) => `${name} = ${from}[${index + 1 + offset}]`).join(', ');
  const prologue = [
    `local KEY = {${table(keys, 'KEYS')}}`,
    `local ARG = {${table(args, 'ARGV')}}`,
    ...(spec.rest ? [`local REST = {}`, `for i = ${args.length + 1}, #ARGV do REST[#REST + 1] = ARGV[i] end`] : []),
  ].join('\n');
  return {
    name: spec.name,
    numberOfKeys: keys.length,
    lua: `${spec.clock ? NOW : ''}\n${prologue}\n${spec.body}`,
    argv(keyValues, argValues, rest = []) {
      const out: ScriptValue[] = [];
      for (const name of keys) out.push(keyValues[name]);
      for (const name of args) out.push(argValues[name]);
      for (const value of rest) out.push(value);
      return out;
    },
  };
}
