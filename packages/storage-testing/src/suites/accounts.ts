import type { AccountRecord, AccountStore } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { accountRecord, expectRecord, expectRecords, inParallel, MAX_DATE_MS, RACES_TIMEOUT, T0, withOtherInstance } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

/** `count` accounts whose ids sort differently as numbers and as strings (user-10 < user-2). */
function numbered(count: number, prefix = "user"): AccountRecord[] {
  return Array.from({ length: count }, (_, i) => accountRecord({ id: `${prefix}-${i}`, username: `${prefix}name-${i}`, createdAt: T0 + i }));
}

/** A fixed shuffle, so insertion order never matches id (or createdAt) order. */
function shuffled<T>(items: T[]): T[] {
  const out = [...items];
  let seed = 12345;
  for (let i = out.length - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const j = seed % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export function accountsSuite(s: SuiteContext): void {
  describe("accounts", () => {
    const accounts = () => s.storage().accounts;

    /** The whole listing is exactly `expected`, in creation order, with an exact total. */
    const expectUnchanged = async (expected: AccountRecord[]) => {
      const page = await accounts().list(0, 1000);
      expect(page.total, "total").toBe(expected.length);
      expectRecords(page.items, expected, "accounts");
    };

    it("get and findByUsername return null when absent", async () => {
      expect(await accounts().get("nope")).toBeNull();
      expect(await accounts().findByUsername("nope")).toBeNull();
    });

    it("create returns true; get and findByUsername round-trip the record exactly", async () => {
      const alice = accountRecord({
        id: "0b6f1c3e-2a4d-4f8e-9c1a-7d5e3b2a1f00",
        username: "alice",
        displayName: "Alice Liddell \u00e9\u4e2d\u{1F407}",
        email: "alice@example.com",
        roles: ["reader", "admin", "auditor"],
        enabled: true,
        createdAt: T0,
      });
      const bob = accountRecord({ id: "bob-id", username: "bob", displayName: null, email: null, roles: [], enabled: false, createdAt: MAX_DATE_MS });
      expect(await accounts().create(alice)).toBe(true);
      expect(await accounts().create(bob)).toBe(true);
      expectRecord(await accounts().get(alice.id), alice, "alice by id");
      expectRecord(await accounts().findByUsername("alice"), alice, "alice by username");
      expectRecord(await accounts().get("bob-id"), bob, "bob by id");
      expectRecord(await accounts().findByUsername("bob"), bob, "bob by username");
    });

    it("empty strings stay empty strings, distinct from null", async () => {
      const record = accountRecord({ id: "empty", username: "empty", displayName: "", email: "" });
      await accounts().create(record);
      expectRecord(await accounts().get("empty"), record, "account");
    });

    it("usernames match exactly: case, accents, trailing spaces and Unicode normalization all distinguish", async () => {
      const alice = accountRecord({ id: "a1", username: "alice" });
      await accounts().create(alice);
      for (const other of ["Alice", "ALICE", "alice ", " alice", "alic\u00e9", "alice\u200b"]) {
        expect(await accounts().findByUsername(other), JSON.stringify(other)).toBeNull();
      }
      // Each of these is a different username, so each can be created.
      const others = ["Alice", "ALICE", "alice ", "jos\u00e9", "jose\u0301"].map((username, i) => accountRecord({ id: `other-${i}`, username }));
      for (const r of others) expect(await accounts().create(r), JSON.stringify(r.username)).toBe(true);
      for (const r of [alice, ...others]) expectRecord(await accounts().findByUsername(r.username), r, JSON.stringify(r.username));
    });

    it("account ids are exact and case-sensitive", async () => {
      const lower = accountRecord({ id: "abc", username: "lower" });
      const upper = accountRecord({ id: "ABC", username: "upper" });
      expect(await accounts().create(lower)).toBe(true);
      expect(await accounts().create(upper)).toBe(true);
      expectRecord(await accounts().get("abc"), lower, "abc");
      expectRecord(await accounts().get("ABC"), upper, "ABC");
      expect(await accounts().get("Abc")).toBeNull();
    });

    it("setEnabled compares ids exactly: disabling 'ABC' leaves 'abc' enabled", async () => {
      const lower = accountRecord({ id: "abc", username: "lower" });
      const upper = accountRecord({ id: "ABC", username: "upper" });
      expect(await accounts().create(lower)).toBe(true);
      expect(await accounts().create(upper)).toBe(true);
      expect(await accounts().setEnabled("ABC", false)).toBe(true);
      expect(await accounts().setEnabled("Abc", false), "no such account").toBe(false);
      expectRecord(await accounts().get("ABC"), { ...upper, enabled: false }, "ABC");
      expectRecord(await accounts().get("abc"), lower, "abc, another account");
    });

    it("create returns false for an existing id (with a new username) and changes nothing", async () => {
      const first = accountRecord({ id: "same-id", username: "first" });
      await accounts().create(first);
      expect(await accounts().create(accountRecord({ id: "same-id", username: "second", roles: ["x"] }))).toBe(false);
      expectRecord(await accounts().get("same-id"), first, "first");
      expect(await accounts().findByUsername("second")).toBeNull();
      await expectUnchanged([first]);
    });

    it("create returns false for an existing username (with a new id) and changes nothing", async () => {
      const first = accountRecord({ id: "id-1", username: "taken" });
      await accounts().create(first);
      expect(await accounts().create(accountRecord({ id: "id-2", username: "taken" }))).toBe(false);
      expect(await accounts().get("id-2")).toBeNull();
      expectRecord(await accounts().findByUsername("taken"), first, "first");
      await expectUnchanged([first]);
    });

    it("text with a leading U+FEFF (and other invisible characters) reads back unchanged in every account field and finds its own record", async () => {
      const record = accountRecord({ id: "\uFEFFbom-id", username: "\uFEFFadmin", displayName: "\uFEFFAdmin\u200B", email: "\uFEFFa@example.com" });
      expect(await s.storage().accounts.create(record)).toBe(true);
      expectRecord(await s.storage().accounts.get("\uFEFFbom-id"), record, "by id");
      expectRecord(await s.storage().accounts.findByUsername("\uFEFFadmin"), record, "by username");
      expect(await s.storage().accounts.findByUsername("admin"), "the name without the BOM is another name").toBeNull();
    });

    it("list returns whole pages of 100 (the default most GetAccountList asks for): 250 accounts in creation order, at every offset", async () => {
      const records = Array.from({ length: 250 }, (_, i) => accountRecord({ id: `page-${String(i).padStart(3, "0")}`, username: `page-user-${i}` }));
      for (let i = 0; i < records.length; i += 50) expect(await s.storage().accounts.createMany(records.slice(i, i + 50))).toBeNull();
      for (const offset of [0, 100, 200]) {
        const page = await s.storage().accounts.list(offset, 100);
        expect([page.total, page.items.map((a) => a.id)], `list(${offset}, 100)`).toEqual([250, records.slice(offset, offset + 100).map((r) => r.id)]);
      }
    });

    it("createMany inserts every record and returns null", async () => {
      const batch = numbered(5).map((r, i) => ({ ...r, roles: i % 2 ? ["a", "b"] : [], email: i % 2 ? `u${i}@example.com` : null }));
      expect(await accounts().createMany(batch)).toBeNull();
      for (const r of batch) {
        expectRecord(await accounts().get(r.id), r, r.id);
        expectRecord(await accounts().findByUsername(r.username), r, r.username);
      }
      await expectUnchanged(batch);
    });

    it("createMany([]) returns null and inserts nothing", async () => {
      expect(await accounts().createMany([])).toBeNull();
      await expectUnchanged([]);
    });

    it("createMany with an id already stored returns its index and inserts none of the batch", async () => {
      const existing = accountRecord({ id: "existing", username: "existing-user" });
      await accounts().create(existing);
      const batch = [...numbered(3, "new"), accountRecord({ id: "existing", username: "fresh-name" }), ...numbered(2, "late")];
      expect(await accounts().createMany(batch)).toBe(3);
      for (const r of batch.filter((r) => r.id !== "existing")) expect(await accounts().get(r.id), r.id).toBeNull();
      expect(await accounts().findByUsername("fresh-name")).toBeNull();
      await expectUnchanged([existing]);
    });

    it("createMany with a username already stored returns its index and inserts none of the batch", async () => {
      const existing = accountRecord({ id: "existing", username: "existing-user" });
      await accounts().create(existing);
      const batch = [accountRecord({ id: "n0", username: "n0" }), accountRecord({ id: "n1", username: "existing-user" }), accountRecord({ id: "n2", username: "n2" })];
      expect(await accounts().createMany(batch)).toBe(1);
      for (const id of ["n0", "n1", "n2"]) expect(await accounts().get(id), id).toBeNull();
      await expectUnchanged([existing]);
    });

    it("createMany with an id repeated within the batch returns the index of the repeat and inserts nothing", async () => {
      const batch = [accountRecord({ id: "x", username: "ux" }), accountRecord({ id: "y", username: "uy" }), accountRecord({ id: "x", username: "ux2" })];
      expect(await accounts().createMany(batch)).toBe(2);
      for (const id of ["x", "y"]) expect(await accounts().get(id), id).toBeNull();
      await expectUnchanged([]);
    });

    it("createMany with a username repeated within the batch returns the index of the repeat and inserts nothing", async () => {
      const batch = [accountRecord({ id: "p", username: "dup" }), accountRecord({ id: "q", username: "q" }), accountRecord({ id: "r", username: "r" }), accountRecord({ id: "s", username: "dup" })];
      expect(await accounts().createMany(batch)).toBe(3);
      expect(await accounts().findByUsername("dup")).toBeNull();
      await expectUnchanged([]);
    });

    it("createMany returns the first conflicting index when there are several", async () => {
      const existing = accountRecord({ id: "stored", username: "stored" });
      await accounts().create(existing);
      const a = [
        accountRecord({ id: "a0", username: "a0" }),
        accountRecord({ id: "a1", username: "a1" }),
        accountRecord({ id: "a1", username: "a1-again" }), // repeats index 1
        accountRecord({ id: "a3", username: "stored" }), // conflicts with the store
      ];
      expect(await accounts().createMany(a)).toBe(2);
      const b = [
        accountRecord({ id: "b0", username: "b0" }),
        accountRecord({ id: "stored", username: "b1" }), // conflicts with the store
        accountRecord({ id: "b0", username: "b2" }), // repeats index 0
      ];
      expect(await accounts().createMany(b)).toBe(1);
      await expectUnchanged([existing]);
    });

    it("a refused createMany leaves none of its ids or usernames taken: each record before the conflict can be created on its own after", async () => {
      const taken = accountRecord({ id: "taken", username: "taken" });
      const fresh = [accountRecord({ id: "new-1", username: "new-1" }), accountRecord({ id: "new-2", username: "new-2" })];
      expect(await accounts().create(taken)).toBe(true);
      expect(await accounts().createMany([...fresh, accountRecord({ id: "x", username: "taken" })])).toBe(2);
      for (const r of fresh) expect(await accounts().create(r), r.id).toBe(true);
      expect(await accounts().createMany([accountRecord({ id: "new-3", username: "new-3" }), accountRecord({ id: "taken", username: "y" })])).toBe(1);
      expect(await accounts().createMany([accountRecord({ id: "new-3", username: "new-3" })]), "new-3 after its refused batch").toBeNull();
      await expectUnchanged([taken, ...fresh, accountRecord({ id: "new-3", username: "new-3" })]);
    });

    it("createMany treats usernames that differ only in case as different", async () => {
      const batch = [accountRecord({ id: "c1", username: "bob" }), accountRecord({ id: "c2", username: "Bob" }), accountRecord({ id: "c3", username: "BOB" })];
      expect(await accounts().createMany(batch)).toBeNull();
      await expectUnchanged(batch);
    });

    it("setEnabled changes only `enabled` and returns true", async () => {
      const record = accountRecord({ id: "toggle", username: "toggle", roles: ["r"], email: "t@example.com" });
      const other = accountRecord({ id: "other", username: "other" });
      await accounts().create(record);
      await accounts().create(other);
      expect(await accounts().setEnabled("toggle", false)).toBe(true);
      expectRecord(await accounts().get("toggle"), { ...record, enabled: false }, "disabled");
      expectRecord(await accounts().findByUsername("toggle"), { ...record, enabled: false }, "disabled by username");
      expect(await accounts().setEnabled("toggle", false)).toBe(true); // already disabled: still present
      expectRecord(await accounts().get("toggle"), { ...record, enabled: false }, "still disabled");
      expect(await accounts().setEnabled("toggle", true)).toBe(true);
      expectRecord(await accounts().get("toggle"), record, "re-enabled");
      expectRecord(await accounts().get("other"), other, "other account");
    });

    it("setEnabled returns false for an absent account and creates nothing", async () => {
      expect(await accounts().setEnabled("ghost", true)).toBe(false);
      expect(await accounts().get("ghost")).toBeNull();
      await expectUnchanged([]);
    });

    it("list on an empty store is an empty page with total 0", async () => {
      const page = await accounts().list(0, 20);
      expect(page.items).toEqual([]);
      expect(page.total).toBe(0);
    });

    it("list is in creation order (not id, createdAt, numeric or locale order) and returns exact records", async () => {
      const ids = ["a", "\u4e2d", "B", "a_b", "_", "9", "\u03a9", "aB", "-", "Z", "ab", "\u00e9", "0", "a-b", "~"];
      // createdAt runs backwards, so neither id nor createdAt order is creation order.
      const records = ids.map((id, i) => accountRecord({ id, username: `u${i}`, roles: i % 3 ? [] : ["r1", "r0"], createdAt: T0 - i }));
      for (const r of records) expect(await accounts().create(r)).toBe(true);
      const page = await accounts().list(0, 100);
      expect(page.total).toBe(ids.length);
      expect(page.items.map((a) => a.id)).toEqual(ids);
      expectRecords(page.items, records, "listed accounts");
    });

    it("list(offset, limit) returns the window of the creation order, with the full total", async () => {
      const records = shuffled(numbered(12));
      for (const r of records) await accounts().create(r);
      for (const [offset, limit] of [[0, 5], [2, 3], [5, 5], [10, 5], [11, 1], [0, 12], [0, 100]] as const) {
        const page = await accounts().list(offset, limit);
        expect(page.total, `total at list(${offset}, ${limit})`).toBe(12);
        expectRecords(page.items, records.slice(offset, offset + limit), `list(${offset}, ${limit})`);
      }
    });

    it("list with an offset at or past the end returns [] with the total", async () => {
      for (const r of numbered(3)) await accounts().create(r);
      for (const offset of [3, 4, 100, 1_000_000]) {
        const page = await accounts().list(offset, 20);
        expect(page.items, `list(${offset}, 20)`).toEqual([]);
        expect(page.total, `total at list(${offset}, 20)`).toBe(3);
      }
    });

    it("walking every page of 47 accounts sees each account exactly once, in creation order, for any page size", async () => {
      const records = shuffled(numbered(47));
      // Mixed writes: single creates, batches, and refused writes in between.
      for (const r of records.slice(0, 10)) expect(await accounts().create(r)).toBe(true);
      expect(await accounts().createMany(records.slice(10, 30))).toBeNull();
      expect(await accounts().create(accountRecord({ id: records[3]!.id, username: "refused" }))).toBe(false);
      expect(await accounts().createMany([accountRecord({ id: "never", username: "never" }), records[0]!])).toBe(1);
      for (const r of records.slice(30, 40)) expect(await accounts().create(r)).toBe(true);
      expect(await accounts().createMany(records.slice(40))).toBeNull();
      const expectedIds = records.map((r) => r.id);
      for (const size of [1, 5, 10, 46, 47, 48, 100]) {
        const seen: string[] = [];
        for (let offset = 0; ; offset += size) {
          const page = await accounts().list(offset, size);
          expect(page.total, `total with page size ${size}`).toBe(47);
          seen.push(...page.items.map((a) => a.id));
          expect(page.items.length, `page at offset ${offset} of size ${size}`).toBe(Math.max(0, Math.min(size, 47 - offset)));
          if (page.items.length < size) break;
        }
        expect(seen, `ids walked with page size ${size}`).toEqual(expectedIds);
      }
    });

    it("the listing reflects setEnabled and later inserts without reordering others", async () => {
      for (const r of [accountRecord({ id: "m", username: "m" }), accountRecord({ id: "c", username: "c" })]) await accounts().create(r);
      await accounts().setEnabled("m", false);
      await accounts().create(accountRecord({ id: "f", username: "f" }));
      const page = await accounts().list(0, 10);
      expect(page.items.map((a) => [a.id, a.enabled])).toEqual([["m", false], ["c", true], ["f", true]]);
      expect(page.total).toBe(3);
    });

    it("createMany keeps the order of its input and appends after earlier accounts; later creates follow it", async () => {
      const first = accountRecord({ id: "zz-first", username: "first" });
      await accounts().create(first);
      const batch = shuffled(numbered(9, "batch"));
      expect(await accounts().createMany(batch)).toBeNull();
      const last = accountRecord({ id: "00-last", username: "last" });
      await accounts().create(last);
      await expectUnchanged([first, ...batch, last]);
      expectRecords((await accounts().list(4, 3)).items, batch.slice(3, 6), "list(4, 3)");
    });

    it("a refused createMany takes no places: the next accounts follow on without a gap", async () => {
      const a = accountRecord({ id: "a", username: "a" });
      await accounts().create(a);
      expect(await accounts().createMany([...numbered(5, "gone"), accountRecord({ id: "a", username: "dup" })])).toBe(5);
      const b = accountRecord({ id: "b", username: "b" });
      expect(await accounts().create(b)).toBe(true);
      expect(await accounts().createMany(numbered(2, "c"))).toBeNull();
      const expected = [a, b, ...numbered(2, "c")];
      await expectUnchanged(expected);
      for (const [i, r] of expected.entries()) expectRecords((await accounts().list(i, 1)).items, [r], `list(${i}, 1)`);
      expect((await accounts().list(expected.length, 1)).items).toEqual([]);
    });

    it("total is exact after every operation, refused ones included", async () => {
      const total = async () => (await accounts().list(0, 1)).total;
      expect(await total()).toBe(0);
      await accounts().create(accountRecord({ id: "t1", username: "t1" }));
      expect(await total()).toBe(1);
      expect(await accounts().create(accountRecord({ id: "t1", username: "other" }))).toBe(false);
      expect(await total()).toBe(1);
      expect(await accounts().create(accountRecord({ id: "other", username: "t1" }))).toBe(false);
      expect(await total()).toBe(1);
      expect(await accounts().createMany(numbered(4))).toBeNull();
      expect(await total()).toBe(5);
      expect(await accounts().createMany([accountRecord({ id: "t9", username: "t9" }), accountRecord({ id: "t1", username: "t10" })])).toBe(1);
      expect(await total()).toBe(5);
      expect(await accounts().createMany([])).toBeNull();
      expect(await total()).toBe(5);
      await accounts().setEnabled("t1", false);
      expect(await total()).toBe(5);
      expect((await accounts().list(5, 20)).total).toBe(5);
      expect((await accounts().list(1_000, 20)).total).toBe(5);
    });

    it("stores copies: mutating the record passed to create, or one returned, changes nothing stored", async () => {
      const record = accountRecord({ id: "iso", username: "iso", roles: ["a"] });
      const expected = structuredClone(record);
      await accounts().create(record);
      record.roles.push("mutated");
      record.username = "mutated";
      (await accounts().get("iso"))!.roles.push("mutated");
      (await accounts().findByUsername("iso"))!.roles.push("mutated");
      (await accounts().list(0, 1)).items[0]!.roles.push("mutated");
      expectRecord(await accounts().get("iso"), expected, "account");
      expect(await accounts().findByUsername("mutated")).toBeNull();
      const batch = [accountRecord({ id: "iso2", username: "iso2", roles: ["b"] })];
      const batchExpected = structuredClone(batch);
      await accounts().createMany(batch);
      batch[0]!.roles.push("mutated");
      expectRecord(await accounts().get("iso2"), batchExpected[0]!, "batch account");
    });
  });

  /**
   * `accounts.setPasswordHash(id, expected, replacement)` (optional in the type, added 2026-12-01:
   * without it core cannot store a hash at today's cost after a sign-in, and hashes keep the cost
   * they were made with). Each case fails until it is there.
   */
  describe("accounts.setPasswordHash", { timeout: RACES_TIMEOUT }, () => {
    type WithRehash = Required<Pick<AccountStore, "setPasswordHash">> & AccountStore;
    const rehashing = (store: AccountStore = s.storage().accounts): WithRehash => {
      if (typeof store.setPasswordHash !== "function") {
        throw new Error("accounts.setPasswordHash is missing: without it password hashes keep the cost they were made with (see the README's storage section)");
      }
      return store as WithRehash;
    };

    it("replaces the hash only while it is still the expected one, changes nothing else, and returns true; the old hash as expected then returns false", async () => {
      const record = accountRecord({ id: "rehash", username: "rehash", roles: ["r"], email: "r@example.com", displayName: "Re Hash" });
      const other = accountRecord({ id: "other", username: "other" });
      await s.storage().accounts.create(record);
      await s.storage().accounts.create(other);
      const replacement = "$pbkdf2-sha256$i=600000,l=32$bmV3LXNhbHQtMTIzNDU2Nw$bmV3LWhhc2gtMDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlh";
      expect(await rehashing().setPasswordHash("rehash", record.passwordHash, replacement)).toBe(true);
      const expected = { ...record, passwordHash: replacement };
      expectRecord(await s.storage().accounts.get("rehash"), expected, "rehashed");
      expectRecord(await s.storage().accounts.findByUsername("rehash"), expected, "rehashed, by username");
      const page = await s.storage().accounts.list(0, 10);
      expectRecords(page.items, [expected, other], "listing");
      expect(page.total, "total").toBe(2);
      expect(await rehashing().setPasswordHash("rehash", record.passwordHash, "$pbkdf2-sha256$i=1,l=32$c3RhbGU$c3RhbGU")).toBe(false);
      expectRecord(await s.storage().accounts.get("rehash"), expected, "kept after a stale compare");
      expectRecord(await s.storage().accounts.get("other"), other, "other account");
    });

    it("returns false for an absent account and creates nothing", async () => {
      expect(await rehashing().setPasswordHash("ghost", "x", "y")).toBe(false);
      expect(await s.storage().accounts.get("ghost")).toBeNull();
      expect((await s.storage().accounts.list(0, 10)).total).toBe(0);
    });

    it("30 concurrent calls with the same expected hash and distinct replacements (two instances where the target gives connect), 5 rounds: exactly one returns true and its hash is stored", async () => {
      await withOtherInstance(s, async (other) => {
        const stores = [rehashing(), rehashing(other.accounts)];
        const record = accountRecord({ id: "raced", username: "raced" });
        await s.storage().accounts.create(record);
        let current = record.passwordHash;
        for (let round = 0; round < 5; round++) {
          const replacements = Array.from({ length: 30 }, (_, i) => `$pbkdf2-sha256$i=1000,l=32$cm91bmQ${round}$cmFjZXI${String(i).padStart(2, "0")}`);
          const from = current;
          const results = await inParallel(30, (i) => stores[i % 2]!.setPasswordHash("raced", from, replacements[i]!));
          expect(results.filter(Boolean), `round ${round}: exactly one call returned true`).toHaveLength(1);
          current = replacements[results.indexOf(true)]!;
          expectRecord(await s.storage().accounts.get("raced"), { ...record, passwordHash: current }, `round ${round}: the winner's hash`);
          expectRecord(await other.accounts.findByUsername("raced"), { ...record, passwordHash: current }, `round ${round}: seen by the other instance`);
        }
      });
    });
  });
}
