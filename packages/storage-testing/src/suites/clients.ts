import { describe, expect, it } from "vitest";
import { accountRecord, clientRecord, expectRecord, expectRecords, fakeHash, MAX_DATE_MS, refreshRecord, T0 } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

export function clientsSuite(s: SuiteContext): void {
  describe("clients", () => {
    it("get returns null for an absent client", async () => {
      expect(await s.storage().clients.get("nope")).toBeNull();
    });

    it("create returns true and get round-trips the record exactly (arrays in order, null TTLs)", async () => {
      const record = clientRecord({ clientId: "reporting" });
      expect(await s.storage().clients.create(record)).toBe(true);
      expectRecord(await s.storage().clients.get("reporting"), record, "client");
    });

    it("round-trips numeric TTLs, empty and reordered arrays, unicode names and epoch ms beyond 32 bits", async () => {
      const record = clientRecord({
        clientId: "mobile-app",
        name: "Mobile app \u00e9\u4e2d \u{1F331}",
        grantTypes: ["refresh_token", "password"],
        scopes: [],
        accessTokenTtl: 60,
        refreshTokenTtl: 86_400,
        refreshTokenAbsoluteTtl: 2_147_483_648,
        createdAt: T0,
        secretUpdatedAt: MAX_DATE_MS,
      });
      expect(await s.storage().clients.create(record)).toBe(true);
      expectRecord(await s.storage().clients.get("mobile-app"), record, "client");
    });

    it("create returns false for an existing clientId and changes nothing", async () => {
      const first = clientRecord({ clientId: "dup" });
      const second = clientRecord({ clientId: "dup", secretHash: fakeHash("other"), name: "Other", scopes: ["x"], accessTokenTtl: 5, createdAt: T0 + 1 });
      expect(await s.storage().clients.create(first)).toBe(true);
      expect(await s.storage().clients.create(second)).toBe(false);
      expectRecord(await s.storage().clients.get("dup"), first, "first client");
      expectRecords(await s.storage().clients.list(), [first], "clients");
    });

    it("client ids are exact and case-sensitive: 'app', 'App' and 'APP' are three clients", async () => {
      const records = ["app", "App", "APP"].map((clientId) => clientRecord({ clientId, name: `name of ${clientId}` }));
      for (const r of records) expect(await s.storage().clients.create(r), r.clientId).toBe(true);
      for (const r of records) expectRecord(await s.storage().clients.get(r.clientId), r, r.clientId);
      expect(await s.storage().clients.get("aPp")).toBeNull();
    });

    it("list returns [] on an empty store", async () => {
      expect(await s.storage().clients.list()).toEqual([]);
    });

    it("list returns every client exactly, ordered by clientId in code-unit order (not locale order)", async () => {
      // Inserted out of order; 'B' < 'a' and '-' < '_' by code unit, unlike most locale collations.
      const ids = ["app", "~tilde", "a_b", "Z", "0", "App", "a-b", "z", "APP-2", "aB", "!bang", "ab"];
      const records = ids.map((clientId, i) => clientRecord({ clientId, createdAt: T0 + i }));
      for (const r of records) expect(await s.storage().clients.create(r)).toBe(true);
      const listed = await s.storage().clients.list();
      expect(listed.map((c) => c.clientId)).toEqual(["!bang", "0", "APP-2", "App", "Z", "a-b", "aB", "a_b", "ab", "app", "z", "~tilde"]);
      expectRecords(listed, [...records].sort((a, b) => (a.clientId < b.clientId ? -1 : 1)), "listed clients");
    });

    it("updateSecret replaces secretHash and secretUpdatedAt only, and returns true", async () => {
      const record = clientRecord({ clientId: "rotating", accessTokenTtl: 300 });
      const other = clientRecord({ clientId: "bystander" });
      await s.storage().clients.create(record);
      await s.storage().clients.create(other);
      const newHash = fakeHash("new secret");
      expect(await s.storage().clients.updateSecret("rotating", newHash, T0 + 5_000)).toBe(true);
      expectRecord(await s.storage().clients.get("rotating"), { ...record, secretHash: newHash, secretUpdatedAt: T0 + 5_000 }, "rotated client");
      expectRecord(await s.storage().clients.get("bystander"), other, "other client");
      // And again: the latest secret wins.
      expect(await s.storage().clients.updateSecret("rotating", fakeHash("newer"), MAX_DATE_MS)).toBe(true);
      expectRecord(await s.storage().clients.get("rotating"), { ...record, secretHash: fakeHash("newer"), secretUpdatedAt: MAX_DATE_MS }, "rotated twice");
    });

    it("updateSecret returns false for an absent client and creates nothing", async () => {
      expect(await s.storage().clients.updateSecret("ghost", fakeHash("x"), T0)).toBe(false);
      expect(await s.storage().clients.get("ghost")).toBeNull();
      expect(await s.storage().clients.list()).toEqual([]);
    });

    it("delete removes the client and returns true; a second delete returns false", async () => {
      const keep = clientRecord({ clientId: "keep" });
      await s.storage().clients.create(clientRecord({ clientId: "gone" }));
      await s.storage().clients.create(keep);
      expect(await s.storage().clients.delete("gone")).toBe(true);
      expect(await s.storage().clients.get("gone")).toBeNull();
      expect(await s.storage().clients.delete("gone")).toBe(false);
      expectRecords(await s.storage().clients.list(), [keep], "remaining clients");
    });

    it("delete of an absent client returns false and changes nothing", async () => {
      const keep = clientRecord({ clientId: "keep" });
      await s.storage().clients.create(keep);
      expect(await s.storage().clients.delete("absent")).toBe(false);
      expectRecords(await s.storage().clients.list(), [keep], "clients");
    });

    it("a deleted client id can be created again", async () => {
      await s.storage().clients.create(clientRecord({ clientId: "again" }));
      await s.storage().clients.delete("again");
      const fresh = clientRecord({ clientId: "again", name: "Second life", secretHash: fakeHash("2nd") });
      expect(await s.storage().clients.create(fresh)).toBe(true);
      expectRecord(await s.storage().clients.get("again"), fresh, "re-created client");
    });

    it("delete succeeds for a client that has refresh tokens (foreign keys must not block it)", async () => {
      await s.storage().clients.create(clientRecord({ clientId: "client-a" }));
      await s.storage().accounts.create(accountRecord({ id: "acct-1" }));
      await s.storage().refreshTokens.create(refreshRecord({ clientId: "client-a", accountId: "acct-1" }));
      expect(await s.storage().clients.delete("client-a")).toBe(true);
      expect(await s.storage().clients.get("client-a")).toBeNull();
    });

    it("stores copies: mutating the record passed to create, or one returned by get, changes nothing stored", async () => {
      const record = clientRecord({ clientId: "isolated" });
      const expected = structuredClone(record);
      await s.storage().clients.create(record);
      record.scopes.push("mutated");
      record.grantTypes.length = 0;
      record.name = "mutated";
      const read = await s.storage().clients.get("isolated");
      read!.scopes.push("mutated");
      read!.secretHash = "mutated";
      expectRecord(await s.storage().clients.get("isolated"), expected, "client");
      const [listed] = await s.storage().clients.list();
      listed!.grantTypes.pop();
      expectRecords(await s.storage().clients.list(), [expected], "clients");
    });
  });
}
