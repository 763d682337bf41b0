import type { Compilable, CompiledQuery, Kysely, QueryResult } from "kysely";
import type { Database } from "./schema.js";

// Queries built once. Building a Kysely query and compiling it to SQL costs more than running a
// point lookup on SQLite, so the hot ones are compiled on first use with markers in place of the
// values, and each call only puts its values where the markers went.

/** Stands for the value of `params[key]` while a prepared query is compiled. */
class Slot {
  constructor(readonly key: string) {}
}

/** What runs a compiled query: the Kysely instance or a transaction on it. */
export type Runner = Pick<Kysely<Database>, "executeQuery">;

/** A query compiled once; call it to run it with these values, or `compile` them for a D1 batch. */
export interface Prepared<P, R> {
  (runner: Runner, params: P): Promise<QueryResult<R>>;
  compile(params: P): CompiledQuery<R>;
}

/**
 * Builds and compiles `build(params)` once, on the first call, with a {@link Slot} in place of each
 * value of `params`; later calls reuse the SQL and bind their own values where the slots went.
 * So the query's shape must not depend on the values (a value decides nothing but itself), every
 * call must pass the same keys, and `undefined` is bound as NULL (Kysely would drop an undefined
 * column from an INSERT, which for our nullable columns without defaults stores NULL as well).
 */
export function prepared<P extends object, R>(build: (params: P) => Compilable<R>): Prepared<P, R> {
  let base: CompiledQuery<R> | undefined;
  let keys: Array<string | null> = [];
  const compile = (params: P): CompiledQuery<R> => {
    if (base === undefined) {
      const names = Object.keys(params);
      const compiled = build(Object.fromEntries(names.map((k) => [k, new Slot(k)])) as P).compile();
      keys = compiled.parameters.map((v) => (v instanceof Slot ? v.key : null));
      const unused = names.filter((k) => !keys.includes(k));
      if (unused.length > 0) throw new Error(`prepared query binds no value for ${unused.join(", ")}: ${compiled.sql}`);
      base = compiled;
    }
    const values = params as Record<string, unknown>;
    const constants = base.parameters;
    const parameters = keys.map((k, i) => (k === null ? constants[i] : (values[k] ?? null)));
    return { query: base.query, queryId: base.queryId, sql: base.sql, parameters };
  };
  const run = (runner: Runner, params: P): Promise<QueryResult<R>> => runner.executeQuery(compile(params));
  return Object.assign(run, { compile });
}

/** Row count of UPDATE, DELETE or INSERT, as Kysely's result objects report it. */
export const affected = (result: QueryResult<unknown>): bigint => result.numAffectedRows ?? 0n;
