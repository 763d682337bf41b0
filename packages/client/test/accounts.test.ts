/** The account listing: one typed page, and the async iterator that walks every page. */
import { describe, expect, it } from "vitest";
import { accountPage, ACCOUNTS_URL, bearerOf, clientOn, fakeTokenEndpoint, newMock } from "./support.js";

/** A fake listing over `total` accounts that serves pages like the real one. */
function listing(total: number | (() => number)) {
  const fm = newMock();
  const tokens = fakeTokenEndpoint(fm);
  fm.get(
    `begin:${ACCOUNTS_URL}`,
    (call) => {
      const q = new URL(call.url).searchParams;
      const n = typeof total === "number" ? total : total();
      return { status: 200, body: accountPage(Number(q.get("page") ?? 1), Number(q.get("pageSize") ?? 20), n) };
    },
    { name: "accounts" },
  );
  return { fm, tokens };
}

describe("listAccounts", () => {
  it("sends page and pageSize and returns the typed page", async () => {
    const { fm } = listing(47);
    const page = await clientOn(fm).listAccounts({ page: 3, pageSize: 20 });
    expect(page).toEqual(accountPage(3, 20, 47));
    expect(page.accounts).toHaveLength(7);
    expect(page.accounts[0]).toEqual({
      id: "id-0040",
      username: "user-40",
      displayName: null,
      email: null,
      roles: [],
      enabled: true,
      createdAt: "2026-01-01T00:00:00.000Z",
    });
    const call = fm.callHistory.calls("accounts")[0]!;
    expect(call.url).toBe(`${ACCOUNTS_URL}?page=3&pageSize=20`);
    expect(bearerOf(call)).toBe("at-1");
  });

  it("leaves omitted parameters to the server's defaults", async () => {
    const { fm } = listing(1);
    const client = clientOn(fm);
    await client.listAccounts();
    await client.listAccounts({ pageSize: 5 });
    expect(fm.callHistory.calls("accounts").map((c) => c.url)).toEqual([ACCOUNTS_URL, `${ACCOUNTS_URL}?pageSize=5`]);
  });
});

describe("accounts() iterator", () => {
  it("walks every page until totalPages, each account once, in order", async () => {
    const { fm, tokens } = listing(47);
    const seen: string[] = [];
    for await (const account of clientOn(fm).accounts({ pageSize: 20 })) seen.push(account.id);
    expect(seen).toEqual(Array.from({ length: 47 }, (_, i) => `id-${String(i).padStart(4, "0")}`));
    expect(fm.callHistory.calls("accounts").map((c) => new URL(c.url).search)).toEqual([
      "?page=1&pageSize=20",
      "?page=2&pageSize=20",
      "?page=3&pageSize=20",
    ]);
    expect(tokens.requests).toHaveLength(1);
  });

  it("makes one request when everything fits on a page, and one when there is nothing", async () => {
    for (const total of [0, 20]) {
      const { fm } = listing(total);
      const seen = [];
      for await (const account of clientOn(fm).accounts({ pageSize: 20 })) seen.push(account);
      expect(seen).toHaveLength(total);
      expect(fm.callHistory.calls("accounts")).toHaveLength(1);
    }
  });

  it("uses the server's default page size when none is given", async () => {
    const { fm } = listing(3);
    const seen = [];
    for await (const account of clientOn(fm).accounts()) seen.push(account);
    expect(seen).toHaveLength(3);
    expect(fm.callHistory.calls("accounts")[0]!.url).toBe(`${ACCOUNTS_URL}?page=1`);
  });

  it("stops at an empty page even if totalPages claims more (accounts removed while walking)", async () => {
    let total = 45;
    const { fm } = listing(() => total);
    const seen = [];
    for await (const account of clientOn(fm).accounts({ pageSize: 20 })) {
      seen.push(account);
      total = 20; // shrinks after the first page
    }
    expect(seen).toHaveLength(20);
    expect(fm.callHistory.calls("accounts")).toHaveLength(2);
  });

  it("is lazy: breaking out early fetches no further pages", async () => {
    const { fm } = listing(100);
    for await (const account of clientOn(fm).accounts({ pageSize: 10 })) {
      if (account.id === "id-0012") break;
    }
    expect(fm.callHistory.calls("accounts")).toHaveLength(2);
  });
});
