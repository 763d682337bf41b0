/**
 * Replacing a configured `signingKey` (README "Replacing a configured key") with a gradual
 * deployment, two instances on one store: A (old version) pinned to k-old, B (new version) pinned
 * to k-new. Until 2026-12-02 a key's retirement came only from its successor's activation, so
 * (a) once B had run longer than the access-token lifetime + 60 s it refused A's fresh tokens and
 * dropped k-old from its JWKS, and (b) k-old, pruned by B and stored again by A, sorted after B's
 * key and was published and trusted by B for good, a day after A went. Now each pinned instance
 * stamps its key's `lastSignedAt` at every load of the keys (`signingKeys.markSigning`), and a key
 * is retired no earlier than its last stamp.
 */
import { generateKeyPairSync } from "node:crypto";
import { SignJWT, importJWK } from "jose";
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, type Plantgate, type Storage } from "../src/index.js";
import { getAccounts } from "./api-helpers.js";
import { BASE, basic, manualClock, tokenRequest } from "./helpers.js";

const TTL_MS = 7200_000;
const quiet = { error() {}, warn() {} };

function privateJwk(kid: string): JsonWebKey & { kid: string; alg: string } {
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return { ...(privateKey.export({ format: "jwk" }) as JsonWebKey), kid, alg: "ES256" };
}

async function token(app: Plantgate, secret: string): Promise<string> {
  const res = await tokenRequest(app, { grant_type: "client_credentials", scope: "Platform_UserAPIs" }, { authorization: basic("svc", secret) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

const jwksKids = async (app: Plantgate) => ((await (await app.fetch(new Request(`${BASE}/.well-known/jwks.json`))).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid).sort();
const listed = async (app: Plantgate) => (await app.admin.listSigningKeys()).map((k) => ({ kid: k.kid, status: k.status, retiredAt: k.retiredAt }));

function setup(storage: Storage = createMemoryStorage()) {
  const clock = manualClock();
  const kOld = privateJwk("k-old");
  const kNew = privateJwk("k-new");
  const make = (key: JsonWebKey) => createPlantgate({ storage, clock: clock.now, passwordHashIterations: 1000, logger: quiet, signingKey: key as never });
  return { storage, clock, kOld, kNew, a: make(kOld), b: () => make(kNew) };
}

describe("a configured signingKey replaced by a gradual deployment (two instances, one store)", () => {
  it("the old version's key stays trusted and published on the new version while the old version signs with it, and goes a token lifetime + 60 s after it last did", async () => {
    const { storage, clock, a, b: makeB } = setup();
    const { clientSecret } = await a.admin.createClient({ clientId: "svc", scopes: ["Platform_UserAPIs"] });
    await token(a, clientSecret);
    clock.advance(10_000);
    const b = makeB();
    const bStarted = clock.now();
    await token(b, clientSecret);

    // The deployment goes on past the token lifetime + the reload minute; A keeps serving.
    for (let step = 0; step < 3; step++) {
      clock.advance(TTL_MS / 2 + 61_000);
      const fromA = await token(a, clientSecret);
      expect((await getAccounts(b, fromA)).status).toBe(200);
      expect(await jwksKids(b)).toEqual(["k-new", "k-old"]);
    }
    const lastSigned = clock.now();
    expect((await storage.signingKeys.list()).find((r) => r.kid === "k-old")?.lastSignedAt).toBe(lastSigned);
    expect(await listed(b)).toEqual([
      { kid: "k-new", status: "active", retiredAt: null },
      { kid: "k-old", status: "retired", retiredAt: lastSigned },
    ]);
    // B's stamps are on its own key; A's stamp kept k-old from being pruned.
    expect((await b.admin.prune()).signingKeys).toBe(0);
    expect((await storage.signingKeys.list()).find((r) => r.kid === "k-new")?.lastSignedAt).toBeGreaterThan(bStarted);

    // A's last token, signed just before its next load would stamp again; then A is gone.
    clock.advance(59_999);
    const lastOfA = await token(a, clientSecret);
    expect((await storage.signingKeys.list()).find((r) => r.kid === "k-old")?.lastSignedAt).toBe(lastSigned);
    clock.advance(TTL_MS - 1_000);
    expect((await getAccounts(b, lastOfA)).status).toBe(200);
    expect(await jwksKids(b)).toEqual(["k-new", "k-old"]);
    expect((await b.admin.prune()).signingKeys).toBe(0);
    // The token lifetime + 60 s after the stamp: no token A signed can be alive.
    clock.advance(1_001);
    expect(clock.now()).toBe(lastSigned + TTL_MS + 60_000);
    expect(await listed(b)).toEqual([
      { kid: "k-new", status: "active", retiredAt: null },
      { kid: "k-old", status: "prunable", retiredAt: lastSigned },
    ]);
    expect(await jwksKids(b)).toEqual(["k-new"]);
    expect((await b.admin.prune()).signingKeys).toBe(1);
    expect((await storage.signingKeys.list()).map((r) => r.kid)).toEqual(["k-new"]);
  });

  it("a replaced key pruned by the new version and stored again by an old-version instance is trusted while that instance signs, and not a day after it went", async () => {
    const { storage, clock, kOld, a, b: makeB } = setup();
    const { clientSecret } = await a.admin.createClient({ clientId: "svc", scopes: ["Platform_UserAPIs"] });
    await token(a, clientSecret);
    clock.advance(10_000);
    const b = makeB();
    await token(b, clientSecret);
    // A serves nothing for longer than a token lifetime: B's prune deletes k-old.
    clock.advance(TTL_MS + 61_000);
    expect((await b.admin.prune()).signingKeys).toBe(1);

    // A (or a rollback to the old version) loads the keys again: k-old is stored again, after k-new.
    const restored = clock.now();
    const fromA = await token(a, clientSecret);
    expect((await storage.signingKeys.list()).find((r) => r.kid === "k-old")).toMatchObject({ activatesAt: restored, lastSignedAt: restored });
    expect((await getAccounts(b, fromA)).status).toBe(200);
    expect(await listed(b)).toEqual([
      { kid: "k-old", status: "retired", retiredAt: restored },
      { kid: "k-new", status: "active", retiredAt: null },
    ]);

    // The old version is gone for a day; whoever holds the leaked k-old mints a token.
    clock.advance(24 * 3600_000);
    const iat = Math.floor(clock.now() / 1000);
    const forged = await new SignJWT({ client_id: "svc", scope: "Platform_UserAPIs", jti: "forged-1" })
      .setProtectedHeader({ alg: "ES256", kid: "k-old", typ: "at+jwt" })
      .setIssuer(BASE)
      .setSubject("client:svc")
      .setAudience(BASE)
      .setIssuedAt(iat)
      .setExpirationTime(iat + 600)
      .sign(await importJWK(kOld, "ES256"));
    expect((await getAccounts(b, forged)).status).toBe(401);
    expect(await jwksKids(b)).toEqual(["k-new"]);
    expect(await listed(b)).toEqual([
      { kid: "k-old", status: "prunable", retiredAt: restored },
      { kid: "k-new", status: "active", retiredAt: null },
    ]);
    expect((await b.admin.prune()).signingKeys).toBe(1);
    expect((await storage.signingKeys.list()).map((r) => r.kid)).toEqual(["k-new"]);
  });

  it("a store without markSigning (written before it) keeps the behaviour from before: nothing stamped, k-old retired when k-new activated", async () => {
    const memory = createMemoryStorage();
    const { markSigning: _dropped, ...keys } = memory.signingKeys;
    const { clock, a, b: makeB } = setup({ ...memory, signingKeys: keys });
    const { clientSecret } = await a.admin.createClient({ clientId: "svc", scopes: ["Platform_UserAPIs"] });
    await token(a, clientSecret);
    clock.advance(10_000);
    const b = makeB();
    await token(b, clientSecret);
    const bActivated = (await memory.signingKeys.list()).find((r) => r.kid === "k-new")!.activatesAt;
    clock.advance(TTL_MS + 61_000);
    const fromA = await token(a, clientSecret);
    expect((await memory.signingKeys.list()).map((r) => r.lastSignedAt)).toEqual([undefined, undefined]);
    expect((await getAccounts(b, fromA)).status).toBe(401);
    expect(await listed(b)).toEqual([
      { kid: "k-new", status: "active", retiredAt: null },
      { kid: "k-old", status: "prunable", retiredAt: bActivated },
    ]);
  });
});
