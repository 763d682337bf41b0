import type { ClientRecord, ClientStore } from "@plantgate/core";
import type { Insertable } from "kysely";
import type { StoreContext } from "../context.js";
import { prepared } from "../prepared.js";
import { copyRecord } from "../read-cache.js";
import { clientRecord, clientRow } from "../rows.js";
import { TABLES, type ClientTable } from "../schema.js";

/** `pg_clients` as core's {@link ClientStore}. */
export function clientStore(ctx: StoreContext): ClientStore {
  const { db, runner, run, storableKey, text, insertOrFalse, updated } = ctx;
  const q = {
    get: prepared((p: { clientId: string }) => db.selectFrom(TABLES.clients).selectAll().where("client_id", "=", p.clientId)),
    insert: prepared((row: Insertable<ClientTable>) => db.insertInto(TABLES.clients).values(row)),
  };
  // Read on every token request; any write to pg_clients (here, the CLI's, another process's) drops it.
  const cached = ctx.cache.space<ClientRecord | null>([TABLES.clients], copyRecord, 10_000);

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
        return insertOrFalse(() => q.insert(db, row));
      }),
    updateSecret: (clientId, secretHash, updatedAt) =>
      run("clients.updateSecret", async () => {
        if (!storableKey(clientId)) return false;
        const result = await db
          .updateTable(TABLES.clients)
          .set({ secret_hash: text(secretHash, "secretHash"), secret_updated_at: updatedAt })
          .where("client_id", "=", clientId)
          .executeTakeFirst();
        return updated(result.numUpdatedRows, async () => (await db.selectFrom(TABLES.clients).select("client_id").where("client_id", "=", clientId).executeTakeFirst()) !== undefined);
      }),
    list: () =>
      run("clients.list", async () => {
        const rows = await db.selectFrom(TABLES.clients).selectAll().orderBy("client_id").execute();
        return rows.map(clientRecord);
      }),
    delete: (clientId) =>
      run("clients.delete", async () => {
        if (!storableKey(clientId)) return false;
        const result = await db.deleteFrom(TABLES.clients).where("client_id", "=", clientId).executeTakeFirst();
        return result.numDeletedRows > 0n;
      }),
  };
}
