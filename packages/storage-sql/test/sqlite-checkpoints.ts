/** Helpers of the SQLite checkpoint and WAL tests. */
import { sql } from "kysely";
import type { SqlStorage } from "../src/index.js";

/** The writing connection's own checkpoint threshold: 10000 while the checkpoint worker runs, 1000 without. */
export const autocheckpoint = async (s: SqlStorage) => (await sql<{ wal_autocheckpoint: number }>`PRAGMA wal_autocheckpoint`.execute(s.db)).rows[0]!.wal_autocheckpoint;

/** Whether `check` holds within `ms`, looked at every 25 ms. */
export async function until(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}
