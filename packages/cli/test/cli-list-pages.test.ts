/**
 * `client list` and `user list` read the store a page at a time (clients by `listPage`, accounts
 * by place) and print each page before reading the next; the output is byte for byte the JSON
 * array they printed when they read everything first. The store is the real SQLite one; the
 * environment's opener is wrapped only to count the calls made on it (and, for a backend written
 * before `listPage`, to leave that method out).
 */
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ClientRecord, ClientStore, AccountStore } from "@plantgate/core";
import type { SqlStorage } from "@plantgate/storage-sql";
import { writeByHand } from "./support.js";

/** What the wrapped opener counted, and whether it hides `clients.listPage`. */
const seen = vi.hoisted(() => ({ withoutListPage: false, calls: [] as string[] }));

vi.mock("@plantgate/storage-sql/env", async (importOriginal) => {
  const real = await importOriginal<typeof import("@plantgate/storage-sql/env")>();
  return {
    ...real,
    openStorageFromEnv: async (...args: Parameters<typeof real.openStorageFromEnv>) => {
      const storage = await real.openStorageFromEnv(...args);
      const clients = storage.clients;
      const counted: ClientStore = {
        get: (id) => clients.get(id),
        create: (r) => clients.create(r),
        addSecret: (id, s) => clients.addSecret(id, s),
        replaceSecrets: (id, s) => clients.replaceSecrets(id, s),
        removeSecret: (id, s, now) => clients.removeSecret(id, s, now),
        touchSecret: (id, s, at) => clients.touchSecret(id, s, at),
        delete: (id) => clients.delete(id),
        maxAccessTokenTtl: () => clients.maxAccessTokenTtl!(),
        list: () => {
          seen.calls.push("clients.list");
          return clients.list();
        },
        ...(seen.withoutListPage
          ? {}
          : {
              listPage: (after: string | null, limit: number) => {
                seen.calls.push(`clients.listPage(${after ?? "null"}, ${limit})`);
                return clients.listPage!(after, limit);
              },
            }),
      };
      const accounts = storage.accounts;
      const countedAccounts: AccountStore = {
        get: (id) => accounts.get(id),
        findByUsername: (u) => accounts.findByUsername(u),
        create: (r) => accounts.create(r),
        createMany: (r) => accounts.createMany(r),
        setEnabled: (id, e) => accounts.setEnabled(id, e),
        list: (offset, limit) => {
          seen.calls.push(`accounts.list(${offset}, ${limit})`);
          return accounts.list(offset, limit);
        },
      };
      // The same object (close, migrate, db stay the store's own), its two stores counted.
      return Object.assign(storage, { clients: counted, accounts: countedAccounts }) as SqlStorage & { display: string };
    },
  };
});

const { runCli, LIST_PAGE } = await import("../src/cli.js");
const { openStorageFromEnv } = await import("@plantgate/storage-sql/env");

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "plantgate-cli-pages-"));
  seen.withoutListPage = false;
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function cli(argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, {
    env: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", PLANTGATE_DB: join(dir, "plantgate.db") },
    cwd: dir,
    readStdin: async () => "",
    stdout: (t) => {
      seen.calls.push("stdout");
      stdout += t;
    },
    stderr: (t) => void (stderr += t),
  });
  return { code, stdout, stderr };
}

/** n clients written straight into the store (ids in no sorted order; one name holds U+2028). */
async function seedClients(n: number): Promise<string[]> {
  const records: ClientRecord[] = [];
  for (let i = 0; i < n; i++) {
    const id = `c${String((i * 7919) % n).padStart(5, "0")}${i % 3 === 0 ? "-x" : ""}`;
    const jwt = i % 5 === 0;
    records.push({
      clientId: id,
      authMethod: jwt ? "private_key_jwt" : "client_secret",
      secrets: jwt ? [] : [{ id: `s${i}`, hash: `h${i}`.padEnd(43, "A"), createdAt: 1_700_000_000_000 + i, expiresAt: i % 2 ? null : 1_800_000_000_000, lastUsedAt: i % 4 ? null : 1_750_000_000_000 }],
      jwks: jwt ? '{"keys":[]}' : null,
      jwksUri: null,
      name: i === 1 ? "line\u2028sep \u2029 \"q\"\n" : `Client ${i}`,
      grantTypes: ["client_credentials"],
      scopes: i % 2 ? ["Platform_UserAPIs"] : [],
      accessTokenTtl: null,
      refreshTokenTtl: null,
      refreshTokenAbsoluteTtl: null,
      createdAt: 1_700_000_000_000 + i,
      secretUpdatedAt: 1_700_000_000_000 + i,
    });
  }
  await writeByHand(dir, { clients: records });
  return records.map((r) => r.clientId).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

describe("client list and user list read the store a page at a time", () => {
  it(`client list with more clients than one page (${LIST_PAGE}): every client once, in client-id order, through listPage (list() never called), each page written before the next is read; the same bytes as through list()`, async () => {
    expect((await cli(["migrate"])).code).toBe(0);
    const n = 2 * LIST_PAGE + 37;
    const ids = await seedClients(n);

    seen.calls = [];
    const paged = await cli(["client", "list"]);
    expect([paged.code, paged.stderr]).toEqual([0, ""]);
    const listed = JSON.parse(paged.stdout) as { client_id: string; name: string }[];
    expect(listed.map((c) => c.client_id)).toEqual(ids);
    // The format of `JSON.stringify(all, null, 2)` and a newline, as before.
    expect(paged.stdout).toBe(JSON.stringify(listed, null, 2) + "\n");
    expect(listed.some((c) => c.name === "line\u2028sep \u2029 \"q\"\n")).toBe(true);
    // listPage asks one more than a page to know whether another follows; each page is written
    // before the next is read, then the array is closed.
    expect(seen.calls.filter((c) => c.startsWith("clients.") || c === "stdout")).toEqual([
      `clients.listPage(null, ${LIST_PAGE + 1})`,
      "stdout",
      `clients.listPage(${ids[LIST_PAGE - 1]}, ${LIST_PAGE + 1})`,
      "stdout",
      `clients.listPage(${ids[2 * LIST_PAGE - 1]}, ${LIST_PAGE + 1})`,
      "stdout",
      "stdout",
    ]);

    // A backend written before listPage: one list(), the same bytes.
    seen.withoutListPage = true;
    seen.calls = [];
    const whole = await cli(["client", "list"]);
    expect([whole.code, whole.stderr]).toEqual([0, ""]);
    expect(seen.calls.filter((c) => c.startsWith("clients.") || c === "stdout")).toEqual(["clients.list", "stdout", "stdout"]);
    expect(whole.stdout).toBe(paged.stdout);
  });

  /**
   * `client list` of a store holding `all` (in order): exit 0, nothing on stderr, every client once
   * in a closed JSON array. Resolves to the `clients.listPage` calls it made.
   */
  async function listsEvery(all: string[]): Promise<string[]> {
    seen.calls = [];
    const paged = await cli(["client", "list"]);
    // Until 2026-11-30 the second page was refused ("after must be the next cursor of a previous
    // page", exit 2) after the first was printed: an unclosed array, the rest never listed.
    expect([paged.code, paged.stderr]).toEqual([0, ""]);
    const listed = JSON.parse(paged.stdout) as { client_id: string }[];
    expect(listed.map((c) => c.client_id)).toEqual(all);
    expect(paged.stdout).toBe(JSON.stringify(listed, null, 2) + "\n");
    return seen.calls.filter((c) => c.startsWith("clients.listPage"));
  }

  it("client list carries on past a client id written straight into the store that is longer than the admin API's 1000-character cursor bound: every client once, a closed JSON array, exit 0", async () => {
    expect((await cli(["migrate"])).code).toBe(0);
    const ids = await seedClients(2 * LIST_PAGE + 5);
    // Two ids no create would make (at most 200 characters there), each the last of a page, so the
    // next page is read after it: 1500 characters and 20,000.
    const long = [ids[LIST_PAGE - 2]! + "~".repeat(1500), ids[2 * LIST_PAGE - 3]! + "~".repeat(20_000)];
    await writeByHand(dir, { clients: long.map((clientId) => ({ clientId, name: "Written by hand" })) });
    const all = [...ids, ...long].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect([all.indexOf(long[0]!), all.indexOf(long[1]!)]).toEqual([LIST_PAGE - 1, 2 * LIST_PAGE - 1]);

    const pages = await listsEvery(all);
    // The exact cursors, each as its length and SHA-256 (a 20,000-character string would drown a
    // failure's diff): a cursor of the right length with one character wrong is caught too.
    const digest = (call: string) => `${call.length} ${createHash("sha256").update(call).digest("hex")}`;
    expect(pages.map(digest)).toEqual([
      digest(`clients.listPage(null, ${LIST_PAGE + 1})`),
      digest(`clients.listPage(${long[0]}, ${LIST_PAGE + 1})`),
      digest(`clients.listPage(${long[1]}, ${LIST_PAGE + 1})`),
    ]);
  });

  it("client list carries on past client ids written straight into the store that hold U+0000, and the empty id: every client once, a closed JSON array, exit 0", async () => {
    expect((await cli(["migrate"])).code).toBe(0);
    const ids = await seedClients(2 * LIST_PAGE + 5);
    // Ids the admin API refuses, which SQLite holds as written: "" sorts first, and the two with
    // U+0000 each end a page, so the next page is read after them.
    const odd = ["", ids[LIST_PAGE - 3]! + "\u0000", ids[2 * LIST_PAGE - 4]! + "\u0000b"];
    await writeByHand(dir, { clients: odd.map((clientId) => ({ clientId, name: "Written by hand" })) });
    const all = [...ids, ...odd].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    expect(odd.map((id) => all.indexOf(id))).toEqual([0, LIST_PAGE - 1, 2 * LIST_PAGE - 1]);

    expect(await listsEvery(all)).toEqual([
      `clients.listPage(null, ${LIST_PAGE + 1})`,
      `clients.listPage(${odd[1]}, ${LIST_PAGE + 1})`,
      `clients.listPage(${odd[2]}, ${LIST_PAGE + 1})`,
    ]);
  });

  it("client list of an empty store prints [] as before", async () => {
    expect((await cli(["migrate"])).code).toBe(0);
    seen.calls = [];
    expect(await cli(["client", "list"])).toMatchObject({ code: 0, stdout: "[]\n", stderr: "" });
    expect(seen.calls.filter((c) => c.startsWith("clients.") || c === "stdout")).toEqual([`clients.listPage(null, ${LIST_PAGE + 1})`, "stdout"]);
  });

  it(`user list with more accounts than one page: every account once, in creation order, a page of ${LIST_PAGE} at a time; the JSON array as before`, async () => {
    expect((await cli(["migrate"])).code).toBe(0);
    const n = LIST_PAGE + 3;
    const storage = await openStorageFromEnv({ PLANTGATE_DB: join(dir, "plantgate.db") }, { cwd: dir, clientCache: false });
    try {
      const records = Array.from({ length: n }, (_, i) => ({
        id: `acc-${String(n - i).padStart(4, "0")}`,
        username: `user${i}`,
        displayName: i % 2 ? `User ${i}` : null,
        email: i % 3 ? null : `u${i}@example.test`,
        roles: i % 2 ? ["ops"] : [],
        enabled: i % 7 !== 0,
        createdAt: 1_700_000_000_000 + i,
        passwordHash: "$pbkdf2-sha256$i=1000$AAAA$BBBB",
      }));
      expect(await storage.accounts.createMany(records)).toBeNull();
    } finally {
      await storage.close();
    }
    seen.calls = [];
    const listed = await cli(["user", "list"]);
    expect([listed.code, listed.stderr]).toEqual([0, ""]);
    const accounts = JSON.parse(listed.stdout) as { username: string }[];
    expect(accounts.map((a) => a.username)).toEqual(Array.from({ length: n }, (_, i) => `user${i}`));
    expect(accounts[0]).toEqual({ id: `acc-${String(n).padStart(4, "0")}`, username: "user0", displayName: null, email: "u0@example.test", roles: [], enabled: false, createdAt: new Date(1_700_000_000_000).toISOString() });
    expect(listed.stdout).toBe(JSON.stringify(accounts, null, 2) + "\n");
    expect(listed.stdout).not.toContain("pbkdf2");
    // Each page written before the next is read (they were all gathered first), then the array closed.
    expect(seen.calls.filter((c) => c.startsWith("accounts.") || c === "stdout")).toEqual([`accounts.list(0, ${LIST_PAGE})`, "stdout", `accounts.list(${LIST_PAGE}, ${LIST_PAGE})`, "stdout", "stdout"]);
  });
});
