import type { AccountRecord, AccountStore, PlantStore, SigningKeyStore } from "@plantgate/core";
import type { Selectable } from "kysely";
import { chunks, maxParamsOf } from "../batch.js";
import { isUniqueViolation } from "../errors.js";
import { accountRecord, accountRow, keyRecord, keyRow, plantRecord, plantRow } from "../rows.js";
import { TABLES, type AccountTable, type SigningKeyTable } from "../schema.js";
import { toInt } from "../values.js";
import { id, insertRow, type D1Context, type Statement } from "./context.js";

// The D1 statements of the Kysely stores in ../stores/{accounts,plants,signing-keys}.ts (clients: ./clients.ts).

const MAX_PARAMS = maxParamsOf("sqlite");

/** The accounts counter as a scalar subquery (the exact total; see ../stores/accounts.ts). */
const TOTAL = `(select "value" from ${id(TABLES.counters)} where "name" = 'accounts')`;

/** `pg_accounts` on D1 (see ../stores/accounts.ts: places from the counter, all in one batch). */
export function d1AccountStore(ctx: D1Context): AccountStore {
  const { run, all, exec, batch, storableKey, insertOrFalse } = ctx;
  const table = id(TABLES.accounts);

  /** Advances the counter and inserts `rows` at the next places, in order: one batch, all or none. */
  const append = (rows: Array<ReturnType<typeof accountRow>>): Promise<number[]> => {
    const columns = Object.keys(rows[0]!);
    const perInsert = Math.max(1, Math.floor(MAX_PARAMS / columns.length));
    const inserts = chunks(rows, perInsert).map((chunk, c): Statement => {
      const values = chunk.map((_, j) => `(${columns.map(() => "?").join(", ")}, ${TOTAL} - ${rows.length - 1 - (c * perInsert + j)})`);
      return {
        sql: `insert into ${table} (${[...columns, "position"].map(id).join(", ")}) values ${values.join(", ")}`,
        params: chunk.flatMap((row) => Object.values(row)),
      };
    });
    return batch([{ sql: `update ${id(TABLES.counters)} set "value" = "value" + ${rows.length} where "name" = 'accounts'`, params: [] }, ...inserts]);
  };

  /** Index of the first record whose id or username is stored or repeats an earlier one; else null. */
  const firstConflict = async (records: AccountRecord[]): Promise<number | null> => {
    const storedIds = new Set<string>();
    const storedNames = new Set<string>();
    for (const chunk of chunks(records, Math.floor(MAX_PARAMS / 2))) {
      const marks = chunk.map(() => "?").join(", ");
      const rows = await all<{ id: string; username: string }>(
        `select "id", "username" from ${table} where ("id" in (${marks}) or "username" in (${marks}))`,
        ...chunk.map((r) => r.id),
        ...chunk.map((r) => r.username),
      );
      for (const row of rows) {
        storedIds.add(row.id);
        storedNames.add(row.username);
      }
    }
    const ids = new Set<string>();
    const names = new Set<string>();
    for (const [i, r] of records.entries()) {
      if (storedIds.has(r.id) || storedNames.has(r.username) || ids.has(r.id) || names.has(r.username)) return i;
      ids.add(r.id);
      names.add(r.username);
    }
    return null;
  };

  const byColumn = async (column: string, value: string) => {
    const [row] = await all<Selectable<AccountTable>>(`select * from ${table} where ${id(column)} = ?`, value);
    return row ? accountRecord(row) : null;
  };

  return {
    get: (accountId) => run("accounts.get", async () => (storableKey(accountId) ? byColumn("id", accountId) : null)),
    findByUsername: (username) => run("accounts.findByUsername", async () => (storableKey(username) ? byColumn("username", username) : null)),
    create: (record) =>
      run("accounts.create", async () => {
        const row = accountRow(ctx, record);
        return insertOrFalse(() => append([row]));
      }),
    createMany: (records) =>
      run("accounts.createMany", async () => {
        const rows = records.map((r) => accountRow(ctx, r));
        if (rows.length === 0) return null;
        // No transaction to check in: check, then advance and insert in one batch. A writer
        // slipping in between fails the batch on the unique index (nothing of it is written, the
        // counter included), and the next attempt's check names the conflict.
        for (let attempt = 1; ; attempt++) {
          const conflict = await firstConflict(records);
          if (conflict !== null) return conflict;
          try {
            await append(rows);
            return null;
          } catch (e) {
            if (!isUniqueViolation(e) || attempt >= 3) throw e;
          }
        }
      }),
    setEnabled: (accountId, enabled) =>
      run("accounts.setEnabled", async () => {
        if (!storableKey(accountId)) return false;
        return (await exec(`update ${table} set "enabled" = ? where "id" = ?`, enabled ? 1 : 0, accountId)) > 0;
      }),
    setPasswordHash: (accountId, expected, replacement) =>
      run("accounts.setPasswordHash", async () => {
        if (!storableKey(accountId)) return false;
        const hash = ctx.text(replacement, "passwordHash");
        // One conditional UPDATE: atomic, and a no-op when another writer got there first.
        return (await exec(`update ${table} set "password_hash" = ? where "id" = ? and "password_hash" = ?`, hash, accountId, expected)) > 0;
      }),
    list: (offset, limit) =>
      run("accounts.list", async () => {
        // The total rides along with the page, so a non-empty page costs one round trip.
        const rows = await all<Selectable<AccountTable> & { total: unknown }>(
          `select *, ${TOTAL} as "total" from ${table} where "position" > ? order by "position" limit ?`,
          offset,
          limit,
        );
        let total = rows[0]?.total;
        if (total === undefined) {
          total = (await all<{ value: unknown }>(`select "value" from ${id(TABLES.counters)} where "name" = 'accounts'`))[0]?.value;
          if (total === undefined) throw new Error(`${TABLES.counters} has no "accounts" row: the schema is not migrated`);
        }
        return { items: rows.map(accountRecord), total: toInt(total, "total") };
      }),
  };
}

/** `pg_plants` on D1 (see ../stores/plants.ts). */
export function d1PlantStore(ctx: D1Context): PlantStore {
  const { run, all, exec, insertOrFalse, plantIdParam } = ctx;
  return {
    create: (record) =>
      run("plants.create", async () => {
        const insert = insertRow(TABLES.plants, plantRow(ctx, record));
        return insertOrFalse(() => exec(insert.sql, ...insert.params));
      }),
    get: (plantId) =>
      run("plants.get", async () => {
        // The id read back as text: D1 hands integers to JavaScript as numbers, which would round it.
        const [row] = await all<{ id: unknown; name: string; tag: string | null }>(
          `select cast("id" as text) as "id", "name", "tag" from ${id(TABLES.plants)} where "id" = ?`,
          plantIdParam(plantId),
        );
        return row ? plantRecord(row) : null;
      }),
  };
}

/** `pg_signing_keys` on D1 (see ../stores/signing-keys.ts). */
export function d1SigningKeyStore(ctx: D1Context): SigningKeyStore {
  const { run, all, exec, storableKey, insertOrFalse } = ctx;
  const table = id(TABLES.signingKeys);
  return {
    list: () => run("signingKeys.list", async () => (await all<Selectable<SigningKeyTable>>(`select * from ${table} order by "created_at", "kid"`)).map(keyRecord)),
    create: (record) =>
      run("signingKeys.create", async () => {
        const insert = insertRow(TABLES.signingKeys, keyRow(ctx, record));
        return insertOrFalse(() => exec(insert.sql, ...insert.params));
      }),
    createIfEmpty: (record) =>
      run("signingKeys.createIfEmpty", async () => {
        const row = keyRow(ctx, record);
        // One statement: D1 runs one at a time, so of racing callers exactly one finds the table empty.
        const sql = `insert into ${table} ("kid", "alg", "private_jwk", "public_jwk", "created_at", "activates_at", "last_signed_at") select ?, ?, ?, ?, ?, ?, ? where not exists (select 1 from ${table})`;
        return (await exec(sql, row.kid, row.alg, row.private_jwk, row.public_jwk, record.createdAt, record.activatesAt, record.lastSignedAt ?? null)) > 0;
      }),
    delete: (kid) =>
      run("signingKeys.delete", async () => {
        if (!storableKey(kid)) return false;
        return (await exec(`delete from ${table} where "kid" = ?`, kid)) > 0;
      }),
    replacePrivateJwk: (kid, expected, replacement) =>
      run("signingKeys.replacePrivateJwk", async () => {
        if (!storableKey(kid)) return false;
        const privateJwk = ctx.text(replacement, "privateJwk");
        // One conditional UPDATE: atomic, and a no-op when another writer got there first.
        return (await exec(`update ${table} set "private_jwk" = ? where "kid" = ? and "private_jwk" = ?`, privateJwk, kid, expected)) > 0;
      }),
    markSigning: (kid, at) =>
      run("signingKeys.markSigning", async () => {
        if (!storableKey(kid)) return;
        // One conditional UPDATE: an earlier stamp than the stored one changes nothing.
        await exec(`update ${table} set "last_signed_at" = ? where "kid" = ? and ("last_signed_at" is null or "last_signed_at" < ?)`, at, kid, at);
      }),
  };
}
