/**
 * Cloudflare D1 through Kysely (`createSqlStorage(new Kysely({ dialect: new D1Dialect(...) }),
 * "sqlite", { d1: binding })`): the path the README keeps for users who build their own Kysely
 * instance on D1, as opposed to `createD1Storage` (d1.test.ts). The whole conformance suite against
 * a real D1 database in Miniflare (workerd), driven from Node; `refreshTokens.consume` and
 * `accounts.createMany` go through `batch()` on the binding here, the rest through kysely-d1.
 */
import { describeStorageConformance } from "@plantgate/storage-testing";
import { Kysely } from "kysely";
import { D1Dialect } from "kysely-d1";
import { createSqlStorage, type SqlStorage } from "../src/index.js";
import { TABLES, type Database } from "../src/schema.js";
import { miniflareD1, type TestD1 } from "./miniflare-d1.js";

let binding: TestD1;
miniflareD1("plantgate-kysely-test", (b) => (binding = b));

const DATA_TABLES = [TABLES.clients, TABLES.accounts, TABLES.refreshTokens, TABLES.refreshFamilies, TABLES.plants, TABLES.signingKeys, TABLES.attempts, TABLES.revokedTokens, TABLES.sessions, TABLES.assertionJtis, TABLES.audit];

let migrated = false;

/** A store on empty tables: the first one migrates from nothing, later ones empty the tables. */
async function conformanceStore(): Promise<SqlStorage> {
  if (migrated) await binding.batch([...DATA_TABLES.map((t) => binding.prepare(`delete from "${t}"`)), binding.prepare(`update "${TABLES.counters}" set value = 0`)]);
  const db = new Kysely<Database>({ dialect: new D1Dialect({ database: binding as never }) });
  const storage = createSqlStorage(db, "sqlite", { d1: binding, audit: true });
  if (!migrated) await storage.migrate();
  migrated = true;
  return storage;
}

/** Every plantgate table as JSON text, read through the binding (the suite looks for secrets in it). */
async function rawDump(): Promise<string> {
  const dump: Record<string, unknown[]> = {};
  for (const table of DATA_TABLES) dump[table] = (await binding.prepare(`select * from "${table}"`).all()).results;
  return JSON.stringify(dump);
}

describeStorageConformance("d1 through kysely-d1 (miniflare)", {
  create: conformanceStore,
  destroy: (storage) => (storage as SqlStorage).close(),
  rawDump,
  connect: async () => createSqlStorage(new Kysely<Database>({ dialect: new D1Dialect({ database: binding as never }) }), "sqlite", { d1: binding, audit: true }),
  disconnect: (storage) => (storage as SqlStorage).close(),
});
