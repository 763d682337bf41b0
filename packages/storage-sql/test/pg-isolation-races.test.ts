/**
 * The atomic operations of the README ("Writing a storage backend": consume, graceUse, increment,
 * revokeFamily) on a PostgreSQL database whose `default_transaction_isolation` is not READ
 * COMMITTED. Until 2026-12-01 storage-sql said READ COMMITTED for `signingKeys.createIfEmpty` only
 * (test/first-key.test.ts runs it under both levels); the other stores ran in the server's
 * default, where a row changed by a concurrent committed transaction fails the waiting statement
 * with SQLSTATE 40001 ("could not serialize access due to concurrent update"), which is neither a
 * deadlock (retried) nor an answer: a StorageError, so a 503 for a lost race the contract answers
 * with `false` / a count. `openSqlStorage`'s connections now say READ COMMITTED on connect.
 */
import type { RefreshTokenRecord } from "@plantgate/core";
import { sql } from "kysely";
import pg from "pg";
import { afterEach, expect, it } from "vitest";
import { openSqlStorage, type SqlStorage } from "../src/index.js";
import { atIsolation, describeIfReachable, POSTGRES_URL, postgresEngine, probePostgres } from "./support.js";

const pgProblem = await probePostgres();
const T0 = 1_767_225_600_000;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
});

async function storagesAt(level: string): Promise<SqlStorage[]> {
  const db = await postgresEngine().fresh();
  cleanups.push(() => db.drop());
  const url = atIsolation(db.url, level);
  const storages: SqlStorage[] = [];
  for (let i = 0; i < 2; i++) {
    const storage = await openSqlStorage(url, { migrate: i === 0 });
    cleanups.push(() => storage.close());
    storages.push(storage);
  }
  // The database's sessions start at `level` (a plain client on the same URL says so); the stores'
  // own connections are set to READ COMMITTED on connect.
  const plain = new pg.Client({ connectionString: url });
  await plain.connect();
  try {
    expect((await plain.query<{ level: string }>("select current_setting('transaction_isolation') as level")).rows[0]!.level).toBe(level);
  } finally {
    await plain.end();
  }
  const { rows } = await sql<{ level: string }>`select current_setting('transaction_isolation') as level`.execute(storages[0]!.db);
  expect(rows[0]!.level).toBe("read committed");
  return storages;
}

const token = (hash: string, familyId = "fam"): RefreshTokenRecord => ({
  tokenHash: hash,
  familyId,
  clientId: "c",
  accountId: "a",
  scope: ["plants:read"],
  createdAt: T0,
  expiresAt: T0 + 3_600_000,
  familyExpiresAt: T0 + 86_400_000,
  consumedAt: null,
  revokedAt: null,
  replay: null,
  graceUses: 0,
});

const settle = async <T>(ps: Array<Promise<T>>) => {
  const results = await Promise.allSettled(ps);
  return {
    values: results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : [])),
    errors: results.flatMap((r) => (r.status === "rejected" ? [`${(r.reason as Error).message} / ${String(((r.reason as Error).cause as Error | undefined)?.message)}`] : [])),
  };
};

describeIfReachable("postgres isolation", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", pgProblem, () => {
  for (const level of ["read committed", "repeatable read", "serializable"]) {
    it(`postgres ${level}: 20 rounds of 16 racing refreshTokens.consume over two storages: exactly one true, the others false, none fails`, { timeout: 120_000 }, async () => {
      const storages = await storagesAt(level);
      const failures: string[] = [];
      for (let round = 0; round < 20; round++) {
        await storages[0]!.refreshTokens.create(token(`t${round}`));
        const { values, errors } = await settle(
          Array.from({ length: 16 }, (_, i) => storages[i % 2]!.refreshTokens.consume(`t${round}`, T0 + 1, token(`t${round}-r${i}`), "replay")),
        );
        failures.push(...errors);
        if (errors.length === 0) expect(values.filter(Boolean), `round ${round}`).toHaveLength(1);
      }
      expect(failures.slice(0, 3), `${failures.length} of 320 consume calls failed`).toEqual([]);
    });

    it(`postgres ${level}: 50 racing attempts.increment of one key over two storages count 1..50, none fails`, { timeout: 120_000 }, async () => {
      const storages = await storagesAt(level);
      const { values, errors } = await settle(Array.from({ length: 50 }, (_, i) => storages[i % 2]!.attempts.increment("k", T0, 60_000)));
      expect(errors.slice(0, 3), `${errors.length} of 50 increments failed`).toEqual([]);
      expect(values.map((r) => r.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    });

    it(`postgres ${level}: 20 racing refreshTokens.graceUse (max 3) over two storages: three records, none fails`, { timeout: 120_000 }, async () => {
      const storages = await storagesAt(level);
      await storages[0]!.refreshTokens.create(token("g"));
      expect(await storages[0]!.refreshTokens.consume("g", T0 + 1, token("g2"), "replay")).toBe(true);
      const { values, errors } = await settle(Array.from({ length: 20 }, (_, i) => storages[i % 2]!.refreshTokens.graceUse("g", T0, 3)));
      expect(errors.slice(0, 3), `${errors.length} of 20 grace uses failed`).toEqual([]);
      expect(values.filter((v) => v !== null)).toHaveLength(3);
    });

    it(`postgres ${level}: revokeFamily racing consume over two storages never fails`, { timeout: 120_000 }, async () => {
      const storages = await storagesAt(level);
      const failures: string[] = [];
      for (let round = 0; round < 20; round++) {
        const fam = `f${round}`;
        await storages[0]!.refreshTokens.create(token(`h${round}`, fam));
        const { errors } = await settle<unknown>([
          storages[0]!.refreshTokens.consume(`h${round}`, T0 + 1, token(`h${round}-r`, fam), "replay"),
          storages[1]!.refreshTokens.revokeFamily(fam, T0 + 2),
          storages[0]!.refreshTokens.revokeFamily(fam, T0 + 2),
        ]);
        failures.push(...errors);
      }
      expect(failures.slice(0, 3), `${failures.length} calls failed`).toEqual([]);
    });
  }
});
