/**
 * Unexpected failures at the token endpoint: RFC 6749 §4.1.2.1's server_error and
 * temporarily_unavailable codes, nothing internal leaked, nothing half-written.
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, StorageError, type Storage } from "../src/index.js";
import { harness, tokenRequest } from "./helpers.js";
import { auth, expectTokenError, expectTokenSuccess, freshRefreshToken, INVALID_REFRESH, refreshRequest } from "./token-helpers.js";

const unavailable = { error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later." };
const serverError = { error: "server_error", error_description: "The server encountered an unexpected error." };

/** A memory storage whose chosen method throws while `fail` is set. */
function flakyStorage() {
  const memory = createMemoryStorage();
  const state: { fail: null | (() => Error) } = { fail: null };
  const guard = () => {
    if (state.fail) throw state.fail();
  };
  const storage: Storage = {
    ...memory,
    clients: {
      ...memory.clients,
      async get(id) {
        guard();
        return memory.clients.get(id);
      },
    },
  };
  return { storage, memory, state };
}

/** A memory storage whose refresh-token `consume` fails while `fail` is set. */
function flakyConsume() {
  const memory = createMemoryStorage();
  const state: { fail: null | (() => Error) } = { fail: null };
  const storage: Storage = {
    ...memory,
    refreshTokens: {
      ...memory.refreshTokens,
      async consume(hash, now, replacement, replay) {
        if (state.fail) throw state.fail();
        return memory.refreshTokens.consume(hash, now, replacement, replay);
      },
    },
  };
  return { storage, state };
}

describe("storage failures", () => {
  it("RFC 6749 §4.1.2.1 temporarily_unavailable: a StorageError from clients.get is 503 with no-store and Retry-After", async () => {
    const { storage, state } = flakyStorage();
    const h = await harness({ storage });
    state.fail = () => new StorageError("connection refused to db.internal:5432");
    const res = await tokenRequest(h.app, { grant_type: "client_credentials" }, auth(h));
    expect(res.headers.get("retry-after")).toBe("5");
    const text = await expectTokenError(res, 503, unavailable);
    expect(text).not.toContain("db.internal");
    // Recovery: the same request works once storage is back.
    state.fail = null;
    await expectTokenSuccess(await tokenRequest(h.app, { grant_type: "client_credentials" }, auth(h)));
  });

  it("RFC 6749 §4.1.2.1 server_error: a plain Error from clients.get is 500 with a fixed body that leaks nothing", async () => {
    const { storage, state } = flakyStorage();
    const logged: unknown[] = [];
    const h = await harness({ storage, logger: { error: (m, c) => logged.push([m, c]), warn() {} } });
    state.fail = () => new Error("SELECT secret_hash FROM clients exploded");
    const res = await tokenRequest(h.app, { grant_type: "client_credentials" }, auth(h));
    const text = await expectTokenError(res, 500, serverError);
    expect(JSON.parse(text)).toEqual({ error: "server_error", error_description: "The server encountered an unexpected error." });
    expect(text).not.toContain("exploded");
    expect(res.headers.get("retry-after")).toBeNull();
    // The failure was reported to the logger, without the client secret.
    expect(logged).toHaveLength(1);
    expect(JSON.stringify(logged)).not.toContain(h.clientSecret);
  });

  it("RFC 6749 §4.1.2.1: a non-Error throw is also a plain 500 server_error", async () => {
    const { storage, state } = flakyStorage();
    const h = await harness({ storage });
    state.fail = () => "a string, not an Error" as unknown as Error;
    await expectTokenError(await tokenRequest(h.app, { grant_type: "client_credentials" }, auth(h)), 500, serverError);
  });

  it("RFC 9700 §4.14.2 (rotation) / design (never half-write): a storage outage during rotation leaves the presented refresh token usable", async () => {
    const { storage, state } = flakyConsume();
    const h = await harness({ storage });
    const rt = await freshRefreshToken(h);
    state.fail = () => new StorageError("timeout");
    await expectTokenError(await refreshRequest(h, rt), 503, unavailable);
    state.fail = () => new Error("boom");
    await expectTokenError(await refreshRequest(h, rt), 500, serverError);
    state.fail = null;
    const body = await expectTokenSuccess(await refreshRequest(h, rt));
    expect(body.refresh_token).toEqual(expect.any(String));
    // And it is now consumed exactly once: presented again within the grace window, it replays
    // that one rotation's answer (no second rotation)...
    expect(await expectTokenSuccess(await refreshRequest(h, rt))).toEqual(body);
    // ... and after the window it is reuse.
    h.clock.advance(30_000);
    await expectTokenError(await refreshRequest(h, rt), 400, INVALID_REFRESH);
  });
});
