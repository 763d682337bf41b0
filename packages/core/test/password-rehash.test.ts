/**
 * A right password checked against a hash of another cost is stored again at today's cost
 * (`passwordHashIterations` raised or lowered since the hash was made), by the storage's
 * compare-and-set `accounts.setPasswordHash`; and after the cost was lowered, refusals are padded to
 * the highest cost a stored hash was checked at. PBKDF2 work is counted, not timed. Until 2026-12-01
 * hashes kept their cost for good, and after a lowering a wrong password of an older account cost
 * several times an unknown username's (existing usernames told apart).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createMemoryStorage, createPlantgate, StorageError, type Storage } from "../src/index.js";
import { BASE, basic } from "./helpers.js";
import { FORM } from "./token-helpers.js";
import { call, read } from "./console-helpers.js";

let iterations = 0;
beforeEach(() => {
  const deriveBits = crypto.subtle.deriveBits.bind(crypto.subtle);
  iterations = 0;
  vi.spyOn(crypto.subtle, "deriveBits").mockImplementation((params, key, length) => {
    iterations += (params as Pbkdf2Params).iterations ?? 0;
    return deriveBits(params, key, length);
  });
});
afterEach(() => void vi.restoreAllMocks());

const quiet = { error() {}, warn() {} };
const costOf = (phc: string) => Number(/^\$pbkdf2-sha256\$i=(\d+),/.exec(phc)?.[1]);

/** Accounts made at `before` iterations, then the app started again at `now` on the same store. */
async function restarted(before: number, now: number, storage: Storage = createMemoryStorage(), options: { warn?: (message: string) => void } = {}) {
  const first = createPlantgate({ storage, passwordHashIterations: before, logger: quiet });
  const { clientSecret } = await first.admin.createClient({ clientId: "app-1" });
  await first.admin.createAccount({ username: "alice", password: "the-right-password" });
  await first.admin.createAccount({ username: "root", password: "root-password-1", roles: ["admin"] });
  const app = createPlantgate({
    storage,
    passwordHashIterations: now,
    bruteForce: { maxFailures: 1_000_000 },
    logger: { error() {}, warn: options.warn ?? (() => {}) },
    console: { enabled: true },
  });
  /** A password grant: its status and the PBKDF2 iterations it ran. */
  const grant = async (username: string, password: string) => {
    iterations = 0;
    const res = await app.fetch(
      new Request(`${BASE}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": FORM, authorization: basic("app-1", clientSecret) },
        body: new URLSearchParams({ grant_type: "password", username, password }).toString(),
      }),
    );
    return { status: res.status, iterations };
  };
  const hashOf = async (username: string) => (await storage.accounts.findByUsername(username))!.passwordHash;
  return { app, storage, grant, hashOf };
}

describe("password hashes follow passwordHashIterations", () => {
  it("raised: a right password rehashes at today's cost (once), a wrong one changes nothing", async () => {
    const { grant, hashOf } = await restarted(1_000, 20_000);
    const old = await hashOf("alice");
    // A wrong password: padded to today's cost, the hash kept.
    expect(await grant("alice", "a-wrong-password")).toEqual({ status: 400, iterations: 20_000 });
    expect(await hashOf("alice")).toBe(old);
    // The right one: checked at the old cost, then hashed at today's and stored.
    expect(await grant("alice", "the-right-password")).toEqual({ status: 200, iterations: 1_000 + 20_000 });
    const rehashed = await hashOf("alice");
    expect(costOf(rehashed)).toBe(20_000);
    expect(rehashed).not.toBe(old);
    // Signing in again checks the new hash and writes nothing.
    expect(await grant("alice", "the-right-password")).toEqual({ status: 200, iterations: 20_000 });
    expect(await hashOf("alice")).toBe(rehashed);
    expect(await grant("alice", "a-wrong-password")).toEqual({ status: 400, iterations: 20_000 });
  });

  it("lowered: refusals are padded to the highest cost checked, and a right password rehashes at today's lower cost", async () => {
    const { grant, hashOf } = await restarted(20_000, 1_000);
    // An older account's wrong password costs its hash's 20,000, and from then on so does an
    // unknown username (before 2026-12-01: 1,000, so the older account was told apart).
    expect(await grant("alice", "a-wrong-password")).toEqual({ status: 400, iterations: 20_000 });
    expect(await grant("nobody", "a-wrong-password")).toEqual({ status: 400, iterations: 20_000 });
    expect(await grant("nobody", "x\u0000y")).toEqual({ status: 400, iterations: 20_000 });
    expect(await grant("alice", "the-right-password")).toEqual({ status: 200, iterations: 20_000 + 1_000 });
    expect(costOf(await hashOf("alice"))).toBe(1_000);
    // Rehashed, alice's wrong password is padded as an unknown name is: to the highest cost this
    // instance has checked (root's hash is still at 20,000).
    expect(await grant("alice", "a-wrong-password")).toEqual({ status: 400, iterations: 20_000 });
    expect(await grant("alice", "the-right-password")).toEqual({ status: 200, iterations: 1_000 });
  });

  it("the console's sign-in rehashes too", async () => {
    const { app, hashOf } = await restarted(1_000, 2_000);
    expect((await read(await call(app, "POST", "/api/session", { body: { username: "root", password: "root-password-1" } }))).status).toBe(200);
    expect(costOf(await hashOf("root"))).toBe(2_000);
  });

  it("a hash changed since it was checked is kept (compare-and-set on the hash checked)", async () => {
    const memory = createMemoryStorage();
    let changed: string | null = null;
    const storage: Storage = {
      ...memory,
      accounts: {
        ...memory.accounts,
        // Another writer stores a hash of its own between the check and the rehash.
        setPasswordHash: async (id, expected, replacement) => {
          const record = (await memory.accounts.get(id))!;
          changed = "$pbkdf2-sha256$i=3000,l=32$b3RoZXItd3JpdGVy$b3RoZXItd3JpdGVyLWhhc2gtMDEyMzQ1Njc4OWFiY2RlZg";
          await memory.accounts.setPasswordHash!(id, record.passwordHash, changed);
          return memory.accounts.setPasswordHash!(id, expected, replacement);
        },
      },
    };
    const { grant, hashOf } = await restarted(1_000, 2_000, storage);
    expect(await grant("alice", "the-right-password")).toEqual({ status: 200, iterations: 3_000 });
    expect(await hashOf("alice")).toBe(changed);
  });

  it("a store without setPasswordHash keeps the hash, and a rehash that fails in storage is a warn line: the sign-in stands either way", async () => {
    const memory = createMemoryStorage();
    const { setPasswordHash: _dropped, ...withoutRehash } = memory.accounts;
    const without = await restarted(1_000, 2_000, { ...memory, accounts: withoutRehash });
    const old = await without.hashOf("alice");
    expect(await without.grant("alice", "the-right-password")).toEqual({ status: 200, iterations: 1_000 });
    expect(await without.hashOf("alice")).toBe(old);

    const other = createMemoryStorage();
    const warnings: string[] = [];
    const failing = await restarted(1_000, 2_000, {
      ...other,
      accounts: {
        ...other.accounts,
        setPasswordHash: async () => {
          throw new StorageError("accounts.setPasswordHash failed", { cause: new Error("connection refused") });
        },
      },
    }, { warn: (message) => void warnings.push(message) });
    const kept = await failing.hashOf("alice");
    expect(await failing.grant("alice", "the-right-password")).toEqual({ status: 200, iterations: 1_000 + 2_000 });
    expect(await failing.hashOf("alice")).toBe(kept);
    // (The app's start-up warnings, issuer and keys in clear, are not this test's.)
    expect(warnings.filter((w) => w.includes("password"))).toEqual(["a password hash could not be stored at today's cost after a correct password; the sign-in stands, and the next one tries again"]);
  });
});
