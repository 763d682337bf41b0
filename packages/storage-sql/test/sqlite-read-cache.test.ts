import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { AccountRecord } from "@plantgate/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqlStorage, type SqlStorage } from "../src/index.js";
import { clientRecord } from "./support.js";

// The SQLite storage remembers hot reads (clients, accounts, account pages, revoked jtis,
// throttle counters) and validates them on every read with PRAGMA data_version. These tests warm
// that cache, change the file from elsewhere, and expect the very next read to see the change.

const client = clientRecord();
/** The one secret `hash`, created at `at` (what a rotation leaves). */
const secret = (hash: string, at: number) => ({ id: `s-${hash}`, hash, createdAt: at, expiresAt: null, lastUsedAt: null });
const secretJson = (hash: string, at: number) => JSON.stringify([secret(hash, at)]);

const account: AccountRecord = {
  id: "acc-1",
  username: "carol",
  displayName: "Carol",
  email: null,
  roles: ["ops"],
  enabled: true,
  createdAt: 1_700_000_000_000,
  passwordHash: "pbkdf2-hash",
};

const packageDir = fileURLToPath(new URL("..", import.meta.url));

/** Runs SQL on `file` from a separate node process (its own better-sqlite3 connection), then exits. */
function otherProcess(file: string, statements: string): void {
  const script = `import Database from "better-sqlite3"; const db = new Database(process.argv[1]); db.pragma("busy_timeout = 5000"); db.exec(process.argv[2]); db.close();`;
  execFileSync(process.execPath, ["--input-type=module", "-e", script, file, statements], { cwd: packageDir, stdio: "pipe" });
}

describe("sqlite read cache (validated by PRAGMA data_version)", () => {
  let dir: string;
  let file: string;
  const open: SqlStorage[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "plantgate-read-cache-"));
    file = join(dir, "plantgate.db");
  });
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const storage = async () => {
    const s = await openSqlStorage(file);
    open.push(s);
    return s;
  };

  /** A storage with one client and one account whose cache has seen both, a page and a jti. */
  async function warm() {
    const s = await storage();
    expect(await s.clients.create(client)).toBe(true);
    expect(await s.accounts.create(account)).toBe(true);
    for (let i = 0; i < 2; i++) {
      expect(await s.clients.get("reporting")).toEqual(client);
      expect(await s.accounts.get("acc-1")).toEqual(account);
      expect(await s.accounts.findByUsername("carol")).toEqual(account);
      expect(await s.accounts.list(0, 10)).toEqual({ items: [account], total: 1 });
      expect(await s.revokedTokens.has("jti-1")).toBe(false);
      expect(await s.clients.get("nobody")).toBeNull();
      expect(await s.attempts.get("t:key")).toBeNull();
    }
    return s;
  }

  it("a secret rotation, an account disable, a jti revoke, a new client and a counted failure committed by another process are seen by the next read", async () => {
    const s = await warm();
    otherProcess(
      file,
      `update pg_clients set secrets = '${secretJson("hash-two", 1_700_000_000_001)}', secret_updated_at = 1700000000001 where client_id = 'reporting';
       update pg_accounts set enabled = 0 where id = 'acc-1';
       insert into pg_revoked_tokens (jti, expires_at) values ('jti-1', 9999999999999);
       insert into pg_clients (client_id, auth_method, secrets, name, grant_types, scopes, created_at, secret_updated_at) select 'nobody', 'client_secret', '[]', 'N', grant_types, scopes, 1, 1 from pg_clients where client_id = 'reporting';
       insert into pg_attempts (attempt_key, count, window_start) values ('t:key', 3, 1700000000000);`,
    );
    expect(await s.clients.get("reporting")).toEqual({ ...client, secrets: [secret("hash-two", 1_700_000_000_001)], secretUpdatedAt: 1_700_000_000_001 });
    expect(await s.accounts.get("acc-1")).toEqual({ ...account, enabled: false });
    expect(await s.accounts.findByUsername("carol")).toEqual({ ...account, enabled: false });
    expect(await s.accounts.list(0, 10)).toEqual({ items: [{ ...account, enabled: false }], total: 1 });
    expect(await s.revokedTokens.has("jti-1")).toBe(true);
    expect((await s.clients.get("nobody"))?.clientId).toBe("nobody");
    expect(await s.attempts.get("t:key")).toEqual({ key: "t:key", count: 3, windowStart: 1_700_000_000_000 });
  });

  it("each change is seen at once, one at a time, through a second storage on the same file in this process", async () => {
    const s = await warm();
    const other = await storage();
    expect(await other.clients.replaceSecrets("reporting", secret("hash-three", 1_700_000_000_002))).toBe(true);
    expect((await s.clients.get("reporting"))?.secrets[0]?.hash).toBe("hash-three");
    expect(await other.accounts.setEnabled("acc-1", false)).toBe(true);
    expect((await s.accounts.get("acc-1"))?.enabled).toBe(false);
    expect((await s.accounts.list(0, 10)).items[0]?.enabled).toBe(false);
    await other.revokedTokens.add("jti-1", 9_999_999_999_999);
    expect(await s.revokedTokens.has("jti-1")).toBe(true);
    expect(await other.clients.delete("reporting")).toBe(true);
    expect(await s.clients.get("reporting")).toBeNull();
  });

  it("its own writes are seen by its next read (data_version does not change for them)", async () => {
    const s = await warm();
    expect(await s.clients.replaceSecrets("reporting", secret("hash-four", 1_700_000_000_003))).toBe(true);
    expect((await s.clients.get("reporting"))?.secrets[0]?.hash).toBe("hash-four");
    expect(await s.accounts.setEnabled("acc-1", false)).toBe(true);
    expect((await s.accounts.get("acc-1"))?.enabled).toBe(false);
    expect((await s.accounts.findByUsername("carol"))?.enabled).toBe(false);
    await s.revokedTokens.add("jti-1", 9_999_999_999_999);
    expect(await s.revokedTokens.has("jti-1")).toBe(true);
    expect(await s.attempts.increment("t:key", 1_700_000_000_000, 60_000)).toEqual({ key: "t:key", count: 1, windowStart: 1_700_000_000_000 });
    expect(await s.attempts.get("t:key")).toEqual({ key: "t:key", count: 1, windowStart: 1_700_000_000_000 });
    await s.attempts.reset("t:key");
    expect(await s.attempts.get("t:key")).toBeNull();
    const second: AccountRecord = { ...account, id: "acc-2", username: "dave" };
    expect(await s.accounts.createMany([second])).toBeNull();
    expect(await s.accounts.list(0, 10)).toEqual({ items: [{ ...account, enabled: false }, second], total: 2 });
    expect(await s.clients.delete("reporting")).toBe(true);
    expect(await s.clients.get("reporting")).toBeNull();
  });

  it("a remembered record is a copy: changing what a read returned changes nothing stored", async () => {
    const s = await warm();
    const got = (await s.clients.get("reporting"))!;
    got.scopes.push("admin");
    got.secrets[0]!.hash = "changed";
    const page = await s.accounts.list(0, 10);
    page.items[0]!.roles.push("root");
    expect(await s.clients.get("reporting")).toEqual(client);
    expect(await s.accounts.list(0, 10)).toEqual({ items: [account], total: 1 });
  });

  it("a read racing a write of this process is not remembered", async () => {
    const s = await warm();
    // Start a read and a write in the same turn; the read's result must not outlive the write.
    const [, ok] = await Promise.all([s.clients.get("reporting"), s.clients.replaceSecrets("reporting", secret("hash-five", 1_700_000_000_004))]);
    expect(ok).toBe(true);
    expect((await s.clients.get("reporting"))?.secrets[0]?.hash).toBe("hash-five");
  });

  it("group commit: inserts of one turn commit together, a duplicate among them fails alone, and all are durable before they settle", async () => {
    const s = await storage();
    const plant = (id: bigint) => ({ id, name: `p${id}`, tag: null });
    expect(await s.plants.create(plant(1n))).toBe(true);
    // One turn: two new ids, one taken, one repeated within the turn; and a Kysely transaction
    // (accounts.create) interleaved, whose statements must not mix with the batch.
    const results = await Promise.all([
      s.plants.create(plant(2n)),
      s.plants.create(plant(1n)),
      s.accounts.create(account),
      s.plants.create(plant(3n)),
      s.plants.create(plant(3n)),
    ]);
    expect(results).toEqual([true, false, true, true, false]);
    // Another connection (another process would see the same) sees every acknowledged insert.
    const other = await storage();
    for (const id of [1n, 2n, 3n]) expect(await other.plants.get(id)).toEqual(plant(id));
    expect(await other.accounts.get("acc-1")).toEqual(account);
    expect((await other.accounts.list(0, 10)).total).toBe(1);
  });

  it("group commit: a rotation that fails after its UPDATE (replacement hash taken) leaves nothing behind, and the others of its turn commit", async () => {
    const s = await storage();
    const token = (hash: string, family: string) => ({
      tokenHash: hash,
      familyId: family,
      clientId: "reporting",
      accountId: "acc-1",
      scope: ["Platform_UserAPIs"],
      createdAt: 1_700_000_000_000,
      expiresAt: 1_900_000_000_000,
      familyExpiresAt: 1_900_000_000_000,
      consumedAt: null,
      revokedAt: null,
      replay: null,
      graceUses: 0,
    });
    for (const [hash, family] of [["a", "fa"], ["b", "fb"], ["c", "fc"], ["taken", "fx"]] as const) await s.refreshTokens.create(token(hash, family));
    const at = 1_800_000_000_000;
    // One turn: a good rotation, one whose replacement hash exists (its UPDATE ran before the
    // INSERT failed), and another good one after it.
    const results = await Promise.all([
      s.refreshTokens.consume("a", at, token("a2", "fa"), "sealed-a"),
      s.refreshTokens.consume("b", at, token("taken", "fb"), "sealed-b"),
      s.refreshTokens.consume("c", at, token("c2", "fc"), null),
    ]);
    expect(results).toEqual([true, false, true]);
    const other = await storage();
    expect(await other.refreshTokens.findByHash("a")).toEqual({ ...token("a", "fa"), consumedAt: at, replay: "sealed-a" });
    expect(await other.refreshTokens.findByHash("a2")).toEqual(token("a2", "fa"));
    // The failed rotation's UPDATE was undone: "b" is as it was, "taken" still the other family's.
    expect(await other.refreshTokens.findByHash("b")).toEqual(token("b", "fb"));
    expect(await other.refreshTokens.findByHash("taken")).toEqual(token("taken", "fx"));
    expect(await other.refreshTokens.findByHash("c")).toEqual({ ...token("c", "fc"), consumedAt: at });
    expect(await other.refreshTokens.findByHash("c2")).toEqual(token("c2", "fc"));
  });
});
