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
  disconnect: (storage) => (storage as SqlStorage).close(),
});
