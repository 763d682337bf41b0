import type { ClientRecord, ClientSecretRecord, ClientStore } from "@plantgate/core";
import { sql, type Insertable } from "kysely";
import type { StoreContext } from "../context.js";
import { prepared } from "../prepared.js";
import { copyRecord } from "../read-cache.js";
import { clientRecord, clientRow, pageLimit, removingSecret, secretsJson, toSecrets, touchingSecret, type SecretsChange } from "../rows.js";
import { TABLES, type ClientTable } from "../schema.js";
import { toNullableInt } from "../values.js";

/** Rounds of a secrets compare-and-set before giving up (each loses only to a concurrent change). */
const CAS_ATTEMPTS = 100;

/**
 * `pg_clients` as core's {@link ClientStore}.
 *
 * Every write on MySQL/MariaDB and PostgreSQL (one statement that commits alone, or the secrets'
 * whole transaction) is run again by `ctx.again` when the server picks it as a deadlock victim or
 * (MySQL) its lock wait times out: nothing of it was applied. InnoDB keeps a deleted row,
 * delete-marked, until purge; an INSERT of the same client id while the DELETE runs waits for a
 * shared lock on that record and then asks for an exclusive one, and a secrets change, touch,
 * regeneration or delete of the id waiting for an exclusive lock on it closes a cycle
 * (test/mysql-client-deadlocks.test.ts). A duplicate id is still `false`, not retried.
 */
export function clientStore(ctx: StoreContext): ClientStore {
  const { db, runner, family, run, storableKey, text, insertOrFalse, updated } = ctx;
  const q = {
    get: prepared((p: { clientId: string }) => db.selectFrom(TABLES.clients).selectAll().where("client_id", "=", p.clientId)),
    insert: prepared((row: Insertable<ClientTable>) => db.insertInto(TABLES.clients).values(row)),
    // A range on the primary key, in the key column's own collation (as list() orders): "C" on
    // PostgreSQL, binary NO PAD on MySQL/MariaDB, BINARY on SQLite, so any depth costs the same.
    first: prepared((p: { limit: number }) => db.selectFrom(TABLES.clients).selectAll().orderBy("client_id").limit(p.limit)),
    after: prepared((p: { after: string; limit: number }) =>
      db.selectFrom(TABLES.clients).selectAll().where("client_id", ">", p.after).orderBy("client_id").limit(p.limit),
    ),
  };
  /**
   * A cursor as a parameter. PostgreSQL text cannot hold U+0000, and no id stored there holds it:
   * an id sorts after `p + "\u0000" + rest` exactly when it sorts after `p` (an id that extends `p`
   * has a next character above U+0000; any other compares the same against both), so the cursor
   * is cut at its first U+0000. SQLite and MySQL/MariaDB compare it as it is (they hold such ids,
   * written straight into the table, and core passes on any id it listed; until 2026-11-30 core
   * refused such a cursor and a list stopped there).
   */
  const cursor = (after: string): string => (family === "postgres" && after.includes("\u0000") ? after.slice(0, after.indexOf("\u0000")) : after);
  // Read on every token request; any write to pg_clients (here, the CLI's, another process's) drops
  // it: on SQLite through data_version and the statements this connection runs, on PostgreSQL
  // through the triggers' notifications (keyed by client id).
  const cached = ctx.cache.space<ClientRecord | null>([TABLES.clients], copyRecord, 10_000, TABLES.clients);
  /**
   * Runs a write of `clientId`'s row, dropping it from the cache before (so a read in flight is not
   * remembered) and after (so one that ran meanwhile is forgotten): this instance reads its own
   * writes at once, without waiting for PostgreSQL's notification of them.
   */
  const writing = async <T>(clientId: string, write: () => Promise<T>): Promise<T> => {
    ctx.cache.invalidate(TABLES.clients, clientId);
    try {
      return await write();
    } finally {
      ctx.cache.invalidate(TABLES.clients, clientId);
    }
  };

  /**
   * A read-modify-write of one client's secrets. PostgreSQL and MySQL: in a transaction that locks
   * the row (SELECT ... FOR UPDATE), so concurrent changes queue and all are kept; run again whole
   * (`change` applied to the secrets read again) when InnoDB picks it as a deadlock victim beside a
   * create of the same id (see `clientStore`) or its lock wait times out. SQLite and D1
   * (no transaction on D1; one writer anyway): a compare-and-set on the JSON text, read again when
   * another change came first (`attempts` rounds). `change` returns null for "nothing to do"
   * (then the result is false).
   */
  const changeSecrets = async (
    clientId: string,
    change: SecretsChange,
    attempts = CAS_ATTEMPTS,
  ): Promise<boolean> => {
    if (!storableKey(clientId)) return false;
    if (family !== "sqlite") {
      return ctx.again(() =>
        db.transaction().execute(async (trx) => {
          const row = await trx.selectFrom(TABLES.clients).select("secrets").where("client_id", "=", clientId).forUpdate().executeTakeFirst();
          const next = row ? change(toSecrets(row.secrets)) : null;
          if (next === null) return false;
          await trx
            .updateTable(TABLES.clients)
            .set({ secrets: secretsJson(ctx, next.secrets), ...(next.updatedAt !== undefined ? { secret_updated_at: next.updatedAt } : {}) })
            .where("client_id", "=", clientId)
            .execute();
          return true;
        }),
      );
    }
    for (let attempt = 0; attempt < attempts; attempt++) {
      const row = await db.selectFrom(TABLES.clients).select("secrets").where("client_id", "=", clientId).executeTakeFirst();
      if (!row) return false;
      const next = change(toSecrets(row.secrets));
      if (next === null) return false;
      const result = await db
        .updateTable(TABLES.clients)
        .set({ secrets: secretsJson(ctx, next.secrets), ...(next.updatedAt !== undefined ? { secret_updated_at: next.updatedAt } : {}) })
        .where("client_id", "=", clientId)
        .where("secrets", "=", row.secrets)
        .executeTakeFirst();
      if (result.numUpdatedRows > 0n) return true;
    }
    if (attempts === 1) return false;
    throw new Error(`the secrets of a client changed ${attempts} times while being updated`);
  };

  /** SQLite and D1: appending a secret is one statement (json_insert), so concurrent adds never retry. */
  const appendSecretSqlite = async (clientId: string, secret: ClientSecretRecord): Promise<boolean> => {
    if (!storableKey(clientId)) return false;
    const one = secretsJson(ctx, [secret]).slice(1, -1);
    const clients = sql.table(TABLES.clients);
    const result = await sql`update ${clients} set secrets = json_insert(secrets, '$[#]', json(${one})), secret_updated_at = ${secret.createdAt}
      where client_id = ${clientId} and not exists (select 1 from json_each(${clients}.secrets) where json_extract(value, '$.id') = ${secret.id})`.execute(db);
    const legacy = (result as { numUpdatedOrDeletedRows?: bigint }).numUpdatedOrDeletedRows;
    return (result.numAffectedRows ?? legacy ?? 0n) > 0n;
  };

  return {
    get: (clientId) =>
      run("clients.get", async () => {
        if (!storableKey(clientId)) return null;
        return cached.get(clientId, async () => {
          const row = (await q.get(runner, { clientId })).rows[0];
          return row ? clientRecord(row) : null;
        });
      }),
    create: (record) =>
      run("clients.create", async () => {
        const row = clientRow(ctx, record);
        return writing(record.clientId, () => insertOrFalse(() => ctx.again(() => q.insert(db, row))));
      }),
    addSecret: (clientId, secret) =>
      run("clients.addSecret", () =>
        writing(clientId, () =>
          family === "sqlite"
            ? appendSecretSqlite(clientId, secret)
            : changeSecrets(clientId, (secrets) => (secrets.some((x) => x.id === secret.id) ? null : { secrets: [...secrets, secret], updatedAt: secret.createdAt })),
        ),
      ),
    replaceSecrets: (clientId, secret) =>
      run("clients.replaceSecrets", () => writing(clientId, async () => {
        if (!storableKey(clientId)) return false;
        const secrets = secretsJson(ctx, [secret]);
        const result = await ctx.again(() =>
          db.updateTable(TABLES.clients).set({ secrets, secret_updated_at: secret.createdAt }).where("client_id", "=", clientId).executeTakeFirst(),
        );
        return updated(result.numUpdatedRows, async () => (await db.selectFrom(TABLES.clients).select("client_id").where("client_id", "=", clientId).executeTakeFirst()) !== undefined);
      })),
    removeSecret: (clientId, secretId, now) =>
      run("clients.removeSecret", () =>
        writing(clientId, () => changeSecrets(clientId, removingSecret(secretId, now))),
      ),
    touchSecret: (clientId, secretId, usedAt) =>
      run("clients.touchSecret", async () => {
        // Best effort: losing a race to another change (most likely another touch) is fine.
        await writing(clientId, () => changeSecrets(clientId, touchingSecret(secretId, usedAt), 1));
      }),
    list: () =>
      run("clients.list", async () => {
        const rows = await db.selectFrom(TABLES.clients).selectAll().orderBy("client_id").execute();
        return rows.map(clientRecord);
      }),
    listPage: (after, limit) =>
      run("clients.listPage", async () => {
        const size = pageLimit(limit);
        const rows = after === null ? (await q.first(runner, { limit: size })).rows : (await q.after(runner, { after: text(cursor(after), "after"), limit: size })).rows;
        return rows.map(clientRecord);
      }),
    // The index on access_token_ttl (migration 0011) makes this one index probe on every engine:
    // SQLite's min/max optimization, PostgreSQL's backward index scan, MySQL's "tables optimized away".
    maxAccessTokenTtl: () =>
      run("clients.maxAccessTokenTtl", async () => {
        const row = await db.selectFrom(TABLES.clients).select((eb) => eb.fn.max("access_token_ttl").as("ttl")).executeTakeFirst();
        return toNullableInt(row?.ttl, "access_token_ttl");
      }),
    delete: (clientId) =>
      run("clients.delete", async () => {
        if (!storableKey(clientId)) return false;
        const result = await writing(clientId, () => ctx.again(() => db.deleteFrom(TABLES.clients).where("client_id", "=", clientId).executeTakeFirst()));
        return result.numDeletedRows > 0n;
      }),
  };
}
