/**
 * Cloudflare D1 through Kysely (`createSqlStorage(new Kysely({ dialect: new D1Dialect(...) }),
 * "sqlite", { d1: binding })`): the path the README keeps for users who build their own Kysely
 * instance on D1, as opposed to `createD1Storage` (d1.test.ts). The whole conformance suite against
 * a real D1 database in Miniflare (workerd), driven from Node; `refreshTokens.consume` and
 * `accounts.createMany` go through `batch()` on the binding here, the rest through kysely-d1.
 */
import type { RefreshTokenRecord } from "@plantgate/core";
import { describeStorageConformance } from "@plantgate/storage-testing";
import { Kysely } from "kysely";
import { describe, expect, it } from "vitest";
import { D1Dialect } from "kysely-d1";
import { createSqlStorage, type SqlStorage } from "../src/index.js";
import type { Database } from "../src/schema.js";
import { d1RawDump, emptyD1Tables, miniflareD1, type TestD1 } from "./miniflare-d1.js";

let binding: TestD1;
miniflareD1("plantgate-kysely-test", (b) => (binding = b));

/** A storage over a Kysely instance of the user's own making on the binding (kysely-d1). */
const kyselyStorage = () => createSqlStorage(new Kysely<Database>({ dialect: new D1Dialect({ database: binding as never }) }), "sqlite", { d1: binding, audit: true });

let migrated = false;

/** A store on empty tables: the first one migrates from nothing, later ones empty the tables. */
async function conformanceStore(): Promise<SqlStorage> {
  if (migrated) await emptyD1Tables(binding);
  const storage = kyselyStorage();
  if (!migrated) await storage.migrate();
  migrated = true;
  return storage;
}

describeStorageConformance("d1 through kysely-d1 (miniflare)", {
  create: conformanceStore,
  destroy: (storage) => (storage as SqlStorage).close(),
  rawDump: () => d1RawDump(binding),
  connect: async () => kyselyStorage(),
  connectWithoutAudit: async () => createSqlStorage(new Kysely<Database>({ dialect: new D1Dialect({ database: binding as never }) }), "sqlite", { d1: binding }),
  disconnect: (storage) => (storage as SqlStorage).close(),
});

describe("d1 through kysely-d1: housekeeping", () => {
  it("a refreshTokens.deleteExpired batch is one D1 statement, whichever rules its tokens meet (as createD1Storage's)", async () => {
    await conformanceStore();
    // kysely-d1 prepares every statement it runs on the binding: count them.
    let statements = 0;
    const counting = { prepare: (q: string) => (statements++, binding.prepare(q)), batch: (list: readonly unknown[]) => binding.batch(list) };
    const storage = createSqlStorage(new Kysely<Database>({ dialect: new D1Dialect({ database: counting as never }) }), "sqlite", { d1: counting as never });
    const T0 = 1_767_225_600_123;
    const token = (tokenHash: string, overrides: Partial<RefreshTokenRecord>): RefreshTokenRecord => ({
      tokenHash,
      familyId: tokenHash,
      clientId: "client-a",
      accountId: "acct-1",
      scope: ["offline_access"],
      createdAt: T0,
      expiresAt: T0 + 1000,
      familyExpiresAt: T0 + 2000,
      consumedAt: null,
      revokedAt: null,
      replay: null,
      graceUses: 0,
      ...overrides,
    });
    try {
      // Of the family rule (consumed), of both rules, of the sliding rule only (live families), and kept.
      for (let i = 0; i < 2; i++) await storage.refreshTokens.create(token(`family-${i}`, { expiresAt: T0 + 5000, consumedAt: T0 }));
      for (let i = 0; i < 2; i++) await storage.refreshTokens.create(token(`both-${i}`, {}));
      for (let i = 0; i < 5; i++) await storage.refreshTokens.create(token(`sliding-${i}`, { familyExpiresAt: T0 + 9000 }));
      await storage.refreshTokens.create(token("kept", { expiresAt: T0 + 5000, familyExpiresAt: T0 + 9000 }));
      const batches: Array<{ deleted: number; statements: number }> = [];
      for (;;) {
        statements = 0;
        const deleted = await storage.refreshTokens.deleteExpired(T0 + 2000, 3);
        batches.push({ deleted, statements });
        if (deleted < 3) break;
      }
      // Until 2026-11-30 every batch but the first (the family rule's alone) was two statements.
      expect(batches).toEqual([
        { deleted: 3, statements: 1 },
        { deleted: 3, statements: 1 },
        { deleted: 3, statements: 1 },
        { deleted: 0, statements: 1 },
      ]);
      expect(await storage.refreshTokens.findByHash("kept")).not.toBeNull();
    } finally {
      await storage.close();
    }
  });
});
