/**
 * `prune({ signal })` documents "once it is aborted, the run makes no further storage call". Until
 * 2026-12-02 the keys step read the clients' longest access-token lifetime (a storage call:
 * `clients.maxAccessTokenTtl`, or `clients.list()` for a store without it) after the configured
 * keyring's `signingKey()` resolved, without looking at the signal in between (found by a review).
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, generateKeyRecord } from "../src/index.js";
import { harness } from "./helpers.js";

describe("prune signal and the keys step", () => {
  it("a signal aborted while the configured keyring loads its keys: no storage call after it", async () => {
    const storage = createMemoryStorage();
    const record = await generateKeyRecord("ES256", Date.now(), Date.now());
    const h = await harness({ storage, signingKey: JSON.parse(record.privateJwk) as JsonWebKey });
    let stop: AbortController | undefined;
    let abortedAt = -1;
    const calls: string[] = [];
    const list = storage.signingKeys.list.bind(storage.signingKeys);
    storage.signingKeys.list = async () => {
      calls.push("signingKeys.list");
      if (stop && !stop.signal.aborted) {
        stop.abort();
        abortedAt = calls.length;
      }
      return list();
    };
    const ttl = storage.clients.maxAccessTokenTtl!.bind(storage.clients);
    storage.clients.maxAccessTokenTtl = async () => (calls.push("clients.maxAccessTokenTtl"), ttl());
    stop = new AbortController();
    const counts = await h.app.admin.prune({ signal: stop.signal });
    expect(abortedAt).toBeGreaterThan(0);
    expect(counts.complete).toBe(false);
    // The keyring's load under way may finish (its own reads); the prune's own clients read must not follow.
    expect(calls.slice(abortedAt)).not.toContain("clients.maxAccessTokenTtl");
  });
});
