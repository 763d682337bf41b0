/**
 * Housekeeping (`admin.prune`) through the token endpoint: what it deletes never changes an
 * answer, and a rotated token is kept as long as presenting it again can detect reuse.
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, pruneIntervalFromEnv, ConfigError } from "../src/index.js";
import { harness } from "./helpers.js";
import { DAY, expectTokenError, expectTokenSuccess, INVALID_REFRESH, passwordRequest, refreshRequest } from "./token-helpers.js";

const ZERO = { refreshTokens: 0, sessions: 0, attempts: 0, revokedTokens: 0, assertionJtis: 0, signingKeys: 0, auditEvents: 0 };

describe("admin.prune", () => {
  it("keeps a rotated token past its own sliding expiry while its family lives: its reuse still revokes the family", async () => {
    const h = await harness({ storage: createMemoryStorage() });
    const first = await expectTokenSuccess(await passwordRequest(h, { scope: "offline_access" }));
    // Refresh every 5 days: each token is used before its 7-day sliding expiry.
    let current = first.refresh_token!;
    for (let i = 0; i < 3; i++) {
      h.clock.advance(5 * DAY);
      current = (await expectTokenSuccess(await refreshRequest(h, current))).refresh_token!;
    }
    // Day 15: the first token's own sliding expiry (day 7) has passed; the family lives to day 30.
    expect(await h.app.admin.prune()).toStrictEqual(ZERO);
    // A thief replays the first token: recognised as reuse, so the whole family is revoked.
    await expectTokenError(await refreshRequest(h, first.refresh_token!), 400, INVALID_REFRESH);
    await expectTokenError(await refreshRequest(h, current), 400, INVALID_REFRESH);
  });

  it("deletes a family once its absolute expiry has passed, and an unconsumed token once its sliding expiry has", async () => {
    const h = await harness({ storage: createMemoryStorage() });
    const first = await expectTokenSuccess(await passwordRequest(h, { scope: "offline_access" }));
    h.clock.advance(DAY);
    const second = await expectTokenSuccess(await refreshRequest(h, first.refresh_token!));
    // An idle family: the unconsumed token's sliding expiry (day 1 + 7) passes.
    h.clock.advance(7 * DAY);
    expect(await h.app.admin.prune(), "only the unconsumed token goes; the consumed one waits for the family").toStrictEqual({ ...ZERO, refreshTokens: 1 });
    await expectTokenError(await refreshRequest(h, second.refresh_token!), 400, INVALID_REFRESH);
    h.clock.advance(22 * DAY); // day 30: the family's absolute expiry
    expect(await h.app.admin.prune()).toStrictEqual({ ...ZERO, refreshTokens: 1 });
    await expectTokenError(await refreshRequest(h, first.refresh_token!), 400, INVALID_REFRESH);
  });

  it("deletes finished brute-force windows (after windowSeconds), not running ones", async () => {
    const h = await harness({ storage: createMemoryStorage(), bruteForce: { maxFailures: 5, windowSeconds: 600 } });
    const failed = await passwordRequest(h, { password: "wrong-password" });
    expect(failed.status).toBe(400);
    h.clock.advance(600_000 - 1);
    expect(await h.app.admin.prune()).toStrictEqual(ZERO);
    h.clock.advance(1);
    // One counter per (username + IP), one per username, and the client's budget across usernames
    // (finding 2): a failed password grant leaves three, and all three end with the window.
    expect(await h.app.admin.prune()).toStrictEqual({ ...ZERO, attempts: 3 });
  });

  it("refuses a batch size that is not a positive integer", async () => {
    const h = await harness();
    await expect(h.app.admin.prune({ batchSize: 0 })).rejects.toThrow("batchSize must be a positive integer");
    await expect(h.app.admin.prune({ batchSize: 1.5 })).rejects.toThrow("batchSize must be a positive integer");
  });
});

describe("PLANTGATE_PRUNE_INTERVAL_SECONDS", () => {
  it("defaults to 3600, 0 turns it off, anything else must be whole seconds that a timer can hold", () => {
    expect(pruneIntervalFromEnv({})).toBe(3600);
    expect(pruneIntervalFromEnv({ PLANTGATE_PRUNE_INTERVAL_SECONDS: "" })).toBe(3600);
    expect(pruneIntervalFromEnv({ PLANTGATE_PRUNE_INTERVAL_SECONDS: "0" })).toBe(0);
    expect(pruneIntervalFromEnv({ PLANTGATE_PRUNE_INTERVAL_SECONDS: "60" })).toBe(60);
    expect(pruneIntervalFromEnv({ PLANTGATE_PRUNE_INTERVAL_SECONDS: "2147483" })).toBe(2_147_483);
    for (const bad of ["-1", "1.5", "1h", "2147484", " 60"]) {
      expect(() => pruneIntervalFromEnv({ PLANTGATE_PRUNE_INTERVAL_SECONDS: bad }), bad).toThrow(ConfigError);
    }
    expect(() => pruneIntervalFromEnv({ PLANTGATE_PRUNE_INTERVAL_SECONDS: "soon" })).toThrow(
      'PLANTGATE_PRUNE_INTERVAL_SECONDS must be 0 (off) or a number of seconds up to 2147483, got "soon"',
    );
  });
});
