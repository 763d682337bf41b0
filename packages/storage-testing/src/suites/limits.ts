import type { AuditRecord } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { accountRecord, clientRecord, expectRecord, fakeHash, refreshRecord, seedOwners, T0 } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

/**
 * `length` UTF-16 units of text in 1-, 2-, 3- and 4-byte UTF-8 characters (the 4-byte one is two
 * units), so a column sized in bytes, or in characters of at most three bytes, fails where the core
 * accepts the value.
 */
function text(length: number, salt = ""): string {
  const unit = "aé✓😀"; // 1 + 1 + 1 + 2 units; 1 + 2 + 3 + 4 bytes
  let out = salt;
  while (out.length + unit.length <= length) out += unit;
  while (out.length < length) out += "z";
  return out;
}

/** A JSON text of exactly `length` characters, as a JWK Set is stored (opaque to the store). */
function jsonOf(length: number): string {
  const head = '{"keys":[],"pad":"';
  const tail = '"}';
  return head + "x".repeat(length - head.length - tail.length) + tail;
}

/**
 * The longest values the core accepts (admin API, console, token endpoint) must be stored and read
 * back exactly: a backend whose columns are narrower turns an accepted request into a 503.
 */
export function limitsSuite(s: SuiteContext): void {
  describe("the longest values the core accepts", () => {
    it("a client: id 200 characters (printable ASCII), name 200, JWK Set 65,536, jwks_uri 2048; found by its id", async () => {
      const clientId = "c".repeat(150) + "!#$%&'()*+,-./:;<=>?@[]^_`{|}~0123456789ABCDEFGHIJKLMNOP".slice(0, 50);
      expect(clientId.length).toBe(200);
      const record = clientRecord({
        clientId,
        authMethod: "private_key_jwt",
        secrets: [],
        name: text(200),
        jwks: jsonOf(65_536),
        jwksUri: `https://keys.example.com/${"k".repeat(2048 - 25)}`,
      });
      expect([record.name.length, record.jwks!.length, record.jwksUri!.length]).toEqual([200, 65_536, 2048]);
      expect(await s.storage().clients.create(record)).toBe(true);
      expectRecord(await s.storage().clients.get(clientId), record, "the client");
    });

    it("an account: username 200 characters (4-byte ones among them), displayName and email 320, 32 roles of 100; found by its username", async () => {
      const record = accountRecord({
        id: "acct-long",
        username: text(200, "u"),
        displayName: text(320, "d"),
        email: text(320, "e"),
        roles: Array.from({ length: 32 }, (_, i) => text(100, `r${String(i).padStart(2, "0")}`)),
      });
      expect([record.username.length, record.displayName!.length, record.email!.length]).toEqual([200, 320, 320]);
      expect(await s.storage().accounts.create(record)).toBe(true);
      expectRecord(await s.storage().accounts.findByUsername(record.username), record, "the account by username");
      expectRecord(await s.storage().accounts.get(record.id), record, "the account by id");
    });

    it("a refresh token consumed with replay data of 4,095 characters keeps it", async () => {
      await seedOwners(s.storage());
      const original = refreshRecord({ tokenHash: fakeHash("long-replay-head"), familyId: "long-replay" });
      const replacement = refreshRecord({ tokenHash: fakeHash("long-replay-next"), familyId: "long-replay", createdAt: T0 + 1000 });
      await s.storage().refreshTokens.create(original);
      const replay = `v1.${"A".repeat(22)}.${"B".repeat(4095 - 26)}`;
      expect(replay.length).toBe(4095);
      expect(await s.storage().refreshTokens.consume(original.tokenHash, T0 + 1000, replacement, replay)).toBe(true);
      expectRecord(await s.storage().refreshTokens.findByHash(original.tokenHash), { ...original, consumedAt: T0 + 1000, replay }, "the consumed token");
    });

    it("an audit record with clientId, accountId and username of 200 characters is listed by each filter (skipped without an audit store)", async (t) => {
      const audit = s.storage().audit;
      if (audit === undefined) t.skip("this storage has no audit store");
      const id = "00000000-0000-4000-8000-000000000200";
      const record: AuditRecord = { id, type: "account.login_failed", time: T0, clientId: text(200, "c"), accountId: text(200, "a"), username: text(200, "n"), data: JSON.stringify({ note: text(1000) }) };
      await audit!.append(record);
      for (const filter of [{ clientId: record.clientId! }, { accountId: record.accountId! }, { username: record.username! }]) {
        const listed = await audit!.list({ limit: 10, ...filter });
        expect(listed.map((r) => ({ ...r })), JSON.stringify(filter).slice(0, 40)).toStrictEqual([record]);
      }
    });
  });
}
