import type { ClientStore } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { clientRecord, secretRecord, T0, withOtherInstance } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

/** The longest lifetime an administrator can give (core's MAX_TTL_SECONDS: ten years). */
const TEN_YEARS = 10 * 365 * 24 * 3600;

/**
 * `clients.maxAccessTokenTtl()` (optional in the type, so an older backend still runs; without it
 * core reads every client on each key re-read while several signing keys are stored, about once a
 * minute per instance). Each case fails until it is there.
 */
export function clientTtlSuite(s: SuiteContext): void {
  describe("clients.maxAccessTokenTtl", () => {
    const store = (): Required<Pick<ClientStore, "maxAccessTokenTtl">> & ClientStore => {
      const clients = s.storage().clients;
      if (typeof clients.maxAccessTokenTtl !== "function") {
        throw new Error(
          "clients.maxAccessTokenTtl is missing: without it every re-read of the signing keys while several are stored (and every prune and key rotation) reads all clients (see the README's storage section)",
        );
      }
      return clients as Required<Pick<ClientStore, "maxAccessTokenTtl">> & ClientStore;
    };
    const create = async (clientId: string, accessTokenTtl: number | null) =>
      expect(await s.storage().clients.create(clientRecord({ clientId, accessTokenTtl })), clientId).toBe(true);

    it("an empty store, and one whose clients all use the server default: null", async () => {
      expect(await store().maxAccessTokenTtl()).toBeNull();
      await create("default-1", null);
      await create("default-2", null);
      expect(await store().maxAccessTokenTtl()).toBeNull();
    });

    it("the largest of several, as a number (900 < 7200 < 86400, not text order), nulls ignored", async () => {
      for (const [id, ttl] of [["a", 7200], ["b", null], ["c", 86_400], ["d", 900], ["e", 60]] as const) await create(id, ttl);
      const longest = await store().maxAccessTokenTtl();
      expect(longest).toBe(86_400);
      expect(typeof longest).toBe("number");
      await create("ten-years", TEN_YEARS);
      expect(await store().maxAccessTokenTtl()).toBe(TEN_YEARS);
    });

    it("follows deletes (the longest gone: the next; a shared longest stays until both go; none left: null) and creates of a longer one", async () => {
      for (const [id, ttl] of [["short", 60], ["mid", 3600], ["long-1", 86_400], ["long-2", 86_400], ["none", null]] as const) await create(id, ttl);
      expect(await store().maxAccessTokenTtl()).toBe(86_400);
      expect(await s.storage().clients.delete("long-1")).toBe(true);
      expect(await store().maxAccessTokenTtl(), "another client has the same lifetime").toBe(86_400);
      expect(await s.storage().clients.delete("long-2")).toBe(true);
      expect(await store().maxAccessTokenTtl(), "the longest ones deleted").toBe(3600);
      await create("longer", 172_800);
      expect(await store().maxAccessTokenTtl(), "a longer one created").toBe(172_800);
      await create("shorter", 120);
      expect(await store().maxAccessTokenTtl(), "a shorter one changes nothing").toBe(172_800);
      for (const id of ["longer", "mid", "short", "shorter"]) expect(await s.storage().clients.delete(id), id).toBe(true);
      expect(await store().maxAccessTokenTtl(), "only a client without a lifetime left").toBeNull();
      await create("long-1", 30);
      expect(await store().maxAccessTokenTtl(), "an id created again counts with its new lifetime").toBe(30);
    });

    it("refused writes and secret changes leave it as it was", async () => {
      await create("a", 600);
      expect(await s.storage().clients.create(clientRecord({ clientId: "a", accessTokenTtl: 99_999 })), "a duplicate id").toBe(false);
      expect(await store().maxAccessTokenTtl()).toBe(600);
      expect(await s.storage().clients.delete("absent")).toBe(false);
      expect(await s.storage().clients.addSecret("a", secretRecord({ id: "s2", createdAt: T0 + 1 }))).toBe(true);
      expect(await s.storage().clients.replaceSecrets("a", secretRecord({ id: "s3", createdAt: T0 + 2 }))).toBe(true);
      await s.storage().clients.touchSecret("a", "s3", T0 + 3);
      expect(await s.storage().clients.removeSecret("a", "s3", T0 + 4)).toBe(true);
      expect(await store().maxAccessTokenTtl()).toBe(600);
      expect((await s.storage().clients.get("a"))?.accessTokenTtl).toBe(600);
    });

    it("sees the creates and deletes of another instance over the same data", async () => {
      await create("here", 600);
      expect(await store().maxAccessTokenTtl()).toBe(600);
      await withOtherInstance(s, async (other) => {
        expect(await other.clients.create(clientRecord({ clientId: "there", accessTokenTtl: 7200 }))).toBe(true);
        expect(await store().maxAccessTokenTtl(), "created by the other instance").toBe(7200);
        expect(await other.clients.delete("there")).toBe(true);
        expect(await store().maxAccessTokenTtl(), "deleted by the other instance").toBe(600);
      });
    });
  });
}
