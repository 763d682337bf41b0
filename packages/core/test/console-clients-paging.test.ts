/**
 * The console's clients view pages by cursor (`GET /console/api/clients?limit=&after=`): whole
 * bodies of each page, the default and largest page, the 400s for bad parameters, and that a page
 * reads only its own clients from a store with `listPage` (before, every call read every client)
 * and the same pages from one without it (the fallback over `list()`).
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createMemoryStorage, UnstorableValueError, type ClientRecord, type ClientStore, type PlantgateOptions, type Storage } from "../src/index.js";
import { call, consoleHarness, read, signIn } from "./console-helpers.js";

const T0 = "2026-01-01T00:00:00.000Z";
const ALL_GRANTS = ["client_credentials", "password", "refresh_token"];
const ALL_SCOPES = ["Platform_UserAPIs", "Platform_AllAppsServerCommands", "offline_access"];

/** What the API shows of a client the admin API created with defaults at T0. */
const shown = (clientId: string, name = clientId) => ({
  clientId,
  name,
  grantTypes: ALL_GRANTS,
  scopes: ALL_SCOPES,
  accessTokenTtl: null,
  refreshTokenTtl: null,
  refreshTokenAbsoluteTtl: null,
  createdAt: T0,
  secretUpdatedAt: T0,
  authMethod: "client_secret",
  secrets: [{ id: expect.stringMatching(/^[\w-]{12}$/), createdAt: T0, expiresAt: null, lastUsedAt: null, expired: false }],
  jwksUri: null,
});

const ok = (body: unknown) => ({ status: 200, body, cacheControl: "no-store", setCookie: null, contentType: "application/json" });
const bad = (message: string) => ({ status: 400, body: { error: 1009, message }, cacheControl: "no-store", setCookie: null, contentType: "application/json" });

/** A memory store that counts the calls of its clients' list() and listPage(). */
function countingStorage(withListPage = true) {
  const memory = createMemoryStorage();
  const calls = { list: 0, listPage: 0 };
  const { listPage, ...rest } = memory.clients;
  const clients: ClientStore = {
    ...rest,
    list: () => {
      calls.list++;
      return memory.clients.list();
    },
    ...(withListPage
      ? {
          listPage: (after: string | null, limit: number) => {
            calls.listPage++;
            return listPage!(after, limit);
          },
        }
      : {}),
  };
  const storage: Storage = { ...memory, clients };
  return { storage, calls };
}

async function setup(options: PlantgateOptions = {}, ids: string[] = []) {
  const h = await consoleHarness(options);
  for (const clientId of ids) await h.app.admin.createClient({ clientId });
  const root = await signIn(h.app);
  const get = async (query: string) => read(await call(h.app, "GET", `/api/clients${query}`, { cookie: root.cookie }));
  return { ...h, get };
}

// With app-1 from the harness: ids in code-unit order are "App-0", "app-1", "app-2", "b", "c".
const IDS = ["c", "app-2", "b", "App-0"];

describe("console API: clients are paged by cursor", () => {
  it("limit=2 walks the clients in client-id order, two at a time; next is null on the last page", async () => {
    const h = await setup({}, IDS);
    expect(await h.get("?limit=2")).toEqual(ok({ clients: [shown("App-0"), shown("app-1")], next: cursorOf("app-1") }));
    expect(await h.get(`?limit=2&after=${cursorOf("app-1")}`)).toEqual(ok({ clients: [shown("app-2"), shown("b")], next: cursorOf("b") }));
    expect(await h.get(`?limit=2&after=${cursorOf("b")}`)).toEqual(ok({ clients: [shown("c")], next: null }));
    // A last page that is exactly full says so: no cursor to an empty page.
    expect(await h.get(`?limit=1&after=${cursorOf("b")}`)).toEqual(ok({ clients: [shown("c")], next: null }));
    // A cursor past the end, or of a client deleted meanwhile, is no error.
    expect(await h.get(`?after=${cursorOf("zzz")}`)).toEqual(ok({ clients: [], next: null }));
    await h.app.admin.deleteClient("app-2");
    expect(await h.get(`?limit=2&after=${cursorOf("app-2")}`)).toEqual(ok({ clients: [shown("b"), shown("c")], next: null }));
    // Empty parameters are absent ones (the page's form sends none, a script may).
    expect(await h.get("?limit=&after=")).toEqual(ok({ clients: [shown("App-0"), shown("app-1"), shown("b"), shown("c")], next: null }));
  });

  it("50 a page by default, up to 200 on request", async () => {
    const ids = Array.from({ length: 250 }, (_, i) => `c-${String(i).padStart(3, "0")}`);
    const h = await setup({}, ids);
    const all = ["app-1", ...ids];
    const first = (await h.get("")).body as { clients: { clientId: string }[]; next: string | null };
    expect([first.clients.map((c) => c.clientId), first.next]).toEqual([all.slice(0, 50), cursorOf(all[49]!)]);
    const big = (await h.get("?limit=200")).body as { clients: { clientId: string }[]; next: string | null };
    expect([big.clients.map((c) => c.clientId), big.next]).toEqual([all.slice(0, 200), cursorOf(all[199]!)]);
    const rest = (await h.get(`?limit=200&after=${big.next}`)).body as { clients: { clientId: string }[]; next: string | null };
    expect([rest.clients.map((c) => c.clientId), rest.next]).toEqual([all.slice(200), null]);
  });

  it("a bad limit or cursor, or one given twice, is 400 1009 with the reason", async () => {
    const h = await setup({}, IDS);
    const limit = bad("limit must be an integer from 1 to 200.");
    for (const q of ["?limit=0", "?limit=201", "?limit=-1", "?limit=1.5", "?limit=ten", "?limit=1e2", "?limit=99999", "?limit=%201", "?limit=2&limit=3"]) {
      expect(await h.get(q), q).toEqual(q.includes("&limit") ? bad("limit must be given at most once.") : limit);
    }
    expect(await h.get("?after=a&after=b")).toEqual(bad("after must be given at most once."));
    // A client id is no cursor (it was until 2026-11-30); see the opaque cursor's cases below.
    expect(await h.get("?after=b")).toEqual(bad("after must be the next cursor of a previous page."));
    // The cursor of a 200-character id, the longest the admin API makes.
    expect(await h.get(`?after=${cursorOf("x".repeat(200))}`)).toEqual(ok({ clients: [], next: null }));
  });

  it("a bad limit is refused before the cursor is read, as before the opaque cursor: the limit's reason, and no store read", async () => {
    const { storage, calls } = countingStorage();
    const h = await setup({ storage }, IDS);
    calls.list = 0;
    const limit = bad("limit must be an integer from 1 to 200.");
    // A long id's cursor is looked up in the store (listPage) before its page is read.
    expect(await h.get(`?limit=201&after=${cursorOf("b" + "\u00e9".repeat(600))}`)).toEqual(limit);
    expect(await h.get("?limit=201&after=b")).toEqual(limit);
    expect(calls).toEqual({ list: 0, listPage: 0 });
  });

  it("a page reads only its clients through listPage, never the whole list", async () => {
    const { storage, calls } = countingStorage();
    const h = await setup({ storage }, IDS);
    calls.list = 0;
    const pages: string[][] = [];
    for (let after: string | null = null; ; ) {
      const r = (await h.get(`?limit=2${after === null ? "" : `&after=${after}`}`)).body as { clients: { clientId: string }[]; next: string | null };
      pages.push(r.clients.map((c) => c.clientId));
      after = r.next;
      if (after === null || pages.length >= 10) break;
    }
    expect(pages).toEqual([["App-0", "app-1"], ["app-2", "b"], ["c"]]);
    expect(calls).toEqual({ list: 0, listPage: 3 });
  });

  it("a store without listPage (written before it) gets the same pages, cut from list()", async () => {
    const { storage, calls } = countingStorage(false);
    const h = await setup({ storage }, IDS);
    expect(typeof storage.clients.listPage).toBe("undefined");
    expect(await h.get("?limit=2")).toEqual(ok({ clients: [shown("App-0"), shown("app-1")], next: cursorOf("app-1") }));
    expect(await h.get(`?limit=2&after=${cursorOf("app-1")}`)).toEqual(ok({ clients: [shown("app-2"), shown("b")], next: cursorOf("b") }));
    expect(await h.get(`?limit=2&after=${cursorOf("b")}`)).toEqual(ok({ clients: [shown("c")], next: null }));
    expect(await h.get(`?after=${cursorOf("bb")}`)).toEqual(ok({ clients: [shown("c")], next: null }));
    expect(calls.list).toBeGreaterThanOrEqual(4);
  });

  it("a store without listPage whose list() orders by code point (a SQL binary collation) still shows every client once, by the fallback's own code-unit order", async () => {
    // Ids written straight into the store (the admin API makes printable ASCII only): beside a
    // character past U+FFFF, one of U+E000-U+FFFF sorts first by code unit and last by code point.
    const sprout = "\u{1F331}-sprout";
    const fullwidth = "\uFF21pp";
    const { storage } = countingStorage(false);
    const byCodePoint = (a: string, b: string) => {
      const [x, y] = [[...a].map((c) => c.codePointAt(0)!), [...b].map((c) => c.codePointAt(0)!)];
      for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
      return x.length - y.length;
    };
    const listed = storage.clients.list;
    storage.clients.list = async () => (await listed()).sort((a, b) => byCodePoint(a.clientId, b.clientId));
    const h = await setup({ storage }, ["b"]);
    const record = (await storage.clients.get("b"))!;
    for (const clientId of [sprout, fullwidth]) expect(await storage.clients.create({ ...record, clientId })).toBe(true);
    const walked: string[] = [];
    for (let after: string | null = null; walked.length < 10; ) {
      const page: { clients: { clientId: string }[]; next: string | null } = await h.app.admin.listClientsPage({ after, limit: 1 });
      walked.push(...page.clients.map((c) => c.clientId));
      if (page.next === null) break;
      after = page.next;
    }
    // Until 2026-12-01 the fallback cut list()'s order with a code-unit `>`: after "\uFF21pp" (last
    // by code point) nothing was left, and the page walk never showed the sprout.
    expect(walked).toEqual(["app-1", "b", sprout, fullwidth]);
  });

  it("the memory store refuses a client id with a lone surrogate, as the SQL stores do, so every page walk (admin's and the console's) sees every client", async () => {
    const h = await setup({}, IDS);
    const record = (await h.storage.clients.get("b"))!;
    // Held until 2026-11-30: admin.listClientsPage ended at the page it closed (its next call
    // refused the cursor it had handed out), and the console's UTF-8 cursor skipped past "a\uFFFD".
    for (const clientId of ["a\uD800b", "app-1\uDC00"]) {
      const refused = await h.storage.clients.create({ ...record, clientId }).then(
        () => null,
        (e: unknown) => e,
      );
      expect([refused instanceof UnstorableValueError, refused instanceof TypeError, (refused as Error).name, (refused as Error).message]).toEqual([
        true,
        true,
        "UnstorableValueError",
        "clientId contains a lone UTF-16 surrogate, which no store holds exactly",
      ]);
    }
    const walked: string[] = [];
    for (let after: string | null = null; ; ) {
      const page: { clients: { clientId: string }[]; next: string | null } = await h.app.admin.listClientsPage({ after, limit: 1 });
      walked.push(...page.clients.map((c) => c.clientId));
      if (page.next === null) break;
      after = page.next;
    }
    const ALL = ["App-0", "app-1", "app-2", "b", "c"];
    expect(walked).toEqual(ALL);
    const pages: unknown[] = [];
    for (let query = "?limit=2"; ; ) {
      const answer = await h.get(query);
      pages.push(answer);
      const next = (answer.body as { next: string | null }).next;
      if (next === null) break;
      query = `?limit=2&after=${next}`;
    }
    expect(pages).toEqual([
      ok({ clients: [shown("App-0"), shown("app-1")], next: cursorOf("app-1") }),
      ok({ clients: [shown("app-2"), shown("b")], next: cursorOf("b") }),
      ok({ clients: [shown("c")], next: null }),
    ]);
  });

  it("app.admin.listClientsPage pages the same way, up to 1000 a page, and refuses a bad limit or cursor", async () => {
    const h = await setup({}, IDS);
    const page = await h.app.admin.listClientsPage({ limit: 3 });
    expect([page.clients.map((c) => c.clientId), page.next]).toEqual([["App-0", "app-1", "app-2"], "app-2"]);
    expect(JSON.stringify(page)).not.toContain("hash");
    const rest = await h.app.admin.listClientsPage({ after: page.next, limit: 1000 });
    expect([rest.clients.map((c) => c.clientId), rest.next]).toEqual([["b", "c"], null]);
    expect((await h.app.admin.listClientsPage()).clients).toHaveLength(5);
    await expect(h.app.admin.listClientsPage({ limit: 1001 })).rejects.toThrow("limit must be an integer from 1 to 1000");
    await expect(h.app.admin.listClientsPage({ after: "a\ud800" })).rejects.toThrow("after must be the next cursor of a previous page");
    // The empty id and one holding U+0000 are cursors too (ids written straight into a store:
    // refused until 2026-11-30, a list stopped there): "" before every id, "b\0" between "b" and "c".
    const afterEmpty = await h.app.admin.listClientsPage({ after: "", limit: 1 });
    expect([afterEmpty.clients.map((c) => c.clientId), afterEmpty.next]).toEqual([["App-0"], "App-0"]);
    const afterNul = await h.app.admin.listClientsPage({ after: "b\u0000" });
    expect([afterNul.clients.map((c) => c.clientId), afterNul.next]).toEqual([["c"], null]);
    // Any stored id is a cursor it takes back, however long (one written straight into a store can
    // be longer than the console's URL bound): until 2026-11-30 over 1000 characters was refused.
    const past = await h.app.admin.listClientsPage({ after: "app-1" + "~".repeat(20_000), limit: 2 });
    expect([past.clients.map((c) => c.clientId), past.next]).toEqual([["app-2", "b"], "b"]);
  });
});

/** The console's cursor for a client id, written out independently of core: see listClients in console/api.ts. */
function cursorOf(id: string): string {
  const bytes = Buffer.from(id, "utf8");
  if (bytes.length <= 512) return "i" + bytes.toString("base64url");
  let prefix = "";
  let size = 0;
  for (const ch of id) {
    const n = Buffer.byteLength(ch, "utf8");
    if (size + n > 512) break;
    prefix += ch;
    size += n;
  }
  return "h" + Buffer.from(prefix, "utf8").toString("base64url") + "." + createHash("sha256").update(id, "utf8").digest("base64url");
}

/** A client as an operator writes it straight into the store (no admin API check). */
const byHand = (clientId: string): ClientRecord => ({
  clientId,
  authMethod: "client_secret",
  secrets: [],
  jwks: null,
  jwksUri: null,
  name: "by hand",
  grantTypes: ["client_credentials"],
  scopes: [],
  accessTokenTtl: null,
  refreshTokenTtl: null,
  refreshTokenAbsoluteTtl: null,
  createdAt: Date.parse(T0),
  secretUpdatedAt: Date.parse(T0),
});

describe("console API: an opaque cursor, bounded whatever the id", () => {
  // Ids no create makes, written straight into the store: 1500 and 20,000 characters (two sharing
  // their first 512 UTF-8 bytes), U+0000 and the empty id.
  const LONG = ["app-1" + "~".repeat(1500), "b" + "\u00e9".repeat(20_000), "b" + "\u00e9".repeat(20_000) + "x", "b\u0000", ""];

  async function withLongIds() {
    const h = await setup({}, IDS);
    for (const id of LONG) expect(await h.storage.clients.create(byHand(id))).toBe(true);
    const all = (await h.storage.clients.list()).map((c) => c.clientId);
    expect(all).toEqual(["", "App-0", "app-1", LONG[0], "app-2", "b", "b\u0000", LONG[1], LONG[2], "c"]);
    return { h, all };
  }

  it("pages past ids of any length (and U+0000, and the empty id) at every page size: each client once, every cursor at most 728 URL-safe characters", async () => {
    const { h, all } = await withLongIds();
    for (let limit = 1; limit <= all.length; limit++) {
      const seen: string[] = [];
      const cursors: string[] = [];
      for (let after: string | null = null; ; ) {
        const r = await h.get(`?limit=${limit}${after === null ? "" : `&after=${after}`}`);
        expect(r.status, `limit ${limit} after ${after?.slice(0, 40)}`).toBe(200);
        const body = r.body as { clients: { clientId: string }[]; next: string | null };
        seen.push(...body.clients.map((c) => c.clientId));
        if ((after = body.next) === null || cursors.length > all.length) break;
        cursors.push(after);
      }
      expect(seen, `limit ${limit}`).toEqual(all);
      // Each cursor is its page's last id, encoded: the id itself (base64url of its UTF-8) up to 512
      // bytes, else its first 512 bytes and its SHA-256.
      expect(cursors, `limit ${limit}`).toEqual(all.filter((_, i) => (i + 1) % limit === 0 && i + 1 < all.length).map(cursorOf));
      for (const c of cursors) expect(c).toMatch(/^(i[\w-]{0,683}|h[\w-]{679,683}\.[\w-]{43})$/);
    }
    expect(cursorOf(LONG[0]!).length).toBe(728);
    expect(await h.get("?limit=2")).toEqual(ok({ clients: [expect.objectContaining({ clientId: "" }), shown("App-0")], next: cursorOf("App-0") }));
  });

  it("a long id deleted between two pages: the next page starts at the first id sharing its first 512 bytes (those before it shown again, none missed)", async () => {
    const { h } = await withLongIds();
    expect(await h.storage.clients.delete(LONG[2]!)).toBe(true);
    const r = (await h.get(`?limit=2&after=${cursorOf(LONG[2]!)}`)).body as { clients: { clientId: string }[]; next: string | null };
    expect([r.clients.map((c) => c.clientId), r.next]).toEqual([[LONG[1], "c"], null]);
    // The one before it in the block still pages on exactly.
    const s = (await h.get(`?limit=2&after=${cursorOf(LONG[1]!)}`)).body as { clients: { clientId: string }[]; next: string | null };
    expect([s.clients.map((c) => c.clientId), s.next]).toEqual([["c"], null]);
  });

  it("a cursor the API did not hand out is 400 1009: a client id as such (the form before 2026-11-30), bad base64url, bytes that are no UTF-8, a prefix too short or too long, past the bound", async () => {
    const h = await setup({}, IDS);
    const cursor = bad("after must be the next cursor of a previous page.");
    const b64 = (bytes: Buffer) => bytes.toString("base64url");
    const digest = "A".repeat(43);
    for (const q of [
      "app-1",
      "i%2B",
      "i" + b64(Buffer.from([0xff])),
      "i" + b64(Buffer.alloc(513, 0x61)),
      "h" + b64(Buffer.alloc(100, 0x61)) + "." + digest,
      "h" + b64(Buffer.alloc(513, 0x61)) + "." + digest,
      "h" + b64(Buffer.alloc(512, 0x61)) + "." + digest.slice(1),
      "x".repeat(729),
    ]) {
      expect(await h.get(`?after=${q}`), q.slice(0, 30)).toEqual(cursor);
    }
    // A well-formed cursor of an id that is not there is no error (a client deleted meanwhile).
    expect(await h.get(`?after=${cursorOf("bb")}`)).toEqual(ok({ clients: [shown("c")], next: null }));
    expect(await h.get(`?after=${cursorOf("zz" + "~".repeat(600))}`)).toEqual(ok({ clients: [], next: null }));
  });
});
