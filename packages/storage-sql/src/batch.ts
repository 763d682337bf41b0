import type { CompiledQuery } from "kysely";
import type { SqlFamily } from "./schema.js";

/**
 * The part of Cloudflare's `D1Database` binding that storage-sql uses (structural, so no
 * dependency on `@cloudflare/workers-types`).
 */
export interface D1DatabaseLike {
  prepare(query: string): D1PreparedStatementLike;
  /** Runs the statements in order as one implicit transaction: any failure rolls all back. */
  batch(statements: D1PreparedStatementLike[]): Promise<Array<{ meta?: { changes?: number } }>>;
}

/** The part of D1's prepared statement that storage-sql uses. */
export interface D1PreparedStatementLike {
  bind(...values: unknown[]): D1PreparedStatementLike;
  /** Runs the statement: its rows, and in `meta.changes` how many rows it changed. */
  all(): Promise<{ results?: unknown[]; meta?: { changes?: number } }>;
}

/**
 * Runs compiled statements as one D1 batch, which D1 executes as a single implicit transaction
 * (a failing statement rolls back the whole batch); returns each statement's changed-row count.
 */
export async function d1Batch(binding: D1DatabaseLike, queries: CompiledQuery[]): Promise<number[]> {
  const results = await binding.batch(queries.map((q) => binding.prepare(q.sql).bind(...q.parameters)));
  return results.map((r) => r.meta?.changes ?? 0);
}

// Large batches are split so no statement binds too many parameters: D1 allows 100 per
// statement, the other engines tens of thousands.

/** The most parameters one statement of ours binds on this engine family. */
export const maxParamsOf = (family: SqlFamily): number => (family === "sqlite" ? 99 : 5000);

/** `items` in consecutive slices of at most `size`. */
export function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
