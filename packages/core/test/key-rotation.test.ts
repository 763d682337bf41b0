/**
 * Signing-key rotation: several keys; the one whose stored activation time came last signs. A
 * rotated key is published first (`next`) and signs only after the activation delay (JWKS cache
 * lifetime + reload interval), so resource servers that cached the JWKS know it by then; `now`
 * skips the delay. The JWKS (RFC 7517 §5, RFC 8414 jwks_uri) publishes every key that may still
 * have live tokens; tokens signed by a retired key verify until they expire (RFC 9068 §4), and the
 * key stops being trusted once no live token can carry it. Automatic rotation by age schedules the
 * next key ahead of time and every instance switches at the same instant. Clocks are pinned.
 */
import { decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from "jose";
import { describe, expect, it, vi } from "vitest";
import { AdminError, createMemoryStorage, createPlantgate, generateKeyRecord, pruneKeys, ROTATION_KEY_DELETES, StorageError, type Plantgate, type Storage } from "../src/index.js";
import { getAccounts } from "./api-helpers.js";
import { BASE, basic, clientToken, harness, manualClock, type Harness } from "./helpers.js";

const kidOf = (token: string) => decodeProtectedHeader(token).kid!;

async function jwksKids(app: Plantgate): Promise<string[]> {
  const res = await app.fetch(new Request(`${BASE}/.well-known/jwks.json`));
  expect(res.status).toBe(200);
  return ((await res.json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid).sort();
}

/** A token signed with a stored key, valid for `days`: longer than any token we issue, to show the key itself stops being trusted. */
async function longLivedToken(h: Harness, kid: string, days: number): Promise<string> {
  const record = (await h.app.storage.signingKeys.list()).find((k) => k.kid === kid)!;
  const key = await importJWK(JSON.parse(record.privateJwk) as JWK, record.alg);
  const iat = Math.floor(h.clock.now() / 1000);
  return new SignJWT({ client_id: h.clientId, scope: "Platform_UserAPIs" })
    .setProtectedHeader({ alg: record.alg, kid, typ: "at+jwt" })
    .setIssuer(BASE)
    .setAudience(BASE)
    .setSubject("client:app-1")
    .setIssuedAt(iat)
    .setExpirationTime(iat + days * 86_400)
    .setJti(`forged-${kid}`)
    .sign(key);
}

const status = async (app: Plantgate) => (await app.admin.listSigningKeys()).map(({ kid, status }) => ({ kid, status }));

describe("manual rotation (admin / CLI keys rotate --now)", () => {
  it("a retired key verifies until its tokens expire, stays published until then, and is distrusted after", async () => {
    const h = await harness();
    const oldToken = await clientToken(h);
    const k1 = kidOf(oldToken);
    const forged = await longLivedToken(h, k1, 30);
    h.clock.advance(1000);
    const { kid: k2, deleted } = await h.app.admin.rotateSigningKey({ now: true });
    expect(deleted).toEqual([]);
    expect(k2).not.toBe(k1);
    const newToken = await clientToken(h);
    expect(kidOf(newToken)).toBe(k2);
    expect(await jwksKids(h.app)).toEqual([k1, k2].sort());
    expect(await status(h.app)).toEqual([
      { kid: k2, status: "active" },
      { kid: k1, status: "retired" },
    ]);
    for (const t of [oldToken, newToken, forged]) expect((await getAccounts(h.app, t)).status).toBe(200);

    // The old token (issued 1 s before the rotation) expires on its own: 401 from exp.
    h.clock.advance(7198 * 1000);
    expect((await getAccounts(h.app, oldToken)).status).toBe(200);
    h.clock.advance(1000);
    expect((await getAccounts(h.app, oldToken)).status).toBe(401);
    // Another instance may still have signed with k1 for up to a minute after the rotation: k1 stays.
    expect((await getAccounts(h.app, forged)).status).toBe(200);
    expect(await jwksKids(h.app)).toEqual([k1, k2].sort());

    // 7260 s (the longest lifetime + that minute) after k1 was replaced, no honest token can carry
    // it: unpublished and untrusted. (One second earlier it was still retired.)
    h.clock.advance(60 * 1000);
    expect((await status(h.app))[1]).toEqual({ kid: k1, status: "retired" });
    h.clock.advance(1000);
    expect(await status(h.app)).toEqual([
      { kid: k2, status: "active" },
      { kid: k1, status: "prunable" },
    ]);
    expect(await jwksKids(h.app)).toEqual([k2]);
    expect((await getAccounts(h.app, forged)).status).toBe(401);
    expect((await getAccounts(h.app, newToken)).status).toBe(401); // expired by now too
    expect((await getAccounts(h.app, await clientToken(h))).status).toBe(200);

    // The next rotation deletes it from the store.
    const third = await h.app.admin.rotateSigningKey({ now: true });
    expect(third.deleted).toEqual([k1]);
    expect((await h.app.storage.signingKeys.list()).map((k) => k.kid).sort()).toEqual([k2, third.kid].sort());
  });

  it("the longest lifetime counts: a client with 1-day tokens keeps the retired key published for a day", async () => {
    const h = await harness();
    await h.app.admin.createClient({ clientId: "long", accessTokenTtl: 86_400 });
    const k1 = kidOf(await clientToken(h));
    h.clock.advance(1000);
    await h.app.admin.rotateSigningKey({ now: true });
    h.clock.advance(7200 * 1000 + 60_000);
    expect((await status(h.app)).find((k) => k.kid === k1)?.status).toBe("retired");
    expect(await jwksKids(h.app)).toContain(k1);
    h.clock.advance(86_400 * 1000 - 7200 * 1000);
    expect((await status(h.app)).find((k) => k.kid === k1)?.status).toBe("prunable");
    expect(await jwksKids(h.app)).not.toContain(k1);
  });

  it("another instance over the same store picks up a rotation within a minute and still verifies old tokens", async () => {
    const h = await harness();
    const other = createPlantgate({ storage: h.app.storage, clock: h.clock.now, logger: { error() {}, warn() {} } });
    const before = await clientToken(h);
    expect(await jwksKids(other)).toEqual([kidOf(before)]);
    const { kid: k2 } = await h.app.admin.rotateSigningKey({ now: true });
    const after = await clientToken(h);
    // An unknown kid makes the other instance re-read the store (at most every 10 s).
    h.clock.advance(10_000);
    expect((await getAccounts(other, after)).status).toBe(200);
    expect((await getAccounts(other, before)).status).toBe(200);
    h.clock.advance(60_000);
    expect(await jwksKids(other)).toEqual([kidOf(before), k2].sort());
  });
});

describe("keys revoke of a retired key (after a leak)", () => {
  it("takes the prunable keys before it with it: an older key told dead is not published or trusted again (deleting the retired key moved the older one's retirement to the next key's activation)", async () => {
    const h = await harness();
    const k0 = kidOf(await clientToken(h));
    // Two ordinary rotations, the second before k0 is prunable (so it deletes nothing).
    h.clock.advance(1000);
    const { kid: k1 } = await h.app.admin.rotateSigningKey();
    h.clock.advance(400_000);
    const { kid: k2, deleted } = await h.app.admin.rotateSigningKey();
    expect(deleted).toEqual([]);
    // On until k0 is prunable (7,260 s after k1 took over); k1, replaced later, is still retired.
    h.clock.advance(7_400_000);
    const statuses = async () => (await h.app.admin.listSigningKeys()).map(({ kid, status }) => ({ kid, status }));
    expect(await statuses()).toEqual([
      { kid: k2, status: "active" },
      { kid: k1, status: "retired" },
      { kid: k0, status: "prunable" },
    ]);
    const forged0 = await longLivedToken(h, k0, 30);
    expect(await jwksKids(h.app)).toEqual([k1, k2].sort());
    expect((await getAccounts(h.app, forged0)).status).toBe(401);

    // k1 leaked: revoke it (k2 has signed for far more than a minute).
    expect(await h.app.admin.revokeSigningKey(k1)).toEqual({ kid: k1, status: "retired", deleted: [k0] });

    // k0 stays dead: deleted with it, neither published nor trusted (it was "retired" again, in the
    // JWKS and trusted for up to a token lifetime, until 2026-12-01).
    expect(await statuses()).toEqual([{ kid: k2, status: "active" }]);
    expect(await jwksKids(h.app)).toEqual([k2]);
    expect((await getAccounts(h.app, forged0)).status).toBe(401);
  });
});

const DAY = 86_400_000;

describe("keys revoke with maxPrunableDeletes (the console's REVOKE_KEY_DELETES)", () => {
  it("with more prunable keys before it than that: deletes the oldest that many and refuses, the key not revoked; called again once no more are left, it revokes the key with the rest", async () => {
    const storage = createMemoryStorage();
    const h = await harness({ storage });
    const now = h.clock.now();
    // Six keys a second apart ten days ago: the newest signs, the five before it are prunable.
    for (let i = 0; i < 6; i++) await storage.signingKeys.create(await generateKeyRecord("ES256", now - 10 * DAY + i * 1000, now - 10 * DAY + i * 1000));
    const oldestFirst = (await storage.signingKeys.list()).sort((a, b) => a.activatesAt - b.activatesAt).map((k) => k.kid);
    const kid = oldestFirst[4]!;
    const kids = async () => (await storage.signingKeys.list()).map((k) => k.kid).sort();
    await expect(h.app.admin.revokeSigningKey(kid, { maxPrunableDeletes: 3 })).rejects.toThrow(
      new AdminError(
        `signing key "${kid}" is not revoked yet: the 4 prunable keys activated before it go first (deleting it alone would make the last of them trusted again), at most 3 a request; deleted the oldest 3, 1 left: revoke it again (or let the prune delete them)`,
      ),
    );
    expect(await kids()).toEqual(oldestFirst.slice(3).sort());
    expect(await h.app.admin.revokeSigningKey(kid, { maxPrunableDeletes: 3 })).toEqual({ kid, status: "prunable", deleted: [oldestFirst[3]] });
    expect(await kids()).toEqual([oldestFirst[5]]);
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(h.app.admin.revokeSigningKey(oldestFirst[5]!, { maxPrunableDeletes: bad }), String(bad)).rejects.toThrow(new TypeError("maxPrunableDeletes must be a positive integer"));
    }
  });
});

describe("keys revoke of a retired key whose own delete fails", () => {
  it("rejects with the storage failure; the prunable keys it deleted first are named in a warn line (no event: the retry's answer says deleted: [])", async () => {
    const inner = createMemoryStorage();
    let failFor: string | null = null;
    const storage: Storage = {
      ...inner,
      signingKeys: {
        ...inner.signingKeys,
        delete: async (kid: string) => {
          if (kid === failFor) throw new StorageError("memory storage failed during signingKeys.delete");
          return inner.signingKeys.delete(kid);
        },
      } as Storage["signingKeys"],
    };
    const warnings: unknown[][] = [];
    const h = await harness({ storage, logger: { error() {}, warn: (...args: unknown[]) => void warnings.push(args) } });
    const k0 = kidOf(await clientToken(h));
    h.clock.advance(1000);
    const { kid: k1 } = await h.app.admin.rotateSigningKey();
    h.clock.advance(400_000);
    await h.app.admin.rotateSigningKey();
    h.clock.advance(7_400_000);
    failFor = k1;
    await expect(h.app.admin.revokeSigningKey(k1)).rejects.toThrow(new StorageError("memory storage failed during signingKeys.delete"));
    expect(warnings.map(([message]) => message).filter((m) => String(m).startsWith("signing key revocation"))).toEqual([
      `signing key revocation failed; the prunable keys before it were deleted: "${k0}"`,
    ]);
    expect((await inner.signingKeys.list()).map((k) => k.kid)).not.toContain(k0);
    failFor = null;
    expect(await h.app.admin.revokeSigningKey(k1)).toEqual({ kid: k1, status: "retired", deleted: [] });
  });
});

describe("keys revoke whose delete of a prunable key before it fails", () => {
  /** Six keys a second apart ten days ago over a store whose delete of `failFor` fails: the newest signs, the five before it are prunable. */
  async function sixKeys() {
    const inner = createMemoryStorage();
    let failFor: string | null = null;
    let listFails = false;
    let outageAtFailure = false;
    const storage: Storage = {
      ...inner,
      signingKeys: {
        ...inner.signingKeys,
        list: async () => {
          if (listFails) throw new StorageError("memory storage failed during signingKeys.list");
          return inner.signingKeys.list();
        },
        delete: async (kid: string) => {
          if (kid === failFor) {
            // The outage that failed this delete goes on: the keys cannot be read either.
            if (outageAtFailure) listFails = true;
            throw new StorageError("memory storage failed during signingKeys.delete");
          }
          return inner.signingKeys.delete(kid);
        },
      } as Storage["signingKeys"],
    };
    const warnings: string[] = [];
    const h = await harness({ storage, logger: { error() {}, warn: (message: string) => void warnings.push(message) } });
    const now = h.clock.now();
    for (let i = 0; i < 6; i++) await inner.signingKeys.create(await generateKeyRecord("ES256", now - 10 * DAY + i * 1000, now - 10 * DAY + i * 1000));
    const oldestFirst = (await inner.signingKeys.list()).sort((a, b) => a.activatesAt - b.activatesAt).map((k) => k.kid);
    const kids = async () => (await inner.signingKeys.list()).map((k) => k.kid).sort();
    return { h, oldestFirst, kids, warnings, failAt: (kid: string | null) => void (failFor = kid), outage: () => void (outageAtFailure = true) };
  }

  it("rejects with the storage failure, the key not revoked; the prunable keys deleted before the failure are named in a warn line (they were named nowhere until 2026-12-03)", async () => {
    const { h, oldestFirst, kids, warnings, failAt } = await sixKeys();
    const kid = oldestFirst[4]!;
    failAt(oldestFirst[2]!);
    await expect(h.app.admin.revokeSigningKey(kid)).rejects.toThrow(new StorageError("memory storage failed during signingKeys.delete"));
    expect(warnings.filter((m) => m.startsWith("signing key revocation"))).toEqual([
      `signing key revocation failed; the prunable keys before it were deleted: "${oldestFirst[0]}", "${oldestFirst[1]}"`,
    ]);
    expect(await kids()).toEqual(oldestFirst.slice(2).sort());
    failAt(null);
    expect(await h.app.admin.revokeSigningKey(kid)).toEqual({ kid, status: "prunable", deleted: [oldestFirst[2], oldestFirst[3]] });
  });

  it("with maxPrunableDeletes (the console's bounded call): the same warn line for the deletes made before the failure", async () => {
    const { h, oldestFirst, kids, warnings, failAt } = await sixKeys();
    const kid = oldestFirst[4]!;
    failAt(oldestFirst[1]!);
    await expect(h.app.admin.revokeSigningKey(kid, { maxPrunableDeletes: 3 })).rejects.toThrow(new StorageError("memory storage failed during signingKeys.delete"));
    expect(warnings.filter((m) => m.startsWith("signing key revocation"))).toEqual([
      `signing key revocation failed; the prunable keys before it were deleted: "${oldestFirst[0]}"`,
    ]);
    expect(await kids()).toEqual(oldestFirst.slice(1).sort());
  });

  it("the cached keys stay after the failure: in the outage that failed the delete, the JWKS is still served from them (not re-read and refused)", async () => {
    for (const bounded of [undefined, 3]) {
      const { h, oldestFirst, failAt, outage } = await sixKeys();
      const kid = oldestFirst[4]!;
      // The keys are loaded (the JWKS served) before the outage.
      expect(await jwksKids(h.app)).toEqual([oldestFirst[5]]);
      failAt(oldestFirst[2]!);
      outage();
      await expect(h.app.admin.revokeSigningKey(kid, bounded === undefined ? {} : { maxPrunableDeletes: bounded })).rejects.toThrow(new StorageError("memory storage failed during signingKeys.delete"));
      expect(await jwksKids(h.app), `maxPrunableDeletes ${bounded}`).toEqual([oldestFirst[5]]);
    }
  });

  it("a failure before any delete succeeded: no warn line", async () => {
    const { h, oldestFirst, warnings, failAt } = await sixKeys();
    failAt(oldestFirst[0]!);
    await expect(h.app.admin.revokeSigningKey(oldestFirst[4]!)).rejects.toThrow(new StorageError("memory storage failed during signingKeys.delete"));
    expect(warnings.filter((m) => m.startsWith("signing key revocation"))).toEqual([]);
  });
});

describe("a signingKey option that is not JSON", () => {
  it("is refused when the app is created, and neither the error nor any log line quotes the key (V8's JSON.parse message quotes the text around the fault; a 500 on every request logged it)", async () => {
    const d = "SECRETd0123456789abcdefghijklmnopqrstuvwxyz";
    const lines: string[] = [];
    const log = (...args: unknown[]) => void lines.push(JSON.stringify(args));
    // A quote lost around d (a shell or YAML mishap): not JSON.
    const signingKey = `{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":${d}"}`;
    let thrown: unknown;
    try {
      createPlantgate({ issuer: BASE, signingKey, logger: { error: log, warn: log } });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toEqual(new TypeError("signingKey (PLANTGATE_SIGNING_KEY) is not JSON: give a private JWK in JSON text"));
    expect((thrown as Error).cause).toBeUndefined();
    expect(lines).toEqual([]);
  });

  it("a stored private key that is not JSON (a damaged row) fails the load without quoting it", async () => {
    const storage = createMemoryStorage();
    const record = await generateKeyRecord("ES256", Date.now());
    await storage.signingKeys.create({ ...record, privateJwk: record.privateJwk.replace(/"d":"/, '"d":') });
    const lines: string[] = [];
    const log = (...args: unknown[]) => void lines.push(JSON.stringify(args));
    const app = createPlantgate({ issuer: BASE, storage, logger: { error: log, warn: log } });
    const res = await app.fetch(new Request(`${BASE}/.well-known/jwks.json`));
    expect(res.status).toBe(500);
    const d = (JSON.parse(record.privateJwk) as { d: string }).d;
    expect(lines.join("\n")).toContain(`signing key \\"${record.kid}\\"'s stored private key is not JSON (a damaged row)`);
    expect(lines.join("\n")).not.toContain(d.slice(0, 8));
  });
});

describe("an invalidate() while a look for a kid stored elsewhere is loading the keys", () => {
  it("a valid token signed by a key another instance rotated in is still taken (the first fix of the dropped load left no keys to look in: 401)", async () => {
    const inner = createMemoryStorage();
    // signingKeys.list() on this instance: the call numbered `holdAt` waits for `open`.
    let calls = 0;
    let holdAt = -1;
    let open = () => {};
    const gate = new Promise<void>((r) => (open = r));
    const storage: Storage = {
      ...inner,
      signingKeys: {
        ...inner.signingKeys,
        list: async () => {
          const n = ++calls;
          const rows = await inner.signingKeys.list();
          if (n === holdAt) await gate;
          return rows;
        },
      },
    };
    const h = await harness({ storage });
    const k1 = kidOf(await clientToken(h));
    // Another instance over the same store rotates with now and signs with the new key.
    const b = createPlantgate({ storage: inner, clock: h.clock.now, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    h.clock.advance(1000);
    await b.admin.rotateSigningKey({ now: true });
    const t2 = await clientToken({ ...h, app: b });
    expect(kidOf(t2)).not.toBe(k1);
    h.clock.advance(2000);
    // The look reads the rows (passes), then the load it starts reads them (held)...
    holdAt = calls + 2;
    const verifying = getAccounts(h.app, t2);
    await new Promise((r) => setTimeout(r, 20));
    expect(calls).toBe(holdAt);
    // ...while an administrator on this instance schedules a rotation (it calls invalidate()).
    await h.app.admin.rotateSigningKey();
    open();
    expect((await verifying).status).toBe(200);
  });
});

describe("a configured key changed under the same kid", () => {
  it("signingKey or signer: the start refuses, naming the kid, and the stored key is left as it was (the old stored key was loaded: a replaced signingKey kept signing, a signer's tokens were refused)", async () => {
    const quiet = { error() {}, warn() {} };
    const esKey = async (kid: string) => ({ ...(await exportJWK((await generateKeyPair("ES256", { extractable: true })).privateKey)), kid, alg: "ES256" });
    const signer = async (kid: string) => {
      const { privateKey, publicKey } = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"])) as CryptoKeyPair;
      return {
        alg: "ES256" as const,
        kid,
        publicJwk: await crypto.subtle.exportKey("jwk", publicKey),
        sign: async (data: Uint8Array) => new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, privateKey, data as Uint8Array<ArrayBuffer>)),
      };
    };
    for (const [what, configure] of [
      ["signingKey (PLANTGATE_SIGNING_KEY)", async () => ({ signingKey: await esKey("main") })],
      ["signer", async () => ({ signer: await signer("kms-signing-key") })],
    ] as const) {
      const storage = createMemoryStorage();
      const clock = manualClock();
      const first = await configure();
      const before = createPlantgate({ storage, clock: clock.now, logger: quiet, ...first });
      const published = await before.jwks();
      const rows = await storage.signingKeys.list();
      expect(rows).toHaveLength(1);
      clock.advance(3_600_000);
      // The same configured key again (a restart): it starts, and nothing changes but the stamp of
      // its load (lastSignedAt, see signingKeys.markSigning).
      expect(await createPlantgate({ storage, clock: clock.now, logger: quiet, ...first }).jwks(), what).toEqual(published);
      const restarted = rows.map((r) => ({ ...r, lastSignedAt: clock.now() }));
      expect(await storage.signingKeys.list(), what).toEqual(restarted);
      clock.advance(60_000);
      const after = createPlantgate({ storage, clock: clock.now, logger: quiet, ...(await configure()) });
      await expect(after.jwks(), what).rejects.toThrow(
        `${what} has kid "${rows[0]!.kid}", which is stored with another key: give the new key a kid of its own (or none: its RFC 7638 thumbprint is the kid); nothing was stored`,
      );
      // Not even stamped: a stamp would keep the row's other key trusted on other instances.
      expect(await storage.signingKeys.list(), what).toEqual(restarted);
      expect(await before.jwks()).toEqual(published);
    }
  });
});

describe("a rotation with now on this instance while a load of the keys is under way", () => {
  it("the instance that rotated signs with the new key at once, and for the minute after: the load begun before the rotation is never applied", async () => {
    const inner = createMemoryStorage();
    let gate: Promise<void> | null = null;
    let open = () => {};
    // signingKeys.list() reads at once; the first read after `gate` is set answers when it opens.
    const storage: Storage = {
      ...inner,
      signingKeys: {
        ...inner.signingKeys,
        list: async () => {
          const rows = await inner.signingKeys.list();
          const mine = gate;
          gate = null;
          if (mine) await mine;
          return rows;
        },
      },
    };
    const h = await harness({ storage });
    const old = await clientToken(h);
    const k1 = kidOf(old);
    // A request's periodic reload (the minute is up) reads the key rows, slowly...
    h.clock.advance(61_000);
    gate = new Promise<void>((r) => (open = r));
    const concurrent = getAccounts(h.app, old);
    await new Promise((r) => setTimeout(r, 10));
    // ...while an administrator rotates with now on this instance (a suspected leak of k1).
    const { kid: k2 } = await h.app.admin.rotateSigningKey({ now: true });
    const issuing = clientToken(h);
    await new Promise((r) => setTimeout(r, 10));
    open();
    expect((await concurrent).status).toBe(200);
    // Until 2026-12-01 the token was k1's, and so was the next minute's: the slow load, which read
    // the rows before the rotation, was joined after it and put k1 back as the signing key.
    expect([kidOf(await issuing), k2 === k1]).toEqual([k2, false]);
    h.clock.advance(30_000);
    expect(kidOf(await clientToken(h))).toBe(k2);
  });
});

describe("unknown kids: another instance re-reads the keys at most once a second", () => {
  it("a token signed by a key another instance stored a second ago (rotate now) is taken, not refused for 10 s", async () => {
    const h = await harness();
    const other = createPlantgate({ storage: h.app.storage, clock: h.clock.now, logger: { error() {}, warn() {} } });
    // The other instance has just read the keys (verifying a token of the first key).
    expect((await getAccounts(other, await clientToken(h))).status).toBe(200);
    await h.app.admin.rotateSigningKey({ now: true });
    const after = await clientToken(h);
    h.clock.advance(999);
    // Within the second since its read: the new kid is not looked for yet.
    expect((await getAccounts(other, after)).status).toBe(401);
    h.clock.advance(1);
    // Until 2026-11-29: refused until 10 s after that read.
    expect((await getAccounts(other, after)).status).toBe(200);
  });

  it("requests that come while another request's look for the kid is under way wait for it: all of a burst of the new key's tokens are taken (those after the first were refused 401 until 2026-11-30)", async () => {
    const h = await harness();
    const other = createPlantgate({ storage: h.app.storage, clock: h.clock.now, logger: { error() {}, warn() {} } });
    expect((await getAccounts(other, await clientToken(h))).status).toBe(200);
    await h.app.admin.rotateSigningKey({ now: true });
    const after = await clientToken(h);
    h.clock.advance(1_000);
    const statuses = await Promise.all(Array.from({ length: 10 }, () => getAccounts(other, after).then((r) => r.status)));
    expect(statuses).toEqual(Array.from({ length: 10 }, () => 200));
  });

  it("with the longest signingKeyLoadTimeoutMs (2^31-1), requests that come during the look still wait for it (twice that bound is past what a timer takes, and fired at once: 401)", async () => {
    const h = await harness();
    // The other instance's reads of the key rows; the one made while \`slow\` is set takes 50 ms more.
    const shared = h.app.storage.signingKeys;
    let slow = false;
    const signingKeys = new Proxy(shared, {
      get: (target, name) =>
        name === "list"
          ? async () => {
              const records = await target.list();
              if (slow) {
                slow = false;
                await new Promise((r) => setTimeout(r, 50));
              }
              return records;
            }
          : (Reflect.get(target, name) as unknown),
    });
    const other = createPlantgate({ storage: { ...h.app.storage, signingKeys }, clock: h.clock.now, signingKeyLoadTimeoutMs: 2_147_483_647, logger: { error() {}, warn() {} } });
    expect((await getAccounts(other, await clientToken(h))).status).toBe(200);
    await h.app.admin.rotateSigningKey({ now: true });
    const after = await clientToken(h);
    h.clock.advance(1_000);
    slow = true;
    const statuses = await Promise.all(Array.from({ length: 5 }, () => getAccounts(other, after).then((r) => r.status)));
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
  });

  it("a look for a made-up kid that finds a key this instance has not loaded loads it: the new key's tokens are taken within that second (a flood of made-up kids held the look, and so the new key, off until the minute's reload)", async () => {
    const h = await harness();
    const other = createPlantgate({ storage: h.app.storage, clock: h.clock.now, logger: { error() {}, warn() {} } });
    expect((await getAccounts(other, await clientToken(h))).status).toBe(200);
    await h.app.admin.rotateSigningKey({ now: true });
    const after = await clientToken(h);
    const [head, payload, signature] = after.split(".");
    const madeUp = `${Buffer.from(JSON.stringify({ ...(JSON.parse(Buffer.from(head!, "base64url").toString()) as object), kid: "made-up" })).toString("base64url")}.${payload}.${signature}`;
    h.clock.advance(1_000);
    expect((await getAccounts(other, madeUp)).status).toBe(401);
    // The same second: the made-up kid's look read the key rows, the new one among them.
    expect((await getAccounts(other, after)).status).toBe(200);
  });

  it("a look whose read of the key rows ends after this instance dropped its keys (an admin rotation or prune on it, meanwhile) answers the token as before: a made-up kid is 401, not a failure", async () => {
    const h = await harness();
    // The other instance's reads of the key rows; the one made while \`hold\` is set waits for \`release\`.
    const shared = h.app.storage.signingKeys;
    let hold = false;
    let held = false;
    let release!: () => void;
    const released = new Promise<void>((go) => (release = go));
    const signingKeys = new Proxy(shared, {
      get: (target, name) =>
        name === "list"
          ? async () => {
              const records = await target.list();
              if (hold) {
                [hold, held] = [false, true];
                await released;
              }
              return records;
            }
          : (Reflect.get(target, name) as unknown),
    });
    const other = createPlantgate({ storage: { ...h.app.storage, signingKeys }, clock: h.clock.now, logger: { error() {}, warn() {} } });
    const token = await clientToken(h);
    expect((await getAccounts(other, token)).status).toBe(200);
    const [head, payload, signature] = token.split(".");
    const madeUp = `${Buffer.from(JSON.stringify({ ...(JSON.parse(Buffer.from(head!, "base64url").toString()) as object), kid: "made-up" })).toString("base64url")}.${payload}.${signature}`;
    h.clock.advance(1_000);
    // The look for the made-up kid reads the key rows (held) ...
    hold = true;
    const looked = getAccounts(other, madeUp);
    while (!held) await new Promise((r) => setTimeout(r, 5));
    // ... while an admin rotation on this instance drops its loaded keys (so does a prune that deletes a key).
    await other.admin.rotateSigningKey();
    release();
    const res = await looked;
    expect({ status: res.status, header: res.headers.get("www-authenticate") }).toEqual({ status: 401, header: expect.stringContaining('error="invalid_token"') });
    // And the token of a key it has is taken.
    expect((await getAccounts(other, token)).status).toBe(200);
  });

  it("a revocation on the other instance within that second revokes the token (it looks for the kid at once): it answered 200 and revoked nothing until 2026-11-30", async () => {
    const h = await harness();
    const other = createPlantgate({ storage: h.app.storage, clock: h.clock.now, logger: { error() {}, warn() {} } });
    expect((await getAccounts(other, await clientToken(h))).status).toBe(200);
    await h.app.admin.rotateSigningKey({ now: true });
    const after = await clientToken(h);
    h.clock.advance(500);
    const revoke = (app: Plantgate, token: string) =>
      app.fetch(
        new Request(`${BASE}/UserService/connect/revocation`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) },
          body: new URLSearchParams({ token }).toString(),
        }),
      );
    const answer = await revoke(other, after);
    expect({ status: answer.status, body: await answer.text() }).toEqual({ status: 200, body: "" });
    // Refused on the instance that issued it, and on the other (which now knows the key).
    expect([(await getAccounts(h.app, after)).status, (await getAccounts(other, after)).status]).toEqual([401, 401]);
    // A made-up kid is still an unknown token (200, nothing to revoke); each such revocation reads the key rows once.
    const [head, body, signature] = after.split(".");
    const madeUp = [btoa(JSON.stringify({ ...JSON.parse(atob(head!.replace(/-/g, "+").replace(/_/g, "/"))), kid: "no-such-kid" })).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_"), body, signature].join(".");
    const read = h.app.storage.signingKeys.list;
    let reads = 0;
    h.app.storage.signingKeys.list = (...args) => (reads++, read.apply(h.app.storage.signingKeys, args));
    const unknown = await revoke(other, madeUp);
    expect({ status: unknown.status, body: await unknown.text(), reads }).toEqual({ status: 200, body: "", reads: 1 });
    // A read that fails is the client's 503 (RFC 7009 §2.2.1: retry), not a 200 that revoked nothing.
    h.app.storage.signingKeys.list = () => Promise.reject(new StorageError("down"));
    const failed = await revoke(other, madeUp);
    expect({ status: failed.status, body: await failed.json() }).toEqual({ status: 503, body: { error: "temporarily_unavailable", error_description: expect.any(String) } });
  });

  it("with signingKeyLoadTimeoutMs: a revocation whose look for the kid, or the reload after it, is given up on answers 503, not a 200 that revoked nothing", async () => {
    const h = await harness();
    const other = createPlantgate({ storage: h.app.storage, clock: h.clock.now, signingKeyLoadTimeoutMs: 200, logger: { error() {}, warn() {} } });
    expect((await getAccounts(other, await clientToken(h))).status).toBe(200);
    await h.app.admin.rotateSigningKey({ now: true });
    const after = await clientToken(h);
    h.clock.advance(500);
    const revoke = async (token: string) => {
      const res = await other.fetch(
        new Request(`${BASE}/UserService/connect/revocation`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) },
          body: new URLSearchParams({ token }).toString(),
        }),
      );
      return { status: res.status, body: res.status === 200 ? await res.text() : await res.json() };
    };
    const unavailable = { status: 503, body: { error: "temporarily_unavailable", error_description: expect.any(String) } };
    const store = h.app.storage.signingKeys;
    const read = store.list.bind(store);
    const held: (() => void)[] = [];
    // Reads after the first `answered` ones are held open until released (past the 200 ms bound).
    const holdAfter = (answered: number) => {
      let calls = 0;
      store.list = async () => {
        const records = await read();
        if (++calls > answered) await new Promise<void>((go) => held.push(go));
        return records;
      };
    };
    // The look at the key rows is late.
    holdAfter(0);
    expect(await revoke(after)).toEqual(unavailable);
    // The look finds the kid; the reload it starts is late (the keys loaded before lack that key).
    holdAfter(1);
    expect(await revoke(after)).toEqual(unavailable);
    held.splice(0).forEach((go) => go());
    store.list = read;
    // Nothing was revoked above (a 200 there left it working where it was issued); now it is.
    expect((await getAccounts(h.app, after)).status).toBe(200);
    expect(await revoke(after)).toEqual({ status: 200, body: "" });
    expect((await getAccounts(h.app, after)).status).toBe(401);
  });

  it("a revocation whose look finds the kid, then joins a load begun before that key was stored, loads again: the token is revoked (it was answered 200 from that load's keys)", async () => {
    const h = await harness();
    // The other instance's reads of the key rows, counted; its third (the load the first revocation
    // below starts) is held once it has read them, until released.
    const shared = h.app.storage.signingKeys;
    let calls = 0;
    let release!: () => void;
    const released = new Promise<void>((go) => (release = go));
    const signingKeys = new Proxy(shared, {
      get: (target, name) =>
        name === "list"
          ? async () => {
              const call = ++calls;
              const records = await target.list();
              if (call === 3) await released;
              return records;
            }
          : (Reflect.get(target, name) as unknown),
    });
    const other = createPlantgate({ storage: { ...h.app.storage, signingKeys }, clock: h.clock.now, logger: { error() {}, warn() {} } });
    expect((await getAccounts(other, await clientToken(h))).status).toBe(200);
    expect(calls).toBe(1);
    const revoke = async (token: string) => {
      const res = await other.fetch(
        new Request(`${BASE}/UserService/connect/revocation`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) },
          body: new URLSearchParams({ token }).toString(),
        }),
      );
      return { status: res.status, body: await res.text() };
    };
    await h.app.admin.rotateSigningKey({ now: true });
    const first = await clientToken(h);
    // Its look (the second read) finds the kid; the load it starts (the third) read the keys and is held.
    const firstRevoked = revoke(first);
    while (calls < 3) await new Promise((r) => setTimeout(r, 5));
    // Another key, and a token of it, while that load is under way.
    await h.app.admin.rotateSigningKey({ now: true });
    const second = await clientToken(h);
    // Revoked twice at once (a client retrying): each look (the fourth and fifth reads) finds the
    // kid, and each joins the held load.
    const secondRevoked = [revoke(second), revoke(second)];
    while (calls < 5) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 50));
    release();
    expect(await Promise.all([firstRevoked, ...secondRevoked])).toEqual([
      { status: 200, body: "" },
      { status: 200, body: "" },
      { status: 200, body: "" },
    ]);
    // One load more (the sixth read), shared by both: neither threw the other's away.
    expect(calls).toBe(6);
    expect([(await getAccounts(h.app, first)).status, (await getAccounts(h.app, second)).status]).toEqual([401, 401]);
  });

  /** Two instances over one store, a client, and a token from either. */
  const twoInstances = (storage: Storage) => {
    const clock = manualClock();
    const make = () => createPlantgate({ storage, clock: clock.now, logger: { error() {}, warn() {} } });
    const [a, b] = [make(), make()];
    const token = async (app: Plantgate) => {
      const res = await app.fetch(
        new Request(`${BASE}/UserService/connect/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "grant_type=client_credentials&client_id=c&client_secret=c-secret-0123456789abcdef",
        }),
      );
      expect(res.status).toBe(200);
      return ((await res.json()) as { access_token: string }).access_token;
    };
    const client = () => a.admin.createClient({ clientId: "c", clientSecret: "c-secret-0123456789abcdef", grantTypes: ["client_credentials"], scopes: ["Platform_UserAPIs"] });
    return { clock, a, b, token, client };
  };

  it("two instances loading their keys at once on an empty store end with one key: both sign with it and take each other's tokens at once", async () => {
    const storage = createMemoryStorage();
    const { a, b, token, client } = twoInstances(storage);
    await client();
    await Promise.all([a.jwks(), b.jwks()]);
    const stored = await storage.signingKeys.list();
    expect(stored.map((k) => k.kid)).toHaveLength(1);
    const [fromA, fromB] = [await token(a), await token(b)];
    expect([kidOf(fromA), kidOf(fromB)]).toEqual([stored[0]!.kid, stored[0]!.kid]);
    expect([(await getAccounts(a, fromB)).status, (await getAccounts(b, fromA)).status]).toEqual([200, 200]);
  });

  it("a store without signingKeys.createIfEmpty (written before it): two instances that each stored a first key take each other's tokens a second later", async () => {
    const memory = createMemoryStorage();
    const { createIfEmpty: _, ...keys } = memory.signingKeys;
    const storage = { ...memory, signingKeys: keys };
    const { clock, a, b, token, client } = twoInstances(storage);
    await client();
    // Each loads the keys while the store is still empty, so each makes a first key.
    await Promise.all([a.jwks(), b.jwks()]);
    const [fromA, fromB] = [await token(a), await token(b)];
    expect((await storage.signingKeys.list()).length).toBe(2);
    clock.advance(1_000);
    expect([(await getAccounts(a, fromB)).status, (await getAccounts(b, fromA)).status]).toEqual([200, 200]);
  });

  it("tokens with made-up kids cost one read of the key rows a second, however many come: no reload, no read of the clients", async () => {
    // The store's own calls counted (app.storage may hand out wrapped stores).
    const storage = createMemoryStorage();
    let reads = 0;
    let clientReads = 0;
    const list = storage.signingKeys.list.bind(storage.signingKeys);
    storage.signingKeys.list = () => {
      reads++;
      return list();
    };
    const clients = storage.clients.list.bind(storage.clients);
    storage.clients.list = () => {
      clientReads++;
      return clients();
    };
    // A reload asks the longest client lifetime (this store has the method, so no list()): counted too.
    const longest = storage.clients.maxAccessTokenTtl!.bind(storage.clients);
    storage.clients.maxAccessTokenTtl = () => {
      clientReads++;
      return longest();
    };
    const h = await harness({ storage });
    const token = await clientToken(h);
    // Two keys (the active one and a next one): a reload reads every client for the longest token lifetime.
    await h.app.admin.rotateSigningKey();
    expect((await storage.signingKeys.list()).length).toBe(2);
    await clientToken(h);
    const [head, payload, signature] = token.split(".");
    [reads, clientReads] = [0, 0];
    const forged = (i: number) => {
      const header = { ...(JSON.parse(Buffer.from(head!, "base64url").toString()) as object), kid: `made-up-${i}` };
      return `${Buffer.from(JSON.stringify(header)).toString("base64url")}.${payload}.${signature}`;
    };
    h.clock.advance(1_000);
    for (let i = 0; i < 50; i++) expect((await getAccounts(h.app, forged(i))).status).toBe(401);
    expect(reads).toBe(1);
    h.clock.advance(1_000);
    for (let i = 50; i < 100; i++) expect((await getAccounts(h.app, forged(i))).status).toBe(401);
    expect([reads, clientReads]).toEqual([2, 0]);
  });
});

describe("a replayed token of a key no longer trusted", () => {
  it("its kid, still stored until prune, makes no reload: one look at the key rows a second, no lifetime asked", async () => {
    const storage = createMemoryStorage();
    const calls = { rows: 0, longest: 0 };
    const list = storage.signingKeys.list.bind(storage.signingKeys);
    storage.signingKeys.list = () => {
      calls.rows++;
      return list();
    };
    const longest = storage.clients.maxAccessTokenTtl!.bind(storage.clients);
    storage.clients.maxAccessTokenTtl = () => {
      calls.longest++;
      return longest();
    };
    const h = await harness({ storage });
    const old = await clientToken(h);
    await h.app.admin.rotateSigningKey({ now: true });
    // Past the old key's time (the longest lifetime, 7200 s, plus the reload minute): no longer trusted.
    h.clock.advance(7200_000 + 61_000);
    expect((await getAccounts(h.app, await clientToken(h))).status).toBe(200);
    expect(await jwksKids(h.app)).not.toContain(kidOf(old));
    expect((await storage.signingKeys.list()).map((k) => k.kid)).toContain(kidOf(old));
    [calls.rows, calls.longest] = [0, 0];
    for (let second = 0; second < 5; second++) {
      h.clock.advance(1_000);
      for (let i = 0; i < 10; i++) expect((await getAccounts(h.app, old)).status).toBe(401);
    }
    expect(calls).toEqual({ rows: 5, longest: 0 });
  });
});

describe("pre-publication (keys rotate without --now)", () => {
  it("the new key is published at once as next and signs only at its stored activation time (360 s later by default)", async () => {
    const h = await harness();
    const k1 = kidOf(await clientToken(h));
    const rotatedAt = h.clock.now();
    const { kid: k2, activatesAt, deleted } = await h.app.admin.rotateSigningKey();
    expect([activatesAt, deleted]).toEqual([rotatedAt + 360_000, []]);
    expect(await jwksKids(h.app)).toEqual([k1, k2].sort());
    expect(await h.app.admin.listSigningKeys()).toEqual([
      { kid: k2, alg: "ES256", createdAt: rotatedAt + 1, activatesAt, retiredAt: null, status: "next", stored: true, atRest: "clear", kek: null, kekStatus: null },
      { kid: k1, alg: "ES256", createdAt: rotatedAt, activatesAt: rotatedAt, retiredAt: null, status: "active", stored: true, atRest: "clear", kek: null, kekStatus: null },
    ]);
    // Right after the rotation, and until the last millisecond before activation, tokens carry the old kid and verify.
    const right = await clientToken(h);
    expect(kidOf(right)).toBe(k1);
    expect((await getAccounts(h.app, right)).status).toBe(200);
    h.clock.advance(360_000 - 1);
    expect(kidOf(await clientToken(h))).toBe(k1);
    h.clock.advance(1);
    const switched = await clientToken(h);
    expect(kidOf(switched)).toBe(k2);
    expect(await status(h.app)).toEqual([
      { kid: k2, status: "active" },
      { kid: k1, status: "retired" },
    ]);
    expect((await h.app.admin.listSigningKeys())[1]!.retiredAt).toBe(activatesAt);
    for (const t of [right, switched]) expect((await getAccounts(h.app, t)).status).toBe(200);
    // The old key is prunable once the longest lifetime + the reload minute have passed since the new one took over.
    h.clock.advance(7260_000 - 1);
    expect((await status(h.app))[1]!.status).toBe("retired");
    h.clock.advance(1);
    expect((await status(h.app))[1]!.status).toBe("prunable");
  });

  it("another instance publishes the next key within the reload minute and switches at the stored instant, not at its next reload", async () => {
    const h = await harness();
    const other = createPlantgate({ storage: h.app.storage, clock: h.clock.now, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    const k1 = kidOf(await clientToken(h));
    expect(await jwksKids(other)).toEqual([k1]);
    const { kid: k2, activatesAt } = await h.app.admin.rotateSigningKey();
    h.clock.advance(60_000);
    expect(await jwksKids(other)).toEqual([k1, k2].sort());
    // The other instance re-reads 30 s before the activation, so no reload falls between here and it.
    h.clock.advance(activatesAt - 30_000 - h.clock.now());
    expect(await jwksKids(other)).toEqual([k1, k2].sort());
    const otherToken = async () => {
      const res = await other.fetch(
        new Request(`${BASE}/UserService/connect/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Basic " + btoa(`${h.clientId}:${h.clientSecret}`) },
          body: "grant_type=client_credentials",
        }),
      );
      expect(res.status).toBe(200);
      return ((await res.json()) as { access_token: string }).access_token;
    };
    h.clock.advance(30_000 - 1);
    expect([kidOf(await otherToken()), kidOf(await clientToken(h))]).toEqual([k1, k1]);
    h.clock.advance(1);
    expect([kidOf(await otherToken()), kidOf(await clientToken(h))]).toEqual([k2, k2]);
  });

  it("the first key of a store without any, made by a rotation (the CLI after migrate), signs at once and says so: status active, the event's immediate true", async () => {
    const events: { type: string; immediate?: boolean; activates_at?: number }[] = [];
    const h = await harness({ onEvent: (e) => void events.push(e as never) });
    const { kid, activatesAt, status } = await h.app.admin.rotateSigningKey();
    expect([activatesAt, status]).toEqual([h.clock.now(), "active"]);
    expect(events.filter((e) => e.type === "signing_key.rotated").map((e) => [e.immediate, e.activates_at])).toEqual([[true, h.clock.now()]]);
    expect(kidOf(await clientToken(h))).toBe(kid);
  });

  it("signingKeyActivationDelaySeconds sets the delay; less than the JWKS cache lifetime + reload interval (360 s) is refused", async () => {
    const h = await harness({ signingKeyActivationDelaySeconds: 14 * 86_400 });
    // A key signs already (the first key of a store without any signs at once: see below).
    await clientToken(h);
    const { activatesAt, status } = await h.app.admin.rotateSigningKey();
    expect([activatesAt, status]).toEqual([h.clock.now() + 14 * 86_400_000, "next"]);
    expect(() => createPlantgate({ signingKeyActivationDelaySeconds: 359 })).toThrow(
      new TypeError("signingKeyActivationDelaySeconds must be an integer of at least 360 (the JWKS cache lifetime plus the key reload interval)"),
    );
    const jwks = await h.app.fetch(new Request(`${BASE}/.well-known/jwks.json`));
    expect(jwks.headers.get("cache-control")).toBe("public, max-age=300");
  });

  it("a --now rotation while a key is scheduled signs at once and deletes the scheduled key (made before the leak), which so never takes over", async () => {
    const h = await harness();
    const k1 = kidOf(await clientToken(h));
    const scheduled = await h.app.admin.rotateSigningKey();
    h.clock.advance(1000);
    const urgent = await h.app.admin.rotateSigningKey({ now: true });
    expect(urgent).toEqual({ kid: urgent.kid, activatesAt: h.clock.now(), status: "active", deleted: [], cancelled: [scheduled.kid] });
    expect(kidOf(await clientToken(h))).toBe(urgent.kid);
    expect(await status(h.app)).toEqual([
      { kid: urgent.kid, status: "active" },
      { kid: k1, status: "retired" },
    ]);
    // Until 2026-12-02 the scheduled key took over here.
    h.clock.advance(scheduled.activatesAt - h.clock.now());
    expect(kidOf(await clientToken(h))).toBe(urgent.kid);
    expect(await jwksKids(h.app)).toEqual([k1, urgent.kid].sort());
  });
});

describe("automatic rotation by age (signingKeyMaxAgeSeconds)", () => {
  it("schedules the next key ahead of time; racing instances publish it and switch to the same key at the same instant", async () => {
    const clock = manualClock();
    const t0 = clock.now();
    const storage = (await harness()).app.storage;
    const make = () =>
      createPlantgate({ storage, clock: clock.now, signingKeyMaxAgeSeconds: 3600, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    const a = make();
    const b = make();
    const { clientSecret } = await a.admin.createClient({ clientId: "auto" });
    const token = async (app: Plantgate) => {
      const res = await app.fetch(
        new Request(`${BASE}/UserService/connect/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Basic " + btoa(`auto:${clientSecret}`) },
          body: "grant_type=client_credentials",
        }),
      );
      expect(res.status).toBe(200);
      return ((await res.json()) as { access_token: string }).access_token;
    };
    const first = kidOf(await token(a));
    expect(kidOf(await token(b))).toBe(first);
    // The next key is due 3600 - 360 (delay) - 60 (reload) = 3180 s after the first activated.
    clock.advance(3179 * 1000);
    await Promise.all([token(a), token(b)]);
    expect(await storage.signingKeys.list()).toHaveLength(1);
    clock.advance(60_000);
    const [ta, tb] = await Promise.all([token(a), token(b)]);
    expect([kidOf(ta), kidOf(tb)]).toEqual([first, first]);
    const keys = await storage.signingKeys.list();
    const scheduled = keys.filter((k) => k.kid !== first);
    // Each racing instance may have stored one; every one is due at the same instant.
    expect(scheduled.length).toBeGreaterThanOrEqual(1);
    expect(scheduled.length).toBeLessThanOrEqual(2);
    for (const k of scheduled) expect(k.activatesAt).toBe(t0 + 3600_000);
    const winner = [...scheduled].sort((x, y) => x.createdAt - y.createdAt || (x.kid < y.kid ? -1 : 1)).at(-1)!.kid;
    // Within one reload minute both publish every scheduled key (including the one the other stored).
    clock.advance(60_000);
    for (const app of [a, b]) expect(await jwksKids(app)).toEqual([first, ...scheduled.map((k) => k.kid)].sort());
    expect((await a.admin.listSigningKeys()).find((k) => k.kid === winner)!.status).toBe("next");
    clock.advance(t0 + 3600_000 - 1 - clock.now());
    expect([kidOf(await token(a)), kidOf(await token(b))]).toEqual([first, first]);
    clock.advance(1);
    const [na, nb] = await Promise.all([token(a), token(b)]);
    expect([kidOf(na), kidOf(nb)]).toEqual([winner, winner]);
    // Tokens of every key in play verify on both instances.
    for (const t of [ta, tb, na, nb]) {
      expect((await getAccounts(a, t)).status).toBe(200);
      expect((await getAccounts(b, t)).status).toBe(200);
    }
    // Later automatic rotations delete keys no live token can carry (replaced > 7200 s + 1 min ago).
    for (let i = 0; i < 16; i++) {
      clock.advance(900_000);
      await token(a);
    }
    const left = (await storage.signingKeys.list()).map((k) => k.kid);
    expect(left).not.toContain(first);
    expect(left.length).toBeLessThanOrEqual(5);
  });

  it("a configured signingKey is never rotated automatically", async () => {
    const jwk = JSON.parse((await generateKeyRecord("ES256", 0)).privateJwk) as JWK;
    const clock = manualClock();
    // 420: the least max age the default activation delay keeps (60 was taken until 2026-12-01).
    const app = createPlantgate({ signingKey: jwk, signingKeyMaxAgeSeconds: 420, clock: clock.now, logger: { error() {}, warn() {} } });
    const before = await app.jwks();
    clock.advance(3600 * 1000);
    expect(await app.jwks()).toEqual(before);
    expect((await app.admin.listSigningKeys()).map((k) => k.status)).toEqual(["active"]);
  });

  it("rotateSigningKey with a configured signingKey is an AdminError and deletes nothing, even a configured key older than another stored key", async () => {
    const jwk = JSON.parse((await generateKeyRecord("ES256", 0)).privateJwk) as JWK;
    const clock = manualClock();
    const quiet = { error() {}, warn() {} };
    const configured = createPlantgate({ signingKey: jwk, clock: clock.now, passwordHashIterations: 1000, logger: quiet });
    // Listed before any load: the configured key signs, not stored yet (listing stores nothing).
    const [configuredKid] = (await configured.admin.listSigningKeys()).map((k) => k.kid);
    expect(await configured.admin.listSigningKeys()).toEqual([
      { kid: configuredKid, alg: "ES256", createdAt: clock.now(), activatesAt: clock.now(), retiredAt: null, status: "active", stored: false, atRest: null, kek: null, kekStatus: null },
    ]);
    expect(await configured.storage.signingKeys.list()).toEqual([]);
    await configured.jwks(); // stored by the first load, as at a server's start
    // Later, an instance without the option (a CLI run without the env variable) rotates once.
    clock.advance(60_000);
    const plain = createPlantgate({ storage: configured.storage, clock: clock.now, passwordHashIterations: 1000, logger: quiet });
    const { kid: newer } = await plain.admin.rotateSigningKey();
    // Long after every token could have expired, a rotation on the configured instance is refused.
    clock.advance(24 * 3600 * 1000);
    await expect(configured.admin.rotateSigningKey()).rejects.toThrow(
      new AdminError("The signing key is configured (signingKey / PLANTGATE_SIGNING_KEY); rotate it by changing the configured key."),
    );
    expect((await configured.storage.signingKeys.list()).map((k) => k.kid).sort()).toEqual([configuredKid, newer].sort());
    // The configured key still signs and verifies.
    expect((await configured.admin.listSigningKeys()).find((k) => k.kid === configuredKid)!.status).toBe("active");
    expect(((await configured.jwks()).keys as { kid: string }[]).map((k) => k.kid)).toContain(configuredKid);
  });

  it("a rotation (an administrator's, or automatic) deletes at most ROTATION_KEY_DELETES prunable keys, the oldest first, in its request; the others stay prunable for the next rotation or the prune", async () => {
    const clock = manualClock();
    const day = 24 * 3600 * 1000;
    /** A store of 10 keys rotated a second apart ten days ago (the newest signs, the 9 before it are prunable), its deletes counted. */
    const seeded = async () => {
      const storage = createMemoryStorage();
      const t0 = clock.now() - 10 * day;
      for (let i = 0; i < 10; i++) await storage.signingKeys.create(await generateKeyRecord("ES256", t0 + i * 1000, t0 + i * 1000));
      const oldestFirst = (await storage.signingKeys.list()).sort((a, b) => a.activatesAt - b.activatesAt).map((k) => k.kid);
      const counted = { deletes: 0 };
      const real = storage.signingKeys.delete.bind(storage.signingKeys);
      storage.signingKeys.delete = (kid) => (counted.deletes++, real(kid));
      return { storage, oldestFirst, counted };
    };
    expect(ROTATION_KEY_DELETES).toBe(2);

    // An administrator's rotation (the CLI's keys rotate, the console's button).
    const manual = await seeded();
    const admin = createPlantgate({ storage: manual.storage, clock: clock.now, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    const rotated = await admin.admin.rotateSigningKey();
    expect(rotated.deleted).toEqual(manual.oldestFirst.slice(0, 2));
    expect(manual.counted.deletes).toBe(2);
    // What is left is as it was: the other 7 still prunable (deleting the oldest first moves no
    // other key's retirement), the newest active, the rotated one next.
    expect((await status(admin)).map((k) => k.status)).toEqual(["next", "active", ...Array(7).fill("prunable")]);
    expect((await status(admin)).slice(2).map((k) => k.kid)).toEqual(manual.oldestFirst.slice(2, 9).reverse());
    // The next rotation takes the next two; the prune (no budget) the other 5.
    expect((await admin.admin.rotateSigningKey()).deleted).toEqual(manual.oldestFirst.slice(2, 4));
    expect((await admin.admin.prune()).signingKeys).toBe(5);
    expect(manual.counted.deletes).toBe(2 + 2 + 5);

    // Automatic rotation, at a load of the keys (the active key is ten days old: due).
    const automatic = await seeded();
    const told: { kid: string; deleted: string[] }[] = [];
    const auto = createPlantgate({
      storage: automatic.storage,
      clock: clock.now,
      signingKeyMaxAgeSeconds: 3600,
      passwordHashIterations: 1000,
      logger: { error() {}, warn() {} },
      onEvent: (e) => void (e.type === "signing_key.rotated" && told.push({ kid: e.kid, deleted: e.deleted })),
    });
    const res = await auto.fetch(new Request(`${BASE}/.well-known/jwks.json`));
    expect(res.status).toBe(200);
    const stored = (await automatic.storage.signingKeys.list()).map((k) => k.kid);
    const next = stored.find((kid) => !automatic.oldestFirst.includes(kid))!;
    expect(((await res.json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid).sort()).toEqual([automatic.oldestFirst[9], next].sort());
    expect(automatic.counted.deletes).toBe(2);
    expect(stored.sort()).toEqual([...automatic.oldestFirst.slice(2), next].sort());
    await new Promise((r) => setTimeout(r, 0));
    expect(told).toEqual([{ kid: next, deleted: automatic.oldestFirst.slice(0, 2) }]);
  });

  it("pruneKeys never deletes the active key, even one older than a long-retired newer key", async () => {
    const storage = createMemoryStorage();
    const older = await generateKeyRecord("ES256", 0);
    const middle = await generateKeyRecord("ES256", 1000);
    const newest = await generateKeyRecord("ES256", 2000);
    for (const r of [older, middle, newest]) await storage.signingKeys.create(r);
    const day = 24 * 3600 * 1000;
    // With the oldest as the active (configured) key, only the long-replaced middle one goes.
    expect(await pruneKeys(storage.signingKeys, day, 7200_000, older.kid)).toEqual([middle.kid]);
    expect((await storage.signingKeys.list()).map((k) => k.kid).sort()).toEqual([older.kid, newest.kid].sort());
    // Without an active kid the newest is taken as active, and the oldest is then prunable.
    expect(await pruneKeys(storage.signingKeys, day, 7200_000)).toEqual([older.kid]);
  });

  it("rejects a non-positive signingKeyMaxAgeSeconds", () => {
    expect(() => createPlantgate({ signingKeyMaxAgeSeconds: 0 })).toThrow("signingKeyMaxAgeSeconds must be a positive integer");
  });
});

describe("the activation delay counts from after the key's generation (since 2026-12-03)", () => {
  /**
   * An RS256 key takes a while to generate: until 2026-12-03 its activation time was counted from
   * the clock read before, so an instance whose re-read fell within the generation published the key
   * a reload interval later, the generation's time after the delay's margin. Here each generation
   * moves the test's clock 2 s, as a slow one would.
   */
  async function withSlowGeneration<T>(clock: ReturnType<typeof manualClock>, run: () => Promise<T>): Promise<T> {
    const subtle = globalThis.crypto.subtle;
    const generateKey = subtle.generateKey.bind(subtle) as (...args: unknown[]) => Promise<unknown>;
    const spy = vi.spyOn(subtle, "generateKey").mockImplementation((async (...args: unknown[]) => {
      const key = await generateKey(...args);
      clock.advance(2_000);
      return key;
    }) as typeof subtle.generateKey);
    try {
      return await run();
    } finally {
      spy.mockRestore();
    }
  }

  it("admin.rotateSigningKey: activatesAt is the delay after the generation ended, in its answer, its event and the store", async () => {
    const clock = manualClock();
    const events: { type: string; activates_at?: number }[] = [];
    const app = createPlantgate({ clock: clock.now, passwordHashIterations: 1000, onEvent: (e) => void events.push(e as never), logger: { error() {}, warn() {} } });
    await app.admin.rotateSigningKey(); // the first key (signs at once)
    const asked = clock.now();
    const rotated = await withSlowGeneration(clock, () => app.admin.rotateSigningKey());
    expect(rotated).toMatchObject({ status: "next", activatesAt: asked + 2_000 + 360_000 });
    // Created a millisecond after the first key (strictly newer than every key, same clock instant).
    expect((await app.storage.signingKeys.list()).find((k) => k.kid === rotated.kid)).toMatchObject({ createdAt: asked + 1, activatesAt: asked + 2_000 + 360_000 });
    await new Promise((r) => setTimeout(r, 0));
    expect(events.filter((e) => e.type === "signing_key.rotated").at(-1)).toMatchObject({ activates_at: asked + 2_000 + 360_000 });
  });

  it("with key encryption: the delay counts from after the seal too (a KEK held remotely may take as long), for both rotations", async () => {
    const clock = manualClock();
    const kek = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32)))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    const subtle = globalThis.crypto.subtle;
    const encrypt = subtle.encrypt.bind(subtle) as (...args: unknown[]) => Promise<ArrayBuffer>;
    const slowSeal = vi.spyOn(subtle, "encrypt").mockImplementation((async (...args: unknown[]) => {
      const out = await encrypt(...args);
      clock.advance(3_000);
      return out;
    }) as typeof subtle.encrypt);
    try {
      const app = createPlantgate({ clock: clock.now, keyEncryptionKeys: [kek], signingKeyMaxAgeSeconds: 3600, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
      expect((await app.fetch(new Request(`${BASE}/.well-known/jwks.json`))).status).toBe(200); // the first key, sealed
      const asked = clock.now();
      const rotated = await withSlowGeneration(clock, () => app.admin.rotateSigningKey());
      // 2 s of generation and 3 s of seal before the clock is read.
      expect(rotated.activatesAt).toBe(asked + 2_000 + 3_000 + 360_000);
      expect((await app.storage.signingKeys.list()).find((k) => k.kid === rotated.kid)?.activatesAt).toBe(asked + 2_000 + 3_000 + 360_000);
      // The automatic one, due late (past the first key's whole age, and past the rotated key's activation).
      clock.advance(7_300_000);
      const before = new Set((await app.storage.signingKeys.list()).map((k) => k.kid));
      const due = clock.now();
      expect((await withSlowGeneration(clock, () => app.fetch(new Request(`${BASE}/.well-known/jwks.json`)))).status).toBe(200);
      const next = (await app.storage.signingKeys.list()).find((k) => !before.has(k.kid));
      expect(next?.activatesAt).toBe(due + 2_000 + 3_000 + 360_000);
    } finally {
      slowSeal.mockRestore();
    }
  });

  it("automatic rotation due late: the successor activates the delay after its generation ended", async () => {
    const clock = manualClock();
    const app = createPlantgate({ clock: clock.now, signingKeyMaxAgeSeconds: 3600, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    const jwks = () => app.fetch(new Request(`${BASE}/.well-known/jwks.json`));
    expect((await jwks()).status).toBe(200);
    const [first] = await app.storage.signingKeys.list();
    // Past the key's whole age: the successor is due the delay from now, not at its age.
    clock.advance(3_700_000);
    const asked = clock.now();
    expect((await withSlowGeneration(clock, jwks)).status).toBe(200);
    const next = (await app.storage.signingKeys.list()).find((k) => k.kid !== first!.kid);
    expect(next).toMatchObject({ createdAt: asked, activatesAt: asked + 2_000 + 360_000 });
  });
});
