/**
 * GET /rbac/ServerCommand/GetAccountList?page=&pageSize=: body {accounts, page, pageSize, total, totalPages};
 * page >= 1 (default 1), pageSize 1..100 (default 20); anything else 400 {error, message}; a page past
 * the end is 200 with an empty list; the order is creation order (oldest first), stable, so walking all
 * pages sees each account once.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, StorageError, type AccountView, type Storage } from "../src/index.js";
import { clientToken, harness, type Harness } from "./helpers.js";
import { getAccounts, read } from "./api-helpers.js";

let h: Harness;
let token: string;
let alice: AccountView;

beforeEach(async () => {
  h = await harness();
  token = await clientToken(h, "Platform_UserAPIs");
  const record = (await h.app.storage.accounts.findByUsername("alice"))!;
  alice = {
    id: record.id,
    username: "alice",
    displayName: "Alice",
    email: null,
    roles: [],
    enabled: true,
    createdAt: "2026-01-01T00:00:00.000Z",
  };
});

const list = async (query = "") => read(await getAccounts(h.app, token, query));

/** Adds accounts until there are `total` in all (alice included); returns every account view, alice first. */
async function populate(total: number): Promise<AccountView[]> {
  const views: AccountView[] = [alice];
  for (let i = 1; i < total; i++) {
    h.clock.advance(1_000);
    views.push(await h.app.admin.createAccount({ username: `user-${String(i).padStart(2, "0")}`, password: `pw-${i}-long-enough` }));
  }
  return views;
}

const byId = (a: AccountView, b: AccountView) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

type Page = { accounts: AccountView[]; page: number; pageSize: number; total: number; totalPages: number };

describe("GetAccountList body", () => {
  it("defaults to page 1 and pageSize 20 and has the documented shape", async () => {
    const r = await list();
    expect(r.status).toBe(200);
    expect(r.contentType).toBe("application/json");
    expect(r.body).toEqual({ accounts: [alice], page: 1, pageSize: 20, total: 1, totalPages: 1 });
  });

  it("shows every public field of an account, with createdAt as ISO 8601", async () => {
    h.clock.advance(86_400_000 + 1_234);
    const bob = await h.app.admin.createAccount({
      username: "bob",
      password: "builder-long-pw",
      displayName: "Bob B.",
      email: "bob@example.test",
      roles: ["admin", "auditor"],
      enabled: false,
    });
    token = await clientToken(h, "Platform_UserAPIs"); // the first one expired with the day that passed
    const r = await list();
    expect(r.status).toBe(200);
    expect((r.body as Page).accounts).toEqual(
      [alice, { id: bob.id, username: "bob", displayName: "Bob B.", email: "bob@example.test", roles: ["admin", "auditor"], enabled: false, createdAt: "2026-01-02T00:00:01.234Z" }],
    );
    for (const a of (r.body as Page).accounts) expect(Object.keys(a).sort()).toEqual(["createdAt", "displayName", "email", "enabled", "id", "roles", "username"]);
  });

  it("never contains a password or a password hash", async () => {
    await h.app.admin.createAccount({ username: "carol", password: "carol-secret-pw" });
    const r = await list();
    expect(r.status).toBe(200);
    expect(r.text).not.toMatch(/password|hash|pbkdf2|\$/i);
    expect(r.text).not.toContain("wonderland-42");
    expect(r.text).not.toContain("carol-secret-pw");
  });

  it("is not cacheable", async () => {
    const res = await getAccounts(h.app, token);
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("with no accounts at all: empty list, total 0, totalPages 0", async () => {
    const app = createPlantgate({ clock: h.clock.now, logger: { error() {}, warn() {} } });
    await app.admin.createClient({ clientId: "solo", clientSecret: "solo-secret-1234567890" });
    const empty: Harness = { ...h, app, clientId: "solo", clientSecret: "solo-secret-1234567890" };
    const r = await read(await getAccounts(app, await clientToken(empty)));
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ accounts: [], page: 1, pageSize: 20, total: 0, totalPages: 0 });
  });
});

describe("GetAccountList parameters", () => {
  const badPage = { error: 1101, message: "page must be an integer from 1 to 2147483647." };
  const badPageSize = { error: 1102, message: "pageSize must be an integer from 1 to 100." };
  const repeated = (name: string) => ({ error: 1103, message: `${name} must be given at most once.` });

  it.each([
    ["0", "page=0"],
    ["-1", "page=-1"],
    ["2.5", "page=2.5"],
    ["abc", "page=abc"],
    ["empty", "page="],
    ["01 (leading zero)", "page=01"],
    ["+1", "page=%2B1"],
    ["1 with a space", "page=%201"],
    ["1e1", "page=1e1"],
    ["0x1", "page=0x1"],
    ["2^31 (past int32)", "page=2147483648"],
    ["a huge number", `page=${"9".repeat(30)}`],
  ])("page %s -> 400 1101", async (_label, query) => {
    const r = await list(query);
    expect(r.status).toBe(400);
    expect(r.contentType).toBe("application/json");
    expect(r.body).toEqual(badPage);
  });

  it.each([
    ["0", "pageSize=0"],
    ["-1", "pageSize=-1"],
    ["2.5", "pageSize=2.5"],
    ["abc", "pageSize=abc"],
    ["empty", "pageSize="],
    ["01 (leading zero)", "pageSize=01"],
    ["101 (over the maximum)", "pageSize=101"],
    ["a huge number", `pageSize=${"9".repeat(30)}`],
  ])("pageSize %s -> 400 1102", async (_label, query) => {
    const r = await list(query);
    expect(r.status).toBe(400);
    expect(r.body).toEqual(badPageSize);
  });

  it("a repeated page or pageSize -> 400 1103, even when the values agree", async () => {
    expect((await list("page=1&page=2")).body).toEqual(repeated("page"));
    expect((await list("page=1&page=1")).body).toEqual(repeated("page"));
    expect((await list("pageSize=5&pageSize=5")).body).toEqual(repeated("pageSize"));
    expect((await list("page=1&page=2")).status).toBe(400);
  });

  it("bounds are inclusive: page 2147483647, pageSize 1 and pageSize 100 are accepted", async () => {
    expect((await list("page=2147483647&pageSize=100")).body).toEqual({ accounts: [], page: 2147483647, pageSize: 100, total: 1, totalPages: 1 });
    expect((await list("pageSize=1")).body).toEqual({ accounts: [alice], page: 1, pageSize: 1, total: 1, totalPages: 1 });
    expect((await list("pageSize=100")).body).toEqual({ accounts: [alice], page: 1, pageSize: 100, total: 1, totalPages: 1 });
  });

  it("maxPageSize and defaultPageSize options are honoured", async () => {
    const hh = await harness({ maxPageSize: 10, defaultPageSize: 5 });
    const t = await clientToken(hh);
    expect(((await read(await getAccounts(hh.app, t))).body as Page).pageSize).toBe(5);
    expect((await read(await getAccounts(hh.app, t, "pageSize=10"))).status).toBe(200);
    expect((await read(await getAccounts(hh.app, t, "pageSize=11"))).body).toEqual({ error: 1102, message: "pageSize must be an integer from 1 to 10." });
  });

  it("maxPageSize is at most 2147483647, the query's own bound; a pageSize of 10 digits within it is taken", async () => {
    await expect(harness({ maxPageSize: 2_147_483_648 })).rejects.toThrow(new TypeError("maxPageSize must be at most 2147483647"));
    const hh = await harness({ maxPageSize: 2_147_483_647 });
    const t = await clientToken(hh);
    expect((await read(await getAccounts(hh.app, t, "pageSize=2147483647"))).body).toEqual({ accounts: await hh.app.admin.listAccounts(), page: 1, pageSize: 2147483647, total: 1, totalPages: 1 });
    expect((await read(await getAccounts(hh.app, t, "pageSize=2147483648"))).body).toEqual({ error: 1102, message: "pageSize must be an integer from 1 to 2147483647." });
  });

  it("the admin listAccountsPage example walks every account on the default options", async () => {
    const hh = await harness();
    const names: string[] = [];
    for (let page = 1; ; page++) {
      const { accounts, totalPages } = await hh.app.admin.listAccountsPage({ page, pageSize: 100 });
      for (const a of accounts) names.push(a.username);
      if (page >= totalPages) break;
    }
    expect(names).toEqual(["alice"]);
  });

  it("unknown query parameters are ignored", async () => {
    expect((await list("sort=desc&foo=bar")).body).toEqual({ accounts: [alice], page: 1, pageSize: 20, total: 1, totalPages: 1 });
  });
});

describe("GetAccountList paging", () => {
  it("a page past the end -> 200 with an empty list and correct total/totalPages", async () => {
    await populate(47);
    expect((await list("page=4")).body).toEqual({ accounts: [], page: 4, pageSize: 20, total: 47, totalPages: 3 });
    expect((await list("page=1000&pageSize=7")).body).toEqual({ accounts: [], page: 1000, pageSize: 7, total: 47, totalPages: 7 });
  });

  it("walking 47 accounts with pageSize 20 sees each exactly once, in a stable order, over 3 pages", async () => {
    const all = await populate(47);
    const walk = async (pageSize: number) => {
      const seen: AccountView[] = [];
      const first = (await list(`page=1&pageSize=${pageSize}`)).body as Page;
      for (let page = 1; page <= first.totalPages; page++) {
        const r = await list(`page=${page}&pageSize=${pageSize}`);
        expect(r.status).toBe(200);
        const body = r.body as Page;
        expect({ ...body, accounts: undefined }).toEqual({ accounts: undefined, page, pageSize, total: 47, totalPages: Math.ceil(47 / pageSize) });
        expect(body.accounts.length).toBe(page < body.totalPages ? pageSize : 47 - pageSize * (body.totalPages - 1));
        seen.push(...body.accounts);
      }
      return seen;
    };
    const first = await walk(20);
    expect(first.length).toBe(47);
    expect(new Set(first.map((a) => a.id)).size).toBe(47);
    // Each account exactly once, with its full public view.
    expect([...first].sort(byId)).toEqual([...all].sort(byId));
    // Stable: a second walk gives the same sequence, and so does a walk with another page size.
    expect(await walk(20)).toEqual(first);
    expect(((await list("pageSize=20")).body as Page).totalPages).toBe(3);
    const bySeven = await walk(7);
    expect(bySeven).toEqual(first);
    expect(((await list("pageSize=7")).body as Page).totalPages).toBe(7);
    // The documented order (storage/types.ts AccountStore.list): creation order, oldest first.
    expect(first).toEqual(all);
  });
});

describe("GetAccountList when storage fails", () => {
  it("a StorageError -> 503 {error:1503} with Retry-After, nothing internal leaked", async () => {
    const storage = createMemoryStorage();
    const failing: Storage = {
      ...storage,
      accounts: {
        ...storage.accounts,
        async list() {
          throw new StorageError("pg: too many connections for role app_rw");
        },
      },
    };
    const hh = await harness({ storage: failing });
    const res = await getAccounts(hh.app, await clientToken(hh));
    expect(res.headers.get("retry-after")).toBe("5");
    const r = await read(res);
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ error: 1503, message: "The service is temporarily unavailable; retry later." });
    expect(r.text).not.toContain("app_rw");
  });
});
