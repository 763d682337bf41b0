import type { ClientStore } from "@plantgate/core";
import type { Insertable } from "kysely";
import type { StoreContext } from "../context.js";
import { prepared } from "../prepared.js";
import { clientRecord, clientRow } from "../rows.js";
import { TABLES, type ClientTable } from "../schema.js";

/** `pg_clients` as core's {@link ClientStore}. */
export function clientStore(ctx: StoreContext): ClientStore {
  const { db, run, storableKey, text, insertOrFalse, updated } = ctx;
  const q = {
    get: prepared((p: { clientId: string }) => db.selectFrom(TABLES.clients).selectAll().where("client_id", "=", p.clientId)),
    insert: prepared((row: Insertable<ClientTable>) => db.insertInto(TABLES.clients).values(row)),
  };

  return {
    get: (clientId) =>
      run("clients.get", async () => {
        if (!storableKey(clientId)) return null;
        const row = (await q.get(db, { clientId })).rows[0];
        return row ? clientRecord(row) : null;
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
