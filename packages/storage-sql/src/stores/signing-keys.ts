import type { SigningKeyStore } from "@plantgate/core";
import type { StoreContext } from "../context.js";
import { keyRecord, keyRow } from "../rows.js";
import { TABLES } from "../schema.js";

/** `pg_signing_keys` as core's {@link SigningKeyStore}. */
export function signingKeyStore(ctx: StoreContext): SigningKeyStore {
  const { db, run, storableKey, insertOrFalse } = ctx;

  return {
    list: () =>
      run("signingKeys.list", async () => {
        const rows = await db.selectFrom(TABLES.signingKeys).selectAll().orderBy("created_at").orderBy("kid").execute();
        return rows.map(keyRecord);
      }),
    create: (record) =>
      run("signingKeys.create", async () => {
        const row = keyRow(ctx, record);
        return insertOrFalse(() => db.insertInto(TABLES.signingKeys).values(row).execute());
      }),
    delete: (kid) =>
      run("signingKeys.delete", async () => {
        if (!storableKey(kid)) return false;
        const result = await db.deleteFrom(TABLES.signingKeys).where("kid", "=", kid).executeTakeFirst();
        return result.numDeletedRows > 0n;
      }),
    replacePrivateJwk: (kid, expected, replacement) =>
      run("signingKeys.replacePrivateJwk", async () => {
        if (!storableKey(kid)) return false;
        const privateJwk = ctx.text(replacement, "privateJwk");
        // One conditional UPDATE: atomic on every engine, and a no-op when another writer got there first.
        const result = await db
          .updateTable(TABLES.signingKeys)
          .set({ private_jwk: privateJwk })
          .where("kid", "=", kid)
          .where("private_jwk", "=", expected)
          .executeTakeFirst();
        return result.numUpdatedRows > 0n;
      }),
  };
}
