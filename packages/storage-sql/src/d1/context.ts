import { LATE, StorageError, waitAtMost } from "@plantgate/core";
import type { D1DatabaseLike, D1PreparedStatementLike } from "../batch.js";
import { CorruptRowError, isUniqueViolation, toStorageError, UnstorableValueError } from "../errors.js";
import { valueGuards, type ValueGuards } from "../values.js";

// The D1 storage speaks SQL to the binding directly: no Kysely in a Worker bundle. Its statements
// are the ones the Kysely stores compile to on SQLite (same tables, same conditions), written out;
// the conformance suite and test/d1.test.ts hold both to the same behaviour.

/** A statement and its values, ready to run alone or in a batch. */
export interface Statement {
  sql: string;
  params: unknown[];
}

/** What every D1 store works over; one per `createD1Storage` call. */
export interface D1Context extends ValueGuards {
  readonly d1: D1DatabaseLike;
  /**
   * Runs one storage operation; every failure but our own typed ones becomes StorageError. Unless
   * `timeoutMs` (default: the context's) is 0, one that has not settled by then fails with
   * StorageError (see {@link createD1Context}).
   */
  run<T>(operation: string, fn: () => Promise<T>, timeoutMs?: number): Promise<T>;
  /** The rows of one statement. */
  all<R = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<R[]>;
  /** The number of rows one INSERT, UPDATE or DELETE changed. */
  exec(sql: string, ...params: unknown[]): Promise<number>;
  /** Runs statements as one D1 batch (one implicit transaction); each one's changed-row count. */
  batch(statements: Statement[]): Promise<number[]>;
  /** An INSERT whose duplicate key means "false"; being one statement, it never half-writes. */
  insertOrFalse(insert: () => Promise<unknown>): Promise<boolean>;
}

/** A quoted identifier. */
export const id = (name: string): string => `"${name}"`;

/** `insert into "table" ("a", "b") values (?, ?)` for one row (its key order is the column order). */
export function insertRow(table: string, row: object): Statement {
  const columns = Object.keys(row);
  return { sql: `insert into ${id(table)} (${columns.map(id).join(", ")}) values (${columns.map(() => "?").join(", ")})`, params: Object.values(row) };
}

// D1 binds no `undefined`: an absent optional column is stored as NULL, as the Kysely stores do.
const bindable = (params: unknown[]): unknown[] => params.map((p) => (p === undefined ? null : p));

interface D1Result {
  results?: unknown[];
  meta?: { changes?: number };
}

/**
 * The {@link D1Context} of one binding. `timeoutMs` over 0 bounds each storage operation (every
 * statement and batch it sends, however many) on one timer of the caller's, started with the
 * operation and cleared when it settles: one per operation, not per statement. D1 cannot cancel a
 * call, so an operation given up on may still complete (its write done, its result dropped); what
 * the stores hand back is the operation's promise, which has failed by then, so no caller sees the
 * late result. An operation of several statements (a compare-and-set round, a prune's deletes) may
 * go on to its next statement, as it would have had it finished in time: each statement is atomic
 * on its own (there are no transactions on D1), and each operation is written so that a stop
 * between two statements leaves nothing inconsistent, which is what a D1 failure between them
 * leaves too. In workerd the timer belongs to the context of the request that started the
 * operation, as its D1 calls do: should that context go, neither fires nor settles, and other
 * requests waiting on that operation (a shared key load) bound their own waits (waitAtMost).
 */
export function createD1Context(d1: D1DatabaseLike, { timeoutMs = 0 }: { timeoutMs?: number } = {}): D1Context {
  const statement = (sql: string, params: unknown[]): D1PreparedStatementLike => d1.prepare(sql).bind(...bindable(params));
  const execute = (sql: string, params: unknown[]): Promise<D1Result> => statement(sql, params).all() as Promise<D1Result>;
  return {
    d1,
    ...valueGuards("sqlite"),
    async run(operation, fn, ms = timeoutMs) {
      try {
        if (ms === 0) return await fn();
        const work = fn();
        const result = await waitAtMost(work, ms);
        if (result !== LATE) return result;
        // Nobody awaits it any more: its failure, should it come, is not an unhandled rejection.
        work.catch(() => {});
        // The operation's name, never its parameters (as toStorageError).
        throw new StorageError(`sqlite storage failed during ${operation} (no answer from D1 within ${ms} ms)`);
      } catch (e) {
        if (e instanceof CorruptRowError || e instanceof UnstorableValueError) throw e;
        throw toStorageError(e, "sqlite", operation);
      }
    },
    async all<R>(sql: string, ...params: unknown[]) {
      return ((await execute(sql, params)).results ?? []) as R[];
    },
    async exec(sql, ...params) {
      return (await execute(sql, params)).meta?.changes ?? 0;
    },
    async batch(statements) {
      const results = await d1.batch(statements.map((s) => statement(s.sql, s.params)));
      return results.map((r) => r.meta?.changes ?? 0);
    },
    async insertOrFalse(insert) {
      try {
        await insert();
        return true;
      } catch (e) {
        if (isUniqueViolation(e)) return false;
        throw e;
      }
    },
  };
}

/**
 * Deletes the rows of `table` matching `where` (SQL over its columns, binding `params`), at most
 * `limit` of them when given, in one statement; returns how many. The same statement as the
 * Kysely stores' `deleteBatch` on SQLite: `key in (select key ... limit n)`, D1 running one
 * writer at a time.
 */
export async function deleteBatch(ctx: D1Context, table: string, key: string, where: string, params: unknown[], limit?: number): Promise<number> {
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1)) throw new TypeError("deleteExpired: limit must be a positive integer");
  if (limit === undefined) return ctx.exec(`delete from ${id(table)} where ${where}`, ...params);
  return ctx.exec(`delete from ${id(table)} where ${id(key)} in (select ${id(key)} from ${id(table)} where ${where} limit ?)`, ...params, limit);
}
