import type { AssertionJtiStore, ClientStore } from "@plantgate/core";
import type { Selectable } from "kysely";
import { clientRecord, clientRow, pageLimit, secretsJson, toSecrets, touchingSecret, type SecretsChange } from "../rows.js";
import { TABLES, type ClientTable } from "../schema.js";
import { toNullableInt } from "../values.js";
import { deleteBatch, id, insertRow, type D1Context } from "./context.js";

/** `pg_clients` on D1 (see ../stores/clients.ts: the SQLite statements, written out). */
export function d1ClientStore(ctx: D1Context): ClientStore {
  const { run, all, exec, storableKey, text, insertOrFalse } = ctx;
  const table = id(TABLES.clients);

  /**
   * One compare-and-set of a client's secrets on their JSON text (D1 has no transactions; it runs
   * one statement at a time): false when the client is absent, `change` returns null ("nothing to
   * do") or another change came between the read and the write. Only touchSecret uses it (best
   * effort, one attempt); the other changes are one statement each.
   */
  const changeSecretsOnce = async (clientId: string, change: SecretsChange): Promise<boolean> => {
    if (!storableKey(clientId)) return false;
    const [row] = await all<{ secrets: string }>(`select "secrets" from ${table} where "client_id" = ?`, clientId);
    if (!row) return false;
    const next = change(toSecrets(row.secrets));
    if (next === null) return false;
    const set = next.updatedAt !== undefined ? `"secrets" = ?, "secret_updated_at" = ?` : `"secrets" = ?`;
    const values = next.updatedAt !== undefined ? [secretsJson(ctx, next.secrets), next.updatedAt] : [secretsJson(ctx, next.secrets)];
    return (await exec(`update ${table} set ${set} where "client_id" = ? and "secrets" = ?`, ...values, clientId, row.secrets)) > 0;
  };

  return {
    get: (clientId) =>
      run("clients.get", async () => {
        if (!storableKey(clientId)) return null;
        const [row] = await all<Selectable<ClientTable>>(`select * from ${table} where "client_id" = ?`, clientId);
        return row ? clientRecord(row) : null;
      }),
    create: (record) =>
      run("clients.create", async () => {
        const insert = insertRow(TABLES.clients, clientRow(ctx, record));
        return insertOrFalse(() => exec(insert.sql, ...insert.params));
      }),
    // One statement (json_insert), so concurrent adds never retry and all are kept.
    addSecret: (clientId, secret) =>
      run("clients.addSecret", async () => {
        if (!storableKey(clientId)) return false;
        const one = secretsJson(ctx, [secret]).slice(1, -1);
        return (
          (await exec(
            `update ${table} set "secrets" = json_insert("secrets", '$[#]', json(?)), "secret_updated_at" = ? ` +
              `where "client_id" = ? and not exists (select 1 from json_each(${table}."secrets") where json_extract(value, '$.id') = ?)`,
            one,
            secret.createdAt,
            clientId,
            secret.id,
          )) > 0
        );
      }),
    replaceSecrets: (clientId, secret) =>
      run("clients.replaceSecrets", async () => {
        if (!storableKey(clientId)) return false;
        return (await exec(`update ${table} set "secrets" = ?, "secret_updated_at" = ? where "client_id" = ?`, secretsJson(ctx, [secret]), secret.createdAt, clientId)) > 0;
      }),
    // One statement too: the array rebuilt from the stored members but that secret, in their stored
    // order and text (json_each's value keeps an object's JSON, and json_each yields the members
    // in array order, which the aggregate keeps), where the secret exists. No `order by key` in
    // the aggregate: some SQLite 3.44-era builds lost the JSON subtype through an aggregate's
    // ORDER BY (each object stored as a string), and production D1's SQLite version is not pinned. Concurrent adds and removals are all
    // kept, and a removal costs one query whatever races it (until 2026-12-02 a compare-and-set:
    // a read and an update per round, round after round while other changes came first, and an
    // error after 100 rounds). A touch's compare-and-set on the text read before it then fails.
    removeSecret: (clientId, secretId, now) =>
      run("clients.removeSecret", async () => {
        // A secret id no engine stores (a lone surrogate) is simply absent, as it was before.
        if (!storableKey(clientId) || !storableKey(secretId)) return false;
        return (
          (await exec(
            `update ${table} set "secrets" = (select json_group_array(value) from json_each(${table}."secrets") where json_extract(value, '$.id') is not ?), ` +
              `"secret_updated_at" = ? ` +
              `where "client_id" = ? and exists (select 1 from json_each(${table}."secrets") where json_extract(value, '$.id') = ?)`,
            secretId,
            now,
            clientId,
            secretId,
          )) > 0
        );
      }),
    touchSecret: (clientId, secretId, usedAt) =>
      run("clients.touchSecret", async () => {
        // Best effort: losing a race to another change (most likely another touch) is fine.
        await changeSecretsOnce(clientId, touchingSecret(secretId, usedAt));
      }),
    list: () => run("clients.list", async () => (await all<Selectable<ClientTable>>(`select * from ${table} order by "client_id"`)).map(clientRecord)),
    listPage: (after, limit) =>
      run("clients.listPage", async () => {
        const size = pageLimit(limit);
        const rows =
          after === null
            ? await all<Selectable<ClientTable>>(`select * from ${table} order by "client_id" limit ?`, size)
            : await all<Selectable<ClientTable>>(`select * from ${table} where "client_id" > ? order by "client_id" limit ?`, text(after, "after"), size);
        return rows.map(clientRecord);
      }),
    // One probe of the access_token_ttl index (migration 0011), as on SQLite.
    maxAccessTokenTtl: () =>
      run("clients.maxAccessTokenTtl", async () => {
        const [row] = await all<{ ttl: unknown }>(`select max("access_token_ttl") as "ttl" from ${table}`);
        return toNullableInt(row?.ttl, "access_token_ttl");
      }),
    delete: (clientId) =>
      run("clients.delete", async () => {
        if (!storableKey(clientId)) return false;
        return (await exec(`delete from ${table} where "client_id" = ?`, clientId)) > 0;
      }),
  };
}

/** `pg_assertion_jtis` on D1 (see ../stores/assertion-jtis.ts). */
export function d1AssertionJtiStore(ctx: D1Context): AssertionJtiStore {
  const { run, exec, text, insertOrFalse } = ctx;
  const table = id(TABLES.assertionJtis);
  return {
    // One INSERT on the primary key: of concurrent callers exactly one succeeds.
    use: (key, expiresAt) => run("assertionJtis.use", () => insertOrFalse(() => exec(`insert into ${table} ("jti_key", "expires_at") values (?, ?)`, text(key, "key"), expiresAt))),
    deleteExpired: (now, limit) => run("assertionJtis.deleteExpired", () => deleteBatch(ctx, TABLES.assertionJtis, "jti_key", `"expires_at" <= ?`, [now], limit)),
  };
}
