/** Helpers of the SQLite checkpoint and WAL tests. */
import { sql } from "kysely";
import { expect } from "vitest";
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

/**
 * The checkpoint worker's warnings across a run of failed checkpoints of `path` (SQLite's `code`
 * and `message`): `failing()` waits for the first and checks that a second later it is still the
 * only one (the failing ticks after it say nothing); `recovered()`, once the cause is gone, waits
 * for the one line that ends the run and checks it (at least 9 failures over at least 0.9 s: the
 * run lasted that second) and that nothing follows it for half a second.
 */
export function checkpointWarnings(warnings: string[], path: string, code: string, message: string) {
  const first = `plantgate: the SQLite checkpoint worker of ${path} cannot checkpoint (${code}: ${message}); it tries again every 100 ms, and the WAL file keeps growing until a checkpoint works (said once, until one does)`;
  return {
    async failing() {
      expect(await until(() => warnings.length > 0, 5000)).toBe(true);
      await new Promise((r) => setTimeout(r, 1000));
      expect(warnings).toEqual([first]);
    },
    async recovered() {
      expect(await until(() => warnings.length > 1, 5000)).toBe(true);
      await new Promise((r) => setTimeout(r, 500));
      expect(warnings).toHaveLength(2);
      expect(warnings[0]).toBe(first);
      const line = /^plantgate: the SQLite checkpoint worker of (.+) checkpoints again, after (\d+) failed attempts \((\w+)\) over (\d+\.\d) s$/.exec(warnings[1]!);
      expect([line?.[1], line?.[3]]).toEqual([path, code]);
      expect(Number(line?.[2])).toBeGreaterThanOrEqual(9);
      expect(Number(line?.[4])).toBeGreaterThanOrEqual(0.9);
    },
  };
}
