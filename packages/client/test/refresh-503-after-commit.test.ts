/**
 * plantgate answers 503 `temporarily_unavailable` (Retry-After: 5) when a storage call fails, and the
 * refresh's one write (`refreshTokens.consume`) can fail on the wire after the database committed it
 * (a PostgreSQL `query_timeout`, a connection lost during COMMIT). The rotation then happened and its
 * answer is a 503: the same as a lost answer, which the SDK presents again in the background within
 * the grace window. Until 2026-12-02 a 503 started no retry, and a call more than the grace window
 * later presented the rotated refresh token: reuse, the family revoked, the user signed out.
 */
import { createMemoryStorage, StorageError } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { inProcessTarget, userProcess } from "./support.js";

describe("a refresh whose rotation committed but whose answer is a 503", () => {
  it("is presented again within the grace window, so the session lives", async () => {
    const storage = createMemoryStorage();
    let commitThenFail = false;
    let committed = false;
    const consume = storage.refreshTokens.consume.bind(storage.refreshTokens);
    storage.refreshTokens.consume = async (...args) => {
      const done = await consume(...args);
      if (commitThenFail) {
        commitThenFail = false;
        committed = done;
        // The write landed; the driver lost the reply (query_timeout / connection reset at COMMIT).
        throw new StorageError("Connection terminated unexpectedly");
      }
      return done;
    };
    const t = await inProcessTarget({ storage });
    const { events, grants, clock: serverClock } = t;
    const { client, clock } = userProcess(t);
    expect((await client.listAccounts()).total).toBe(1);

    commitThenFail = true;
    const failed = await client.refresh().catch((e: unknown) => e);
    expect(failed).toMatchObject({ name: "OAuthError", status: 503, error: "temporarily_unavailable" });
    // The server did rotate: the presented token is consumed.
    expect(committed).toBe(true);

    // Give the client the time its background retries of a lost answer take (at most 1+2+4+8 s,
    // and the 5 s hold); nothing else calls meanwhile. The server's clock stands still: within the window.
    // Until the retry is answered (its token.refreshed event), not merely sent: advancing the
    // server's clock while it was still being served put it past the window (reuse), which a
    // loaded CI run of 2026-12-03 hit once.
    for (let waited = 0; waited < 16_000 && (grants.filter((g) => g === "refresh_token").length < 2 || !events.some((e) => e.type === "token.refreshed")); waited += 250) {
      await new Promise((r) => setTimeout(r, 250));
    }

    // The next call comes 40 s later (past the 30 s grace window).
    serverClock.advance(40);
    clock.advance(40);
    const later = await client.listAccounts().catch((e: unknown) => e);
    expect(events.map((e) => e.type)).not.toContain("refresh_token.reuse_detected");
    expect(later).toMatchObject({ total: 1 });
  }, 30_000);
});
