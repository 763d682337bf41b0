/**
 * Version 7: client authentication beyond one secret (several secrets per client, each with an
 * optional expiry and last use; `private_key_jwt` clients with a JWK Set or its URL) and the
 * single-use jtis of client assertions.
 */
import { sql, type Expression, type Kysely } from "kysely";
import { TABLES, type SqlFamily } from "../schema.js";
import { columnTypes, steps } from "./steps.js";

/**
 * `pg_clients` gets `auth_method` (default `client_secret`), `secrets` (a JSON array of
 * `{id, hash, createdAt, expiresAt, lastUsedAt}`), `jwks` and `jwks_uri`; each client's single
 * `secret_hash` becomes its first secret (id `initial`, created at `secret_updated_at`, no expiry),
 * then the column goes. A new table `pg_assertion_jtis` keeps used assertion jtis until they expire.
 */
export async function clientAuthUp(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const t = await columnTypes(db, family);
  const withOptions = <B extends { modifyEnd(e: Expression<unknown>): B }>(b: B): B => (t.tableOptions ? b.modifyEnd(t.tableOptions) : b);
  const step = steps(db, family);
  // MySQL TEXT columns take no literal default: add nullable, fill, and let the store always write it.
  await step.addColumn(TABLES.clients, "auth_method", "varchar(32)", (c) => c.notNull().defaultTo("client_secret"));
  await step.addColumn(TABLES.clients, "secrets", t.long);
  await step.addColumn(TABLES.clients, "jwks", t.long);
  await step.addColumn(TABLES.clients, "jwks_uri", t.text);
  if (family === "sqlite") {
    // One statement: D1 runs the SQLite migrations compiled to SQL ahead of time (no code can run
    // between its statements), so the backfill must be SQL. json_object keeps the key order the
    // stores write, so the text is what secretsJson would write.
    await sql`update ${sql.table(TABLES.clients)} set secrets = json_array(json_object('id', 'initial', 'hash', secret_hash, 'createdAt', secret_updated_at, 'expiresAt', null, 'lastUsedAt', null))`.execute(db);
  } else if (!step.resumable || (await step.hasColumn(TABLES.clients, "secret_hash"))) {
    // Backfill in code on PostgreSQL and MySQL (clients are few). Run again on MySQL after the
    // column went, there is nothing left to copy: the cut-short run copied every secret first.
    const rows = await db.selectFrom(TABLES.clients).select(["client_id", "secret_hash", "secret_updated_at"]).execute();
    for (const r of rows) {
      const secrets = JSON.stringify([{ id: "initial", hash: r.secret_hash, createdAt: Number(r.secret_updated_at), expiresAt: null, lastUsedAt: null }]);
      await db.updateTable(TABLES.clients).set({ secrets }).where("client_id", "=", r.client_id).execute();
    }
  }
  await step.dropColumn(TABLES.clients, "secret_hash");

  await step.createTable(withOptions(
    db.schema
      .createTable(TABLES.assertionJtis)
      .addColumn("jti_key", t.key, (c) => c.primaryKey().notNull())
      .addColumn("expires_at", "bigint", (c) => c.notNull()),
  ));
  await step.createIndex(TABLES.assertionJtis, "pg_assertion_jtis_expires_idx", (b) => b.column("expires_at"));
}

/** Back to one secret per client: the newest secret stays (key-based clients get an unusable hash). */
export async function clientAuthDown(db: Kysely<any>, family: SqlFamily): Promise<void> {
  const t = await columnTypes(db, family);
  await db.schema.dropTable(TABLES.assertionJtis).ifExists().execute();
  await db.schema.alterTable(TABLES.clients).addColumn("secret_hash", t.text).execute();
  const rows = await db.selectFrom(TABLES.clients).select(["client_id", "secrets"]).execute();
  for (const r of rows) {
    const secrets = (JSON.parse(String(r.secrets ?? "[]")) as Array<{ hash: string }>);
    await db.updateTable(TABLES.clients).set({ secret_hash: secrets.at(-1)?.hash ?? "-" }).where("client_id", "=", r.client_id).execute();
  }
  for (const column of ["jwks_uri", "jwks", "secrets", "auth_method"]) await db.schema.alterTable(TABLES.clients).dropColumn(column).execute();
}
