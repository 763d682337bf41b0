import type { ClientRecord, ClientStore } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { byCodeUnit, clientRecord, expectRecords, inParallel, RACES_TIMEOUT, T0 } from "../fixtures.js";
import type { SuiteContext } from "../target.js";

/**
 * Client ids whose code-unit order differs from locale order, case-insensitive order and a
 * padding collation: upper case before lower case, '-' < '_', a trailing space that counts
 * ("a" < "a " < "a!"), a prefix before its extensions, Latin-1 and CJK, and a 4-byte UTF-8
 * character. No id holds U+E000-U+FFFF: beside a character past U+FFFF, UTF-16 code-unit order and
 * UTF-8 byte order (what SQL's binary collations compare) disagree on those.
 */
const IDS = ["app", "App", "APP", "a", "a ", "a!", "ab", "abc", "a-b", "a_b", "Z", "z", "~", "0", "\u00e9clair", "\u00c9clair", "e\u0301", "\u00fcber", "\u4e2d\u6587", "\u{1F331}-sprout", "\u00ff"];
const SORTED = [...IDS].sort(byCodeUnit);

/**
 * `clients.listPage(after, limit)` (optional in the type, so an older backend still runs; without
 * it core reads every client for each console page). Each case fails until it is there.
 */
export function clientPagesSuite(s: SuiteContext): void {
  describe("clients.listPage", () => {
    const store = (): Required<Pick<ClientStore, "listPage">> & ClientStore => {
      const clients = s.storage().clients;
      if (typeof clients.listPage !== "function") {
        throw new Error("clients.listPage is missing: without it every page of clients (the console's clients view) reads all clients (see the README's storage section)");
      }
      return clients as Required<Pick<ClientStore, "listPage">> & ClientStore;
    };
    const ids = (records: ClientRecord[]) => records.map((c) => c.clientId);
    /** Every id, page by page of `limit`, each page starting after the last id of the one before. */
    const walk = async (limit: number): Promise<string[][]> => {
      const pages: string[][] = [];
      let after: string | null = null;
      for (;;) {
        const page = ids(await store().listPage(after, limit));
        expect(page.length, `page ${pages.length + 1} of ${limit} holds at most ${limit}`).toBeLessThanOrEqual(limit);
        pages.push(page);
        if (page.length < limit) return pages;
        after = page[page.length - 1]!;
      }
    };
    const createAll = async (list: string[]) => {
      const records = list.map((clientId, i) => clientRecord({ clientId, name: `name of ${clientId}`, createdAt: T0 + i }));
      for (const r of records) expect(await s.storage().clients.create(r), r.clientId).toBe(true);
      return records;
    };

    it("an empty store: no page, with or without a cursor", async () => {
      expect(await store().listPage(null, 10)).toEqual([]);
      expect(await store().listPage("app", 1)).toEqual([]);
      expect(await store().listPage("", 1)).toEqual([]);
    });

    it("pages are list()'s order, by code unit (case, punctuation, a trailing space, non-ASCII), whole records", async () => {
      const records = await createAll(IDS);
      const listed = await s.storage().clients.list();
      expect(ids(listed), "list() itself").toEqual(SORTED);
      expectRecords(await store().listPage(null, 100), [...records].sort((a, b) => byCodeUnit(a.clientId, b.clientId)), "one page of all");
      for (const limit of [1, 2, 3, 5, IDS.length, IDS.length + 1]) {
        const pages = await walk(limit);
        expect(pages.flat(), `walked ${limit} at a time`).toEqual(SORTED);
        expect(pages.slice(0, -1).every((p) => p.length === limit), `every page but the last holds ${limit}`).toBe(true);
      }
    });

    it("ids where code-unit and code-point order differ (U+E000-U+FFFF beside past U+FFFF): pages walk list()'s own order, each id once (2026-12-01)", async () => {
      // A binary SQL collation orders these by code point, JavaScript by code unit; the contract
      // asks only that listPage agree with list(), as core pages by the one and sorts the other.
      const odd = ["\uFF21pp", "\u{1F331}-sprout", "\uE000", "\u{10000}", "\uFFFF", "a"];
      await createAll(odd);
      const listed = ids(await s.storage().clients.list());
      expect([...listed].sort(), "list() holds every id once").toEqual([...odd].sort());
      for (const limit of [1, 2, 4]) expect((await walk(limit)).flat(), `walked ${limit} at a time`).toEqual(listed);
    });

    it("limit 1 walks one client at a time, each page the next of list()", async () => {
      await createAll(["b", "a", "c"]);
      expect(ids(await store().listPage(null, 1))).toEqual(["a"]);
      expect(ids(await store().listPage("a", 1))).toEqual(["b"]);
      expect(ids(await store().listPage("b", 1))).toEqual(["c"]);
      expect(await store().listPage("c", 1)).toEqual([]);
    });

    it("the cursor is exclusive and need not be an id: before the first, between two, equal to one, past the last", async () => {
      await createAll(IDS);
      const after = async (cursor: string, limit = 100) => ids(await store().listPage(cursor, limit));
      expect(await after(" "), "a cursor before every id").toEqual(SORTED);
      expect(await after("a"), "after 'a': 'a ' (a trailing space counts) and on").toEqual(SORTED.slice(SORTED.indexOf("a") + 1));
      expect((await after("a"))[0]).toBe("a ");
      expect(await after("a ", 2)).toEqual(["a!", "a-b"]);
      expect(await after("ab", 1), "a prefix: its extension follows").toEqual(["abc"]);
      expect(await after("B", 3), "between two ids (APP < B < Z)").toEqual(["Z", "a", "a "]);
      expect(await after("aPP", 2), "a cursor that differs from ids only in case").toEqual(["a_b", "ab"]);
      expect(await after("\u00e9"), "a cursor inside the non-ASCII ids").toEqual(SORTED.filter((id) => id > "\u00e9"));
      expect(await after(SORTED[SORTED.length - 1]!), "after the last id").toEqual([]);
      expect(await after("\u{10FFFF}"), "a cursor past every id").toEqual([]);
    });

    it("a cursor longer than any id create makes (core passes the last stored id on, however long; 2026-11-30) is compared like any other", async () => {
      await createAll(["a", "b", "c"]);
      const long = "a" + "~".repeat(20_000);
      expect(ids(await store().listPage(long, 10)), "between 'a' and 'b'").toEqual(["b", "c"]);
      expect(ids(await store().listPage("c" + "~".repeat(20_000), 10)), "past the last").toEqual([]);
      expect(ids(await store().listPage(" ".repeat(20_000), 2)), "before the first").toEqual(["a", "b"]);
    });

    it("a cursor holding U+0000, and the empty cursor, are compared like any other (core passes on any stored id, and SQLite and MySQL hold such ids; 2026-11-30)", async () => {
      await createAll(["a", "a\u0001", "b"]);
      const after = async (cursor: string, limit = 10) => ids(await store().listPage(cursor, limit));
      expect(await after(""), "the empty cursor: before every id").toEqual(["a", "a\u0001", "b"]);
      expect(await after("\u0000"), "U+0000 alone: after '', before 'a'").toEqual(["a", "a\u0001", "b"]);
      expect(await after("a\u0000"), "'a' then U+0000: after 'a', before 'a\\u0001'").toEqual(["a\u0001", "b"]);
      expect(await after("a\u0000\uffff", 1), "U+0000 inside a cursor").toEqual(["a\u0001"]);
      expect(await after("a\u0001\u0000"), "U+0000 at the end of a cursor that extends an id").toEqual(["b"]);
      expect(await after("b\u0000"), "past the last").toEqual([]);
    });

    it("a client id holding a lone UTF-16 surrogate is refused by create (rejects with a TypeError, as storage-sql's UnstorableValueError; nothing stored): no page cursor carries one (2026-11-30)", async () => {
      await createAll(["a", "b"]);
      // A lone high surrogate, a lone low one, and both in the wrong order: none is a pair.
      for (const id of ["a\uD800b", "\uDC00", "a\uDC00\uD800"]) {
        await expect(s.storage().clients.create(clientRecord({ clientId: id })), JSON.stringify(id)).rejects.toThrow(TypeError);
        expect(await s.storage().clients.get(id), JSON.stringify(id)).toBeNull();
      }
      // A pair (one character past U+FFFF) is an id like any other.
      expect(await s.storage().clients.create(clientRecord({ clientId: "a\uD83C\uDF31" }))).toBe(true);
      expect(ids(await s.storage().clients.list())).toEqual(["a", "a\uD83C\uDF31", "b"]);
      expect(ids(await store().listPage("a", 10))).toEqual(["a\uD83C\uDF31", "b"]);
    });

    it("a cursor whose client was deleted (or never existed) goes on with the next one", async () => {
      await createAll(["a", "b", "c", "d", "e"]);
      expect(ids(await store().listPage(null, 2))).toEqual(["a", "b"]);
      expect(await s.storage().clients.delete("b")).toBe(true);
      expect(ids(await store().listPage("b", 2)), "after the deleted 'b'").toEqual(["c", "d"]);
      expect(await s.storage().clients.delete("c")).toBe(true);
      expect(ids(await store().listPage("b", 2)), "after 'b' again, 'c' gone too").toEqual(["d", "e"]);
      expect(ids(await store().listPage(null, 10))).toEqual(["a", "d", "e"]);
      expect(await s.storage().clients.create(clientRecord({ clientId: "b" }))).toBe(true);
      expect(ids(await store().listPage("a", 1)), "a client created again takes its place").toEqual(["b"]);
    });

    it("returns copies: changing a listed record changes nothing stored", async () => {
      const [record] = await createAll(["copied"]);
      const [listed] = await store().listPage(null, 1);
      listed!.scopes.push("mutated");
      listed!.secrets[0]!.hash = "mutated";
      listed!.name = "mutated";
      expectRecords(await store().listPage(null, 1), [record!], "the page read again");
    });

    it("concurrent creates while pages are walked: no page repeats or goes back, every client there before is seen, all listed after", { timeout: RACES_TIMEOUT }, async () => {
      const before = Array.from({ length: 30 }, (_, i) => `m-${String(i).padStart(2, "0")}`);
      await createAll(before);
      // Interleaved with the ids there before (m-00a sorts between m-00 and m-01), before and after them.
      const racing = Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? `a-${i}` : i % 3 === 1 ? `m-${String(i).padStart(2, "0")}a` : `z-${i}`));
      const [created, pages] = await Promise.all([
        inParallel(racing.length, (i) => s.storage().clients.create(clientRecord({ clientId: racing[i]!, createdAt: T0 + 100 + i }))),
        walk(4),
      ]);
      expect(created.every((c) => c === true), "every create succeeds").toBe(true);
      const seen = pages.flat();
      expect(seen, "strictly ascending: nothing repeated, nothing out of order").toEqual([...new Set(seen)].sort(byCodeUnit));
      expect(before.filter((id) => !seen.includes(id)), "clients there before the walk that it missed").toEqual([]);
      const all = [...before, ...racing].sort(byCodeUnit);
      expect((await walk(7)).flat(), "a walk after the creates").toEqual(all);
      expect(ids(await s.storage().clients.list()), "list() after the creates").toEqual(all);
    });
  });
}
