import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { NEEDS } from "../src/permissions.js";

/** The commands of every `redis.call('…')` in a source file. */
const calls = (file: string) => new Set([...readFileSync(new URL(`../src/${file}`, import.meta.url), "utf8").matchAll(/redis\.call\('(\w+)'/g)].map((m) => m[1]!));

describe("the start-up permission check (NEEDS) and the stores' scripts", () => {
  it("names, for each store's keys, exactly the commands its scripts run: none missed (a refusal found only at the first request, 503), none extra (a start refused for a command never sent)", () => {
    const shared = calls("scripts.ts"); // TYPE (typed), ZRANGEBYSCORE and ZREM (expiredBatchLoop), GET and DEL (DELETE_EXPIRED_STAMPED)
    expect([...shared].sort()).toEqual(["DEL", "GET", "TYPE", "ZRANGEBYSCORE", "ZREM"]);
    const every = ["TYPE", "ZRANGEBYSCORE", "ZREM"];
    const stamped = ["GET", "DEL"];
    const expected: Record<string, string[]> = {
      a: [...calls("attempts.ts"), ...every],
      r: [...calls("revoked-tokens.ts"), ...every, ...stamped],
      s: [...calls("sessions.ts"), ...every],
      j: [...calls("assertion-jtis.ts"), ...every, ...stamped],
    };
    for (const [store, commands] of Object.entries(expected)) {
      const needed = NEEDS.filter(([family]) => family.startsWith(`${store}:`)).flatMap(([, c]) => c.map(([command]) => command!));
      expect([...new Set(needed)].sort(), `store ${store}`).toEqual([...new Set(commands)].sort());
    }
  });
});
