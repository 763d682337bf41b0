import type { PlantStore } from "@plantgate/core";
import type { Insertable } from "kysely";
import type { StoreContext } from "../context.js";
import { prepared } from "../prepared.js";
import { plantRecord, plantRow } from "../rows.js";
import { TABLES, type PlantTable } from "../schema.js";

/** `pg_plants` as core's {@link PlantStore}. */
export function plantStore(ctx: StoreContext): PlantStore {
  const { db, runner, direct, family, run, insertOrFalse, plantIdParam } = ctx;
  const q = {
    insert: prepared((row: Insertable<PlantTable>) => db.insertInto(TABLES.plants).values(row)),
    get: prepared((p: { id: bigint | string }) =>
      // Read the id back as text so no driver setting (pg type parsers, mysql2 without
      // bigNumberStrings, SQLite drivers without safe integers) can round it.
      db
        .selectFrom(TABLES.plants)
        .select((eb) => [eb.cast<string>("id", family === "mysql" ? "char" : "text").as("id"), "name", "tag"])
        .where("id", "=", p.id),
    ),
  };

  return {
    create: (record) =>
      run("plants.create", async () => {
        const row = plantRow(ctx, record);
        // SQLite: one group commit for the inserts of this event-loop turn (see DirectSqlite.batched).
        if (direct !== undefined) return insertOrFalse(() => direct.batched(() => direct.execute(q.insert.compile(row))));
        return insertOrFalse(() => q.insert(runner, row));
      }),
    get: (id) =>
      run("plants.get", async () => {
        const row = (await q.get(runner, { id: plantIdParam(id) })).rows[0];
        return row ? plantRecord(row) : null;
      }),
  };
}
