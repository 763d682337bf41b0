// A throwing onWarning during the migration-lock wait failed the start until the diff review of
// 2026-12-02 (the option promises it fails nothing); now the wait goes on.
import { randomBytes } from "node:crypto";
import pg from "pg";
import { expect, it } from "vitest";
import { openSqlStorage } from "../src/index.js";
import { POSTGRES_URL } from "./support.js";

it("a throwing onWarning while waiting for Kysely's migration lock does not fail the start (PostgreSQL)", async () => {
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  const schema = `warnthrow_${randomBytes(4).toString("hex")}`;
  await admin.query(`create schema ${schema}`);
  const holder = new pg.Client({ connectionString: POSTGRES_URL });
  await holder.connect();
  await holder.query("select pg_advisory_lock(3853314791062309107)");
  const release = setTimeout(() => void holder.query("select pg_advisory_unlock(3853314791062309107)"), 1000);
  let outcome: unknown = "ok";
  try {
    const s = await openSqlStorage(`${POSTGRES_URL}?options=-c%20search_path%3D${schema}`, {
      clientCache: false,
      onWarning: () => {
        throw new Error("reporter failed");
      },
      migrationLock: { warnAfterMs: 200 },
    });
    await s.close();
  } catch (e) {
    outcome = `${(e as Error).constructor.name}: ${(e as Error).message}`;
  } finally {
    clearTimeout(release);
    await holder.end();
    await admin.query(`drop schema if exists ${schema} cascade`);
    await admin.end();
  }
  expect(outcome).toBe("ok");
}, 30_000);
