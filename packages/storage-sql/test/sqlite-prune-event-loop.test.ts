/**
 * Housekeeping on a SQLite file runs in the server's own process (the example servers'
 * `schedulePrune`, hourly by default, on `./data/plantgate.db` by default). better-sqlite3 is
 * synchronous, and `prune` goes from one batch to the next through promise reactions only, so the
 * whole run, however many batches, is one stretch of the event loop: no request is read, no timer
 * fires until every audit event past the retention is gone (until 2026-12-01): prune now gives the
 * event loop a turn between batches.
 */
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPlantgate } from "@plantgate/core";
import { afterAll, expect, it } from "vitest";
import { openSqlStorage } from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "plantgate-prune-loop-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const DAY = 24 * 3600 * 1000;

it("a prune of 100,000 audit events past the retention on SQLite lets a timer due 10 ms after its start fire before it ends (the event loop turns between batches)", { timeout: 120_000 }, async () => {
  const file = join(dir, "audit.db");
  // The schema, then 100,000 events 100 days old written straight into the file (one transaction:
  // about an hour's worth at 28 token requests a second, one hourly prune's work 90 days later).
  await (await openSqlStorage(file, { audit: true })).close();
  const raw = new Database(file);
  const now = Date.now();
  const insert = raw.prepare(`insert into pg_audit_events (id, type, time, client_id, account_id, username, data) values (?, 'token.issued', ?, 'c1', null, null, ?)`);
  raw.transaction(() => {
    for (let i = 0; i < 100_000; i++) {
      const id = `00000000-0000-4000-8000-${i.toString(16).padStart(12, "0")}`;
      const time = now - 100 * DAY + i;
      insert.run(id, time, JSON.stringify({ type: "token.issued", grant_type: "client_credentials", client_id: "c1", subject: "client:c1", scope: "plants:read", jti: "j".repeat(22), expires_at: time + 3600_000, family_id: null, client_ip: "127.0.0.1", id, time }));
    }
  })();
  raw.close();

  const storage = await openSqlStorage(file, { audit: true });
  try {
    const app = createPlantgate({ storage });
    // A timer due 10 ms after the run starts stands for a request arriving during it.
    const started = performance.now();
    let pruneDone = false;
    let timer: { after: number; pruneDone: boolean } | undefined;
    setTimeout(() => (timer = { after: performance.now() - started, pruneDone }), 10);
    const counts = await app.admin.prune();
    pruneDone = true;
    const took = performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(counts.auditEvents).toBe(100_000);
    // The run is 100 batches of 1000 (hundreds of ms); the timer fires at the first turn after 10 ms.
    expect(timer!.pruneDone, `the timer fired ${Math.round(timer!.after)} ms after the prune began (the prune took ${Math.round(took)} ms)`).toBe(false);
  } finally {
    await storage.close();
  }
});
