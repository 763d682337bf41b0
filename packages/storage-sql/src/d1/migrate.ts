import { SchemaTooNewError } from "../errors.js";
import { TABLES } from "../schema.js";
import type { D1Context } from "./context.js";
import { D1_MIGRATIONS } from "./generated/migrations.js";

// The D1 migration runner: the statements of migrations/steps.ts compiled for SQLite at build
// time (generated/migrations.ts), bookkept in the same tables as Kysely's Migrator (so a database
// migrated by either is current for both). D1 rejects BEGIN, but one batch is one transaction:
// each migration's statements and its bookkeeping row commit together or not at all.

const MIGRATIONS = `"${TABLES.migrations}"`;
const LOCK = `"${TABLES.migrationLock}"`;

const versionOf = (name: string): number => {
  const n = Number.parseInt(name, 10);
  return Number.isSafeInteger(n) ? n : Number.NaN;
};

async function executedMigrations(ctx: D1Context): Promise<string[]> {
  const tables = await ctx.all(`select "name" from sqlite_master where type = 'table' and name = ?`, TABLES.migrations);
  if (tables.length === 0) return [];
  return (await ctx.all<{ name: unknown }>(`select "name" from ${MIGRATIONS}`)).map((r) => String(r.name));
}

async function refuseNewer(ctx: D1Context, knownNames: Set<string>, supported: number, executed?: string[]): Promise<void> {
  executed ??= await executedMigrations(ctx);
  const unknown = executed.filter((name) => !knownNames.has(name));
  if (unknown.length === 0) return;
  const versions = executed.map(versionOf).filter((v) => !Number.isNaN(v));
  throw new SchemaTooNewError(Math.max(supported + 1, ...versions), supported, unknown.sort());
}

/**
 * Applies the migrations up to schema `version` (by default all), refusing before any change a
 * database that holds one this code does not know. Two migrators racing: the loser's batch fails at
 * the first migration the winner already recorded; it reads the record again and goes on with what
 * is left (racing the winner again, migration by migration, if need be). A batch that fails with no
 * migration recorded by another since this one last read them is no race, and is thrown at once.
 */
export async function migrateD1(ctx: D1Context, version: number = D1_MIGRATIONS.length): Promise<void> {
  const known = D1_MIGRATIONS.slice(0, version);
  const knownNames = new Set(known.map(([name]) => name));
  const before = await executedMigrations(ctx);
  await refuseNewer(ctx, knownNames, version, before);
  // Current already (every isolate's first request after the first deploy): the two reads above
  // are all, no write (before 2026-11-29 the bookkeeping tables were then ensured, a write batch,
  // and read again: five calls per isolate).
  let recorded = new Set(before);
  if (known.every(([name]) => recorded.has(name))) return;
  let bookkept = false;
  for (;;) {
    try {
      if (!bookkept) {
        // The bookkeeping tables exactly as Kysely's Migrator creates them.
        await ctx.batch([
          { sql: `create table if not exists ${MIGRATIONS} ("name" varchar(255) not null primary key, "timestamp" varchar(255) not null)`, params: [] },
          { sql: `create table if not exists ${LOCK} ("id" varchar(255) not null primary key, "is_locked" integer default 0 not null)`, params: [] },
          { sql: `insert into ${LOCK} ("id", "is_locked") values ('migration_lock', 0) on conflict ("id") do nothing`, params: [] },
        ]);
        bookkept = true;
        recorded = new Set(await executedMigrations(ctx));
      }
      for (const [name, statements] of known) {
        if (recorded.has(name)) continue;
        await ctx.batch([
          ...statements.map((sql) => ({ sql, params: [] })),
          { sql: `insert into ${MIGRATIONS} ("name", "timestamp") values (?, ?)`, params: [name, new Date().toISOString()] },
        ]);
        recorded.add(name);
      }
      return;
    } catch (e) {
      // A batch is one transaction with its bookkeeping row, so a migration another migrator made
      // is recorded by the time this one's batch fails on it (D1 has one writer; its reads see
      // every commit). Until 2026-11-30 the loser then polled the record every 100 ms for up to 10 s
      // (two D1 reads a poll) for the winner to finish; a failure that was no race (D1 down, a
      // statement D1 refuses) waited the 10 s and made some 200 reads before it was thrown, on
      // every start that tried again, and a winner stopped midway left the loser failing too.
      let now: string[];
      try {
        now = await executedMigrations(ctx);
      } catch {
        throw e;
      }
      // A newer instance may have migrated meanwhile: say so plainly.
      await refuseNewer(ctx, knownNames, version, now);
      // Each pass again needs a migration recorded by another: at most `known.length` of them.
      if (now.every((name) => recorded.has(name))) throw e;
      recorded = new Set(now);
    }
  }
}
