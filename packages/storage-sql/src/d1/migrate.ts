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
 * database that holds one this code does not know. Two migrators racing: the loser's first batch
 * fails on a table the winner made, and once the winner has recorded every migration, that is
 * success, not an error.
 */
export async function migrateD1(ctx: D1Context, version: number = D1_MIGRATIONS.length): Promise<void> {
  const known = D1_MIGRATIONS.slice(0, version);
  const knownNames = new Set(known.map(([name]) => name));
  const before = await executedMigrations(ctx);
  await refuseNewer(ctx, knownNames, version, before);
  // Current already (every isolate's first request after the first deploy): the two reads above
  // are all, no write (before 2026-11-29 the bookkeeping tables were then ensured, a write batch,
  // and read again: five calls per isolate).
  const done = new Set(before);
  if (known.every(([name]) => done.has(name))) return;
  try {
    // The bookkeeping tables exactly as Kysely's Migrator creates them.
    await ctx.batch([
      { sql: `create table if not exists ${MIGRATIONS} ("name" varchar(255) not null primary key, "timestamp" varchar(255) not null)`, params: [] },
      { sql: `create table if not exists ${LOCK} ("id" varchar(255) not null primary key, "is_locked" integer default 0 not null)`, params: [] },
      { sql: `insert into ${LOCK} ("id", "is_locked") values ('migration_lock', 0) on conflict ("id") do nothing`, params: [] },
    ]);
    const executed = new Set(await executedMigrations(ctx));
    for (const [name, statements] of known) {
      if (executed.has(name)) continue;
      await ctx.batch([
        ...statements.map((sql) => ({ sql, params: [] })),
        { sql: `insert into ${MIGRATIONS} ("name", "timestamp") values (?, ?)`, params: [name, new Date().toISOString()] },
      ]);
    }
  } catch (e) {
    // A newer instance may have migrated meanwhile: say so plainly.
    await refuseNewer(ctx, knownNames, version);
    // The loser fails at the first migration the winner already made; give the winner up to
    // 10 s to record its work.
    for (let waited = 0; waited <= 10_000; waited += 100) {
      const executed = new Set(await executedMigrations(ctx).catch(() => []));
      if (known.every(([name]) => executed.has(name))) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw e;
  }
}
