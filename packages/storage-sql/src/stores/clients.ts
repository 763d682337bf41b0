import type { ClientSecretRecord, ClientStore } from "@plantgate/core";
import type { Insertable } from "kysely";
import type { StoreContext } from "../context.js";
import { prepared } from "../prepared.js";
import { clientRecord, clientRow, secretsJson, toSecrets } from "../rows.js";
import { TABLES, type ClientTable } from "../schema.js";

/** Rounds of a secrets compare-and-set before giving up (each loses only to a concurrent change). */
const CAS_ATTEMPTS = 100;

/** `pg_clients` as core's {@link ClientStore}. */
export function clientStore(ctx: StoreContext): ClientStore {
  const { db, run, storableKey, insertOrFalse, updated } = ctx;
  const q = {
    get: prepared((p: { clientId: string }) => db.selectFrom(TABLES.clients).selectAll().where("client_id", "=", p.clientId)),
    insert: prepared((row: Insertable<ClientTable>) => db.insertInto(TABLES.clients).values(row)),
  };

  /**
   * A read-modify-write of one client's secrets as a compare-and-set on the JSON text: the UPDATE
   * matches only if the column still holds what was read, else it reads again. So concurrent
   * changes to different secrets are all kept, on every engine (D1 included: no transaction).
   * `change` returns null for "nothing to do" (then the result is false).
   */
  const changeSecrets = async (clientId: string, change: (secrets: ClientSecretRecord[]) => { secrets: ClientSecretRecord[]; updatedAt: number | undefined } | null): Promise<boolean> => {
    if (!storableKey(clientId)) return false;
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
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
      // The new text always differs from the old one, so MySQL's changed-rows count is exact here.
      if (result.numUpdatedRows > 0n) return true;
    }
    throw new Error(`the secrets of a client changed ${CAS_ATTEMPTS} times while being updated`);
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
    addSecret: (clientId, secret) =>
      run("clients.addSecret", () =>
        changeSecrets(clientId, (secrets) => (secrets.some((x) => x.id === secret.id) ? null : { secrets: [...secrets, secret], updatedAt: secret.createdAt })),
      ),
    replaceSecrets: (clientId, secret) =>
      run("clients.replaceSecrets", async () => {
        if (!storableKey(clientId)) return false;
        const result = await db
          .updateTable(TABLES.clients)
          .set({ secrets: secretsJson(ctx, [secret]), secret_updated_at: secret.createdAt })
          .where("client_id", "=", clientId)
          .executeTakeFirst();
        return updated(result.numUpdatedRows, async () => (await db.selectFrom(TABLES.clients).select("client_id").where("client_id", "=", clientId).executeTakeFirst()) !== undefined);
      }),
    removeSecret: (clientId, secretId, now) =>
      run("clients.removeSecret", () =>
        changeSecrets(clientId, (secrets) => (secrets.some((x) => x.id === secretId) ? { secrets: secrets.filter((x) => x.id !== secretId), updatedAt: now } : null)),
      ),
    touchSecret: (clientId, secretId, usedAt) =>
      run("clients.touchSecret", async () => {
        await changeSecrets(clientId, (secrets) => {
          const x = secrets.find((y) => y.id === secretId);
          if (!x || (x.lastUsedAt !== null && x.lastUsedAt >= usedAt)) return null;
          return { secrets: secrets.map((y) => (y === x ? { ...y, lastUsedAt: usedAt } : y)), updatedAt: undefined };
        });
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
