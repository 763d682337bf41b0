import { describe, expect, it } from "vitest";
import { accountRecord, clientRecord, secretRecord, expectRecord, expectRecords, fakeHash, MAX_DATE_MS, refreshRecord, T0 } from "../fixtures.js";
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

    it("generation (contract change, 2026-12-02) comes back as stored, by get and list; a client stored without one comes back without one", async () => {
      const current = clientRecord({ clientId: "gen-a", generation: "Zx-9_aB3cD4eF5gH" });
      const other = clientRecord({ clientId: "gen-b", generation: "zX-9_Ab3Cd4Ef5Gh" });
      const legacy = clientRecord({ clientId: "gen-c" });
      for (const r of [current, other, legacy]) expect(await s.storage().clients.create(structuredClone(r))).toBe(true);
      expectRecord(await s.storage().clients.get("gen-a"), current, "client gen-a");
      expectRecord(await s.storage().clients.get("gen-b"), other, "client gen-b");
      expectRecord(await s.storage().clients.get("gen-c"), legacy, "client gen-c");
      expectRecords(await s.storage().clients.list(), [current, other, legacy], "clients");
    });

    it("create returns false for an existing clientId and changes nothing", async () => {
      const first = clientRecord({ clientId: "dup" });
      const second = clientRecord({ clientId: "dup", secrets: [secretRecord({ hash: fakeHash("other") })], name: "Other", scopes: ["x"], accessTokenTtl: 5, createdAt: T0 + 1 });
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

    it("round-trips a private_key_jwt client (no secrets, a JWK Set up to 64 KiB) and a jwksUri client", async () => {
      const jwks = JSON.stringify({ keys: [{ kty: "EC", crv: "P-256", x: "x".repeat(43), y: "y".repeat(43), kid: "k".repeat(60_000) }] });
      const inline = clientRecord({ clientId: "signed", authMethod: "private_key_jwt", secrets: [], jwks });
      const byUri = clientRecord({ clientId: "signed-uri", authMethod: "private_key_jwt", secrets: [], jwksUri: "https://client.example/.well-known/jwks.json?x=\u00e9" });
      expect(await s.storage().clients.create(inline)).toBe(true);
      expect(await s.storage().clients.create(byUri)).toBe(true);
      expectRecord(await s.storage().clients.get("signed"), inline, "inline jwks client");
      expectRecord(await s.storage().clients.get("signed-uri"), byUri, "jwksUri client");
    });

    it("round-trips several secrets oldest first (createdAt, then id), with expiry and last use", async () => {
      const secrets = [
        secretRecord({ id: "b", createdAt: T0, expiresAt: MAX_DATE_MS, lastUsedAt: T0 + 1 }),
        secretRecord({ id: "a", createdAt: T0 + 5 }),
        secretRecord({ id: "a0", createdAt: T0, expiresAt: T0 + 10 }),
      ];
      await s.storage().clients.create(clientRecord({ clientId: "multi", secrets }));
      const read = await s.storage().clients.get("multi");
      expect(read?.secrets).toStrictEqual([secrets[2], secrets[0], secrets[1]]);
    });

    it("text with a leading U+FEFF reads back unchanged in a client's id and name", async () => {
      const record = clientRecord({ clientId: "\uFEFFbom-client", name: "\uFEFFReporting" });
      expect(await s.storage().clients.create(record)).toBe(true);
      expectRecord(await s.storage().clients.get("\uFEFFbom-client"), record, "by id");
      expect(await s.storage().clients.get("bom-client"), "the id without the BOM is another id").toBeNull();
    });

    it("addSecret keeps the secrets oldest first by createdAt then id, also for one added with an earlier time or a smaller id", async () => {
      const record = clientRecord({ clientId: "ordered", secrets: [secretRecord({ id: "m", createdAt: T0 + 1_000 })] });
      await s.storage().clients.create(record);
      expect(await s.storage().clients.addSecret("ordered", secretRecord({ id: "b", createdAt: T0 + 1_000 })), "same time, smaller id").toBe(true);
      expect(await s.storage().clients.addSecret("ordered", secretRecord({ id: "z", createdAt: T0 }))).toBe(true);
      expect((await s.storage().clients.get("ordered"))?.secrets.map((x) => x.id)).toEqual(["z", "b", "m"]);
    });

    it("addSecret keeps the earlier secrets, sets secretUpdatedAt, and refuses a duplicate id or an absent client", async () => {
      const record = clientRecord({ clientId: "rotating", accessTokenTtl: 300 });
      const other = clientRecord({ clientId: "bystander" });
      await s.storage().clients.create(record);
      await s.storage().clients.create(other);
      const added = secretRecord({ id: "s2", createdAt: T0 + 5_000, expiresAt: T0 + 90_000 });
      expect(await s.storage().clients.addSecret("rotating", added)).toBe(true);
      expectRecord(await s.storage().clients.get("rotating"), { ...record, secrets: [...record.secrets, added], secretUpdatedAt: T0 + 5_000 }, "client with two secrets");
      expect(await s.storage().clients.addSecret("rotating", secretRecord({ id: "s2", hash: fakeHash("other"), createdAt: T0 + 6_000 })), "duplicate id").toBe(false);
      expectRecord(await s.storage().clients.get("rotating"), { ...record, secrets: [...record.secrets, added], secretUpdatedAt: T0 + 5_000 }, "unchanged");
      expect(await s.storage().clients.addSecret("ghost", added)).toBe(false);
      expect(await s.storage().clients.get("ghost")).toBeNull();
      expectRecord(await s.storage().clients.get("bystander"), other, "other client");
    });

    it("replaceSecrets leaves exactly the new secret (every earlier one gone) and returns true; false when absent", async () => {
      const record = clientRecord({ clientId: "rotating", secrets: [secretRecord({ id: "a" }), secretRecord({ id: "b", createdAt: T0 + 1 })] });
      await s.storage().clients.create(record);
      const fresh = secretRecord({ id: "c", hash: fakeHash("new secret"), createdAt: MAX_DATE_MS });
      expect(await s.storage().clients.replaceSecrets("rotating", fresh)).toBe(true);
      expectRecord(await s.storage().clients.get("rotating"), { ...record, secrets: [fresh], secretUpdatedAt: MAX_DATE_MS }, "rotated client");
      expect(await s.storage().clients.replaceSecrets("ghost", fresh)).toBe(false);
      expect(await s.storage().clients.get("ghost")).toBeNull();
    });

    it("removeSecret removes that secret only and sets secretUpdatedAt; false for an absent secret or client", async () => {
      const a = secretRecord({ id: "a" });
      const b = secretRecord({ id: "b", createdAt: T0 + 1 });
      const record = clientRecord({ clientId: "c", secrets: [a, b] });
      await s.storage().clients.create(record);
      expect(await s.storage().clients.removeSecret("c", "a", T0 + 9)).toBe(true);
      expectRecord(await s.storage().clients.get("c"), { ...record, secrets: [b], secretUpdatedAt: T0 + 9 }, "one left");
      expect(await s.storage().clients.removeSecret("c", "a", T0 + 10)).toBe(false);
      expect(await s.storage().clients.removeSecret("ghost", "b", T0 + 10)).toBe(false);
      expect(await s.storage().clients.removeSecret("c", "b", T0 + 11)).toBe(true);
      expectRecord(await s.storage().clients.get("c"), { ...record, secrets: [], secretUpdatedAt: T0 + 11 }, "none left");
    });

    it("touchSecret sets lastUsedAt of that secret only, never moves it back, and ignores absent ones", async () => {
      const a = secretRecord({ id: "a" });
      const b = secretRecord({ id: "b", createdAt: T0 + 1 });
      const record = clientRecord({ clientId: "c", secrets: [a, b] });
      await s.storage().clients.create(record);
      await s.storage().clients.touchSecret("c", "b", T0 + 100);
      expectRecord(await s.storage().clients.get("c"), { ...record, secrets: [a, { ...b, lastUsedAt: T0 + 100 }] }, "touched");
      await s.storage().clients.touchSecret("c", "b", T0 + 50);
      await s.storage().clients.touchSecret("c", "zz", T0 + 50);
      await s.storage().clients.touchSecret("ghost", "b", T0 + 50);
      expectRecord(await s.storage().clients.get("c"), { ...record, secrets: [a, { ...b, lastUsedAt: T0 + 100 }] }, "not moved back");
      expect(await s.storage().clients.get("ghost")).toBeNull();
    });

    it("20 concurrent addSecret calls on one client all keep their secret", async () => {
      await s.storage().clients.create(clientRecord({ clientId: "busy", secrets: [] }));
      const added = Array.from({ length: 20 }, (_, i) => secretRecord({ id: `s${String(i).padStart(2, "0")}`, createdAt: T0 + i }));
      const results = await Promise.all(added.map((x) => s.storage().clients.addSecret("busy", x)));
      expect(results).toEqual(added.map(() => true));
      expect((await s.storage().clients.get("busy"))?.secrets).toStrictEqual(added);
    });

    it("addSecret sets secretUpdatedAt to the added secret's createdAt, also when that is earlier than the stored value", async () => {
      const record = clientRecord({ clientId: "rotating", secretUpdatedAt: T0 + 10_000 });
      await s.storage().clients.create(record);
      const added = secretRecord({ id: "s2", hash: fakeHash("s2"), createdAt: T0 + 5 });
      expect(await s.storage().clients.addSecret("rotating", added)).toBe(true);
      expectRecord(await s.storage().clients.get("rotating"), { ...record, secrets: [...record.secrets, added], secretUpdatedAt: T0 + 5 }, "client");
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

    it("delete compares client ids exactly: deleting 'app' leaves 'App' and 'APP'", async () => {
      const others = [clientRecord({ clientId: "APP" }), clientRecord({ clientId: "App" })];
      for (const r of [clientRecord({ clientId: "app" }), ...others]) expect(await s.storage().clients.create(r)).toBe(true);
      expect(await s.storage().clients.delete("app")).toBe(true);
      expect(await s.storage().clients.delete("aPP"), "no such client").toBe(false);
      expectRecords(await s.storage().clients.list(), others, "remaining clients");
    });

    it("a deleted client id can be created again", async () => {
      await s.storage().clients.create(clientRecord({ clientId: "again" }));
      await s.storage().clients.delete("again");
      const fresh = clientRecord({ clientId: "again", name: "Second life", secrets: [secretRecord({ hash: fakeHash("2nd") })] });
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
      read!.secrets[0]!.hash = "mutated";
      read!.secrets.push(secretRecord({ id: "pushed" }));
      expectRecord(await s.storage().clients.get("isolated"), expected, "client");
      const [listed] = await s.storage().clients.list();
      listed!.grantTypes.pop();
      expectRecords(await s.storage().clients.list(), [expected], "clients");
    });

    it("stores copies of the secrets passed to create: mutating one afterwards changes nothing stored", async () => {
      const record = clientRecord({ clientId: "isolated-create-secrets" });
      const expected = structuredClone(record);
      expect(await s.storage().clients.create(record)).toBe(true);
      record.secrets[0]!.hash = fakeHash("mutated");
      record.secrets[0]!.expiresAt = T0;
      record.secrets[0]!.lastUsedAt = T0 + 1;
      expectRecord(await s.storage().clients.get("isolated-create-secrets"), expected, "client");
    });

    it("stores copies of the secrets passed to addSecret and replaceSecrets: mutating them afterwards changes nothing stored", async () => {
      await s.storage().clients.create(clientRecord({ clientId: "isolated-secrets" }));
      const added = secretRecord({ id: "added", hash: fakeHash("added"), createdAt: T0 + 10 });
      const addedCopy = { ...added };
      expect(await s.storage().clients.addSecret("isolated-secrets", added)).toBe(true);
      added.hash = fakeHash("mutated");
      added.lastUsedAt = T0 + 99;
      expect((await s.storage().clients.get("isolated-secrets"))?.secrets.find((x) => x.id === "added"), "the added secret").toStrictEqual(addedCopy);
      const replacing = secretRecord({ id: "only", hash: fakeHash("only"), createdAt: T0 + 20 });
      const replacingCopy = { ...replacing };
      expect(await s.storage().clients.replaceSecrets("isolated-secrets", replacing)).toBe(true);
      replacing.hash = fakeHash("mutated-too");
      replacing.expiresAt = T0 + 1;
      expect((await s.storage().clients.get("isolated-secrets"))?.secrets, "the replacing secret").toStrictEqual([replacingCopy]);
    });
  });
}
