/**
 * private_key_jwt client assertions (RFC 7523) under generated input: malformed JWTs (random
 * segments, bad base64url, non-JSON, truncation), wrong and forbidden algorithms (none, HMAC, an
 * algorithm the key is not for), claims off by one rule each, another key, huge assertions and
 * replays, a `jti` or `sub` holding an unpaired surrogate (a JSON `\ud800` escape: refused since
 * 2026-11-30, with its own description). Every one is a 401 invalid_client (400 invalid_request only
 * when the form itself breaks its documented caps), never a 5xx, never a token, and the answer never
 * echoes the assertion.
 */
import { createPlantgate, type Plantgate } from "@plantgate/core";
import fc from "fast-check";
import { CompactSign, exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { afterAll, beforeAll, expect, it } from "vitest";
import { fail, noServerError, oauthError, read } from "../src/invariants.js";
import { COVERAGE_CHECKS, SEED } from "../src/settings.js";
import { NOW, openStore, TOKEN_PATH } from "../src/world.js";

const ISSUER = "https://as.example";
const TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const CLIENT = "signed-client";
const RUNS = Math.min(Number(process.env.HOSTILE_RUNS ?? 2000), 2000);

let app: Plantgate;
let closeStore = async () => {};
let key: CryptoKey;
let stranger: CryptoKey;
let n = 0;

const b64 = (s: string) => btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

beforeAll(async () => {
  // The store the run names (HOSTILE_STORE, HOSTILE_REDIS): used jtis are written there.
  const store = await openStore(SEED, () => NOW);
  closeStore = () => store.close();
  app = createPlantgate({ storage: store.storage, issuer: ISSUER, clock: () => NOW, logger: { error() {}, warn() {} }, bruteForce: false });
  const pair = await generateKeyPair("ES256", { extractable: true });
  key = pair.privateKey;
  stranger = (await generateKeyPair("ES256")).privateKey;
  await app.admin.createClient({ clientId: CLIENT, authMethod: "private_key_jwt", jwks: { keys: [{ ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "ES256" }] } });
});

afterAll(() => closeStore());

type Mutation =
  | { kind: "claims"; claims: Record<string, unknown>; header: Record<string, unknown>; other: boolean }
  | { kind: "raw"; text: string }
  | { kind: "segments"; parts: string[] }
  | { kind: "truncate"; at: number }
  | { kind: "huge"; size: number }
  | { kind: "unsigned"; alg: string };

/**
 * A string with at least one unpaired surrogate (a high one not followed by a low one, or a low one
 * not after a high one) among any other code points: fast-check's strings never hold one ('binary'
 * leaves half pairs out), so it is put in. `binary` code points are whole (a pair is high then low),
 * so the surrogate stays unpaired whatever surrounds it.
 */
const loneSurrogateString = (maxUnits: number) =>
  fc
    // At most maxUnits UTF-16 units: a code point is one or two.
    .tuple(fc.string({ unit: "binary", maxLength: 4 }), fc.integer({ min: 0xd800, max: 0xdfff }), fc.string({ unit: "binary", maxLength: Math.floor((maxUnits - 1) / 2) - 4 }))
    .map(([before, unit, after]) => before + String.fromCharCode(unit) + after);

/** Whether `s` holds an unpaired surrogate (what core's `isWellFormed` refuses). */
const hasLoneSurrogate = (s: string) => /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);

const jsonValue = fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }));

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  // Valid by construction (a fresh jti each time), so acceptance and the replay check run too.
  fc.constant<Mutation>({ kind: "claims", claims: {}, header: {}, other: false }),
  // Valid but for a jti or a sub with an unpaired surrogate: each refused with its own description.
  fc.record({ kind: fc.constant("claims" as const), claims: fc.record({ jti: loneSurrogateString(256) }), header: fc.constant({}), other: fc.constant(false) }),
  fc.record({ kind: fc.constant("claims" as const), claims: fc.record({ sub: loneSurrogateString(64), iss: fc.oneof(fc.constant(CLIENT), loneSurrogateString(64)) }), header: fc.constant({}), other: fc.boolean() }),
  fc.record({
    kind: fc.constant("claims" as const),
    claims: fc.record(
      {
        iss: fc.oneof(fc.constant(CLIENT), fc.constant("other"), jsonValue),
        sub: fc.oneof(fc.constant(CLIENT), fc.constant("other"), jsonValue, loneSurrogateString(40)),
        aud: fc.oneof(fc.constant(`${ISSUER}${TOKEN_PATH}`), fc.constant(ISSUER), fc.constant("https://other.example"), fc.constant([ISSUER, "x"]), jsonValue),
        exp: fc.oneof(fc.integer({ min: NOW / 1000 - 600, max: NOW / 1000 + 900 }), jsonValue),
        nbf: fc.oneof(fc.integer({ min: NOW / 1000 - 60, max: NOW / 1000 + 120 }), jsonValue),
        iat: fc.oneof(fc.integer({ min: NOW / 1000 - 60, max: NOW / 1000 + 120 }), jsonValue),
        jti: fc.oneof(fc.string({ minLength: 0, maxLength: 300 }), jsonValue, loneSurrogateString(300)),
      },
      { requiredKeys: [] },
    ),
    header: fc.record({ kid: fc.oneof(fc.constant("k1"), fc.constant("nope"), jsonValue), typ: fc.string({ maxLength: 8 }) }, { requiredKeys: [] }),
    other: fc.boolean(),
  }),
  fc.record({ kind: fc.constant("raw" as const), text: fc.string({ maxLength: 200 }) }),
  fc.record({ kind: fc.constant("segments" as const), parts: fc.array(fc.oneof(fc.base64String({ maxLength: 40 }), fc.string({ maxLength: 40 }), fc.constant(b64('{"alg":"ES256"}'))), { minLength: 1, maxLength: 5 }) }),
  fc.record({ kind: fc.constant("truncate" as const), at: fc.integer({ min: 0, max: 400 }) }),
  fc.record({ kind: fc.constant("huge" as const), size: fc.integer({ min: 3000, max: 70_000 }) }),
  fc.record({ kind: fc.constant("unsigned" as const), alg: fc.constantFrom("none", "None", "HS256", "HS512", "RS512", "ES512", "PS384", "") }),
);

async function validAssertion(signWith: CryptoKey, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const now = NOW / 1000;
  // CompactSign, not SignJWT: the claims go out exactly as generated, however wrong.
  const payload = new TextEncoder().encode(JSON.stringify({ iss: CLIENT, sub: CLIENT, aud: `${ISSUER}${TOKEN_PATH}`, exp: now + 60, jti: `jti-${++n}`, ...claims }));
  return new CompactSign(payload).setProtectedHeader({ alg: "ES256", kid: "k1", ...header } as { alg: string }).sign(signWith);
}

async function assertionOf(m: Mutation): Promise<string> {
  switch (m.kind) {
    case "claims":
      return validAssertion(m.other ? stranger : key, m.claims, m.header);
    case "raw":
      return m.text;
    case "segments":
      return m.parts.join(".");
    case "truncate": {
      const a = await validAssertion(key);
      return a.slice(0, Math.min(m.at, a.length - 1));
    }
    case "huge":
      return `${b64('{"alg":"ES256","kid":"k1"}')}.${b64(JSON.stringify({ iss: CLIENT, sub: CLIENT, pad: "x".repeat(m.size) }))}.${"A".repeat(86)}`;
    case "unsigned":
      return `${b64(JSON.stringify({ alg: m.alg }))}.${b64(JSON.stringify({ iss: CLIENT, sub: CLIENT, aud: ISSUER, exp: NOW / 1000 + 60, jti: `u-${++n}` }))}.${m.alg === "none" ? "" : "c2ln"}`;
  }
}

/** The claims an assertion of `m` carries (as the server reads them: through JSON, as signed). */
function claimsOf(m: Mutation & { kind: "claims" }): Record<string, unknown> {
  return { iss: CLIENT, sub: CLIENT, aud: `${ISSUER}${TOKEN_PATH}`, exp: NOW / 1000 + 60, jti: "x", ...(JSON.parse(JSON.stringify(m.claims)) as Record<string, unknown>) };
}

/**
 * The description a correct server must refuse `m` with, when one is certain: an assertion whose
 * `sub` holds an unpaired surrogate is refused before any client is looked up (core's client-auth.ts),
 * one whose `jti` does after every other rule held (client-assertion.ts; the key of its one-time use
 * would be the same for "a\ud800", "a\udc00" and "a\ufffd").
 */
function certainRefusal(m: Mutation): string | null {
  if (m.kind !== "claims") return null;
  const sub = claimsOf(m).sub;
  if (typeof sub === "string" && sub !== "" && hasLoneSurrogate(sub)) return "The client assertion's sub must not contain unpaired surrogates.";
  const jti = claimsOf(m).jti;
  if (validButForJti(m) && typeof jti === "string" && hasLoneSurrogate(jti)) return "The client assertion's jti must not contain unpaired surrogates.";
  return null;
}

/** Whether a correct server may accept it: only an untouched-rules assertion signed by the client's key, its jti well-formed. */
function mayAccept(m: Mutation): boolean {
  if (!validButForJti(m)) return false;
  const jti = claimsOf(m as Mutation & { kind: "claims" }).jti as string;
  return !hasLoneSurrogate(jti);
}

/** Whether every rule but the jti's well-formedness holds: signed by the client's key, the claims right. */
function validButForJti(m: Mutation): boolean {
  if (m.kind !== "claims" || m.other) return false;
  const claims = JSON.parse(JSON.stringify(m.claims)) as Record<string, unknown>;
  const header = JSON.parse(JSON.stringify(m.header)) as Record<string, unknown>;
  const c = claimsOf(m);
  const now = NOW / 1000;
  const audOk = (typeof c.aud === "string" ? [c.aud] : Array.isArray(c.aud) ? c.aud : []).some((x) => x === ISSUER || x === `${ISSUER}${TOKEN_PATH}`);
  return (
    c.iss === CLIENT && c.sub === CLIENT && audOk &&
    typeof c.exp === "number" && c.exp > now - 30 && c.exp <= now + 330 &&
    (claims.nbf === undefined || (typeof claims.nbf === "number" && claims.nbf <= now + 30)) &&
    (claims.iat === undefined || (typeof claims.iat === "number" && claims.iat <= now + 30)) &&
    typeof c.jti === "string" && c.jti.length >= 1 && c.jti.length <= 256 &&
    (header.kid === undefined || header.kid === "k1")
  );
}

const post = (assertion: string, extra: Record<string, string> = {}) =>
  app.fetch(
    new Request(`${ISSUER}${TOKEN_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "client_credentials", client_assertion_type: TYPE, client_assertion: assertion, ...extra }).toString(),
    }),
  );

it(`client assertions: ${RUNS} generated ones: 401 invalid_client unless valid by construction, never a 5xx, never echoed`, async () => {
  const tally: Record<string, number> = {};
  await fc.assert(
    fc.asyncProperty(mutationArb, async (m) => {
      const assertion = await assertionOf(m);
      const a = await read(await post(assertion));
      noServerError(a);
      const signature = assertion.split(".")[2];
      if (assertion.length >= 16 && a.text.includes(assertion)) fail("the answer echoes the assertion", a);
      if (signature && signature.length >= 16 && a.text.includes(signature)) fail("the answer echoes the assertion's signature", a);
      const accepted = mayAccept(m);
      if (a.status === 200) {
        if (!accepted) fail(`a token for an assertion that must be refused: ${JSON.stringify(m).slice(0, 300)}`, a);
        // The same assertion again is a replay.
        const again = await read(await post(assertion));
        if (again.status !== 401 || oauthError(again) !== "invalid_client") fail("a replayed assertion was not refused with 401 invalid_client", again);
        tally.accepted = (tally.accepted ?? 0) + 1;
        return;
      }
      const code = oauthError(a);
      const formTooBig = new TextEncoder().encode(assertion).length > 4096;
      if (formTooBig ? a.status !== 400 || code !== "invalid_request" : a.status !== 401 || code !== "invalid_client") {
        fail(`expected ${formTooBig ? "400 invalid_request (form field cap)" : "401 invalid_client"} for ${m.kind}`, a);
      }
      if (a.status === 401 && a.headers.get("www-authenticate") === null) fail("a 401 without WWW-Authenticate", a);
      const refusal = formTooBig ? null : certainRefusal(m);
      if (refusal !== null) {
        if ((a.json as { error_description?: unknown }).error_description !== refusal) fail(`expected "${refusal}"`, a);
        const label = refusal.includes("'s sub ") ? "sub-surrogate-refused" : "jti-surrogate-refused";
        tally[label] = (tally[label] ?? 0) + 1;
      }
      tally[m.kind] = (tally[m.kind] ?? 0) + 1;
    }),
    { numRuns: RUNS, seed: SEED },
  );
  // Coverage: every kind was generated, and some assertions were valid (so acceptance and replay were exercised).
  for (const kind of ["claims", "raw", "segments", "truncate", "huge", "unsigned"]) expect(tally[kind] ?? 0, kind).toBeGreaterThan(0);
  expect(tally.accepted ?? 0).toBeGreaterThan(0);
  // Unpaired surrogates in a jti that every other rule lets through, and in a sub, were refused for them.
  if (COVERAGE_CHECKS) for (const label of ["jti-surrogate-refused", "sub-surrogate-refused"]) expect(tally[label] ?? 0, label).toBeGreaterThan(RUNS / 100);
});

it("a huge assertion within the form caps, an HMAC one keyed with the public key, and alg none: each 401 invalid_client", async () => {
  const now = NOW / 1000;
  const big = `${b64('{"alg":"ES256","kid":"k1"}')}.${b64(JSON.stringify({ iss: CLIENT, sub: CLIENT, pad: "y".repeat(2800) }))}.${"B".repeat(86)}`;
  const hmac = await new SignJWT({ iss: CLIENT, sub: CLIENT, aud: ISSUER, exp: now + 60, jti: "h" }).setProtectedHeader({ alg: "HS256", kid: "k1" }).sign(new TextEncoder().encode("public key material as an HMAC secret"));
  const none = `${b64('{"alg":"none"}')}.${b64(JSON.stringify({ iss: CLIENT, sub: CLIENT, aud: ISSUER, exp: now + 60, jti: "n" }))}.`;
  for (const assertion of [big, hmac, none]) {
    const a = await read(await post(assertion));
    expect([a.status, oauthError(a)]).toEqual([401, "invalid_client"]);
    expect(a.text).not.toContain(assertion.split(".")[1]!.slice(0, 40));
  }
});
