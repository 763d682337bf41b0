/**
 * One `PRAGMA data_version` check serves the cached reads of one synchronous run of JavaScript,
 * and no more: a later microtask, or any statement other than a read in between (by any
 * connection of this process), checks again. See read-cache.ts.
 */
import { describe, expect, it } from "vitest";
import { createReadCache } from "../src/read-cache.js";
import { TABLES } from "../src/schema.js";

function fixture() {
  let version = 1;
  let checks = 0;
  const cache = createReadCache({
    dataVersion: () => {
      checks++;
      return version;
    },
    bypass: () => false,
  });
  const clients = cache.space<string>([TABLES.clients], (v) => v, 10);
  const attempts = cache.space<string>([TABLES.attempts], (v) => v, 10);
  return { cache, clients, attempts, checks: () => checks, commitElsewhere: () => version++ };
}

describe("read cache: one data_version check per synchronous run", () => {
  it("two cached reads started together check once; a read in a later microtask checks again", async () => {
    const f = fixture();
    await f.clients.get("c", async () => "client-v1");
    await f.attempts.get("a", async () => "attempt-v1");
    const before = f.checks();
    const [c, a] = await Promise.all([f.clients.get("c", async () => "reloaded"), f.attempts.get("a", async () => "reloaded")]);
    expect([c, a]).toEqual(["client-v1", "attempt-v1"]);
    expect(f.checks() - before).toBe(1);
    await Promise.resolve();
    await f.clients.get("c", async () => "reloaded");
    expect(f.checks() - before).toBe(2);
  });

  it("another connection's commit is seen by the first read of the next run", async () => {
    const f = fixture();
    await f.clients.get("c", async () => "client-v1");
    f.commitElsewhere();
    await Promise.resolve();
    expect(await f.clients.get("c", async () => "client-v2")).toBe("client-v2");
  });

  it("a write statement by any cache of this process ends the trust at once, a read does not", async () => {
    const f = fixture();
    const other = fixture(); // a second connection (storage) of this process
    await f.clients.get("c", async () => "client-v1");
    await f.attempts.get("a", async () => "attempt-v1");
    const before = f.checks();
    const first = f.clients.get("c", async () => "x"); // checks, trusted from here on
    other.cache.written(`SELECT * FROM ${TABLES.clients}`);
    const second = f.attempts.get("a", async () => "x"); // still trusted
    other.cache.written(`UPDATE ${TABLES.clients} SET name = 'n'`); // the other connection commits
    f.commitElsewhere();
    const third = f.clients.get("c", async () => "client-v2"); // must check, sees the commit
    expect(await Promise.all([first, second, third])).toEqual(["client-v1", "attempt-v1", "client-v2"]);
    expect(f.checks() - before).toBeGreaterThanOrEqual(2);
  });
});
