/**
 * The brute-force counters' storage keys hold what was typed: a username (where users now and then
 * type their password) or a client id (where a client that swapped id and secret sends its
 * secret). Without a key encryption key they are `t:` + the SHA-256 of that text (a fast, unkeyed
 * hash: a dictionary run over a copy of the attempts table reads a weak password back). With a
 * KEK (`keyEncryptionKeys`) they are `t:` + HMAC-SHA-256 under a key derived from the first KEK
 * (HKDF-SHA-256, empty salt, info "plantgate attempt counter keys"), so a copy of the table alone
 * reads nothing back; instances sharing the first KEK share the counters.
 */
import { createHash, createHmac, hkdfSync, randomBytes } from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import { counterKeyHash } from "../src/crypto/key-encryption.js";
import { createMemoryStorage, createPlantgate, type AttemptStore, type Storage } from "../src/index.js";
import { BASE, basic, manualClock } from "./helpers.js";

const quiet = { error() {}, warn() {} };
const IP = "198.51.100.7";
/** A password typed into the username field. */
const TYPED = "Tr0ub4dor&3-typed-as-username";
/** A client secret sent as the client id (id and secret swapped). */
const SWAPPED = "s3cr3t-sent-as-the-client-id";

/** The real memory store, with every key handed to its attempts store noted. */
function recordingStorage(): { storage: Storage; keys: Set<string> } {
  const storage = createMemoryStorage();
  const keys = new Set<string>();
  const inner = storage.attempts;
  const attempts: AttemptStore = {
    increment: (key, now, windowMs) => (keys.add(key), inner.increment(key, now, windowMs)),
    get: (key) => (keys.add(key), inner.get(key)),
    reset: (key) => (keys.add(key), inner.reset(key)),
    refund: (key, windowStart, count) => (keys.add(key), inner.refund!(key, windowStart, count)),
    deleteExpired: (before, limit) => inner.deleteExpired(before, limit),
  };
  return { storage: { ...storage, attempts }, keys };
}

const kek = () => randomBytes(32).toString("base64url");
const sha = (text: string) => "t:" + createHash("sha256").update(text, "utf8").digest("base64url");
const hmacUnder = (kekText: string) => {
  const key = Buffer.from(hkdfSync("sha256", Buffer.from(kekText, "base64url"), new Uint8Array(0), "plantgate attempt counter keys", 32));
  return (text: string) => "t:" + createHmac("sha256", key).update(text, "utf8").digest("base64url");
};

/** The throttle keys of a password grant with `username` and of a client authentication as `clientId`, from IP. */
const keyTexts = (username: string, clientId: string) => [
  JSON.stringify(["password", "ui", username, IP]),
  JSON.stringify(["password", "u", username]),
  JSON.stringify(["client", "c", clientId, IP]),
];

async function guess(app: ReturnType<typeof createPlantgate>, clientId: string, secret: string, username: string, password: string) {
  const body = new URLSearchParams({ grant_type: "password", username, password }).toString();
  return app.fetch(
    new Request(`${BASE}/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(clientId, secret) },
      body,
    }),
    { clientIp: IP },
  );
}

/** Node's in-line SHA-256 as a `crypto` option's (what @plantgate/node's `nodeCrypto()` gives). */
const nodeSha256 = { sha256: (data: Uint8Array) => new Uint8Array(createHash("sha256").update(data).digest()) };

type Extra = { keyEncryptionKeys?: string; crypto?: typeof nodeSha256 };

async function setUp(options: Extra = {}) {
  const clock = manualClock();
  const { storage, keys } = recordingStorage();
  const make = (extra: Extra = options) =>
    createPlantgate({ storage, clock: clock.now, passwordHashIterations: 1000, logger: quiet, bruteForce: { maxFailures: 3, windowSeconds: 600 }, ...extra });
  const app = make();
  const { clientSecret } = await app.admin.createClient({ clientId: "app-1" });
  return { app, make, keys, clientSecret };
}

describe("brute-force counter keys at rest", () => {
  it("without a key encryption key: t: + the SHA-256 of the key's text (as before; the README says so)", async () => {
    const { app, keys, clientSecret } = await setUp();
    expect((await guess(app, "app-1", clientSecret, TYPED, "x")).status).toBe(400);
    expect((await guess(app, SWAPPED, "x", "alice", "x")).status).toBe(401);
    const [ui, u, c] = keyTexts(TYPED, SWAPPED);
    for (const text of [ui!, u!, c!]) expect(keys).toContain(sha(text));
  });

  it("with one: t: + HMAC-SHA-256 under a key derived from the first KEK; no SHA-256 of a typed text is stored", async () => {
    const first = kek();
    const { app, keys, clientSecret } = await setUp({ keyEncryptionKeys: `${first},${kek()}` });
    expect((await guess(app, "app-1", clientSecret, TYPED, "x")).status).toBe(400);
    expect((await guess(app, SWAPPED, "x", "alice", "x")).status).toBe(401);
    const hmac = hmacUnder(first);
    const [ui, u, c] = keyTexts(TYPED, SWAPPED);
    for (const text of [ui!, u!, c!]) {
      expect(keys).toContain(hmac(text));
      expect(keys).not.toContain(sha(text));
    }
    // Every key handed to the store has the same shape as before: `t:` + 43 base64url characters.
    for (const key of keys) expect(key).toMatch(/^t:[A-Za-z0-9_-]{43}$/);
    // And no key is the SHA-256 of anything the requests carried, alone or in a key's text.
    for (const text of [TYPED, SWAPPED, "alice", "app-1", clientSecret]) expect(keys).not.toContain(sha(text));
  });

  it("instances sharing the first KEK share the counters: the lock holds across them", async () => {
    const first = kek();
    const { app, make, clientSecret } = await setUp({ keyEncryptionKeys: first });
    // Another instance, the same first KEK and an older one after it (a KEK rotation's second step).
    const sibling = make({ keyEncryptionKeys: `${first},${kek()}` });
    for (let i = 0; i < 3; i++) expect((await guess(i % 2 ? sibling : app, "app-1", clientSecret, "nobody", `wrong-${i}`)).status).toBe(400);
    const locked = await guess(sibling, "app-1", clientSecret, "nobody", "wrong-3");
    expect(locked.status).toBe(429);
    expect(await locked.json()).toEqual({ error: "temporarily_unavailable", error_description: "Too many failed attempts; retry after the time in Retry-After." });
    // An instance whose first KEK differs counts apart (documented: counters start over when the first KEK changes).
    const other = make({ keyEncryptionKeys: kek() });
    expect((await guess(other, "app-1", clientSecret, "nobody", "wrong-4")).status).toBe(400);
  });

  it("with the crypto option's in-line SHA-256 (RFC 2104 over it): the same keys as Web Crypto's HMAC, so instances with and without it share counters", async () => {
    const first = kek();
    const { app, make, keys, clientSecret } = await setUp({ keyEncryptionKeys: first, crypto: nodeSha256 });
    const plain = make({ keyEncryptionKeys: first });
    expect((await guess(app, "app-1", clientSecret, TYPED, "x")).status).toBe(400);
    const [ui, u] = keyTexts(TYPED, SWAPPED);
    const hmac = hmacUnder(first);
    expect(keys).toContain(hmac(ui!));
    expect(keys).toContain(hmac(u!));
    // A long text (past SHA-256's 64-byte block) and a non-ASCII one hash alike both ways.
    for (const username of ["é".repeat(300), "\u{1F600}x"]) {
      const direct = counterKeyHash(Buffer.from(first, "base64url"), nodeSha256.sha256);
      const web = counterKeyHash(Buffer.from(first, "base64url"));
      expect(await direct(username)).toBe(await web(username));
      expect("t:" + (await web(username))).toBe(hmac(username));
    }
    expect((await guess(plain, "app-1", clientSecret, "nobody", "w1")).status).toBe(400);
    expect((await guess(app, "app-1", clientSecret, "nobody", "w2")).status).toBe(400);
    expect((await guess(plain, "app-1", clientSecret, "nobody", "w3")).status).toBe(400);
    expect((await guess(app, "app-1", clientSecret, "nobody", "w4")).status).toBe(429);
  });

  it("a key derivation that fails is tried again by the next call, not kept", async () => {
    const raw = randomBytes(32);
    for (const digest of [undefined, nodeSha256.sha256]) {
      const hash = counterKeyHash(raw, digest);
      const spy = vi.spyOn(crypto.subtle, "importKey").mockRejectedValueOnce(new Error("the platform refused the key"));
      try {
        await expect(hash("alice")).rejects.toThrow(new Error("the platform refused the key"));
        expect(await hash("alice")).toBe(hmacUnder(raw.toString("base64url"))("alice").slice(2));
      } finally {
        spy.mockRestore();
      }
    }
  });
});
