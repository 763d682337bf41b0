/**
 * Bearer credentials for the API routes, from valid to hostile: mutated real tokens, hand-made JWTs
 * (alg none, HS256 keyed with the public key, kid injection, embedded jku/x5u/jwk, crit, bad
 * claims, another audience) and broken headers. Each case carries what the server must decide:
 * `accept` (with the token's scopes), `reject` (401), or `either` where the RFCs leave room
 * (e.g. `typ: application/at+jwt`, an ignored `jku`), in which case only the shapes are checked.
 */
import fc from "fast-check";
import { attackerKeys, compact, strictB64url, type Signer, type SigningMaterial } from "./jws.js";
import { ISSUER, OFFLINE, ON_WORKERD, OTHER_ISSUER, SERVER_COMMANDS, USER_APIS, type World } from "./world.js";

export type Verdict = { k: "accept"; scope: string[] } | { k: "reject"; code?: number } | { k: "either"; scope: string[] };

export type NamedToken = "cc" | "alice" | "noApiScope" | "expired" | "otherAudience" | "revoked";

const SCOPES_OF: Record<"cc" | "alice" | "noApiScope", string[]> = {
  cc: [USER_APIS, SERVER_COMMANDS],
  alice: [USER_APIS],
  noApiScope: [OFFLINE],
};

type TokenMutation =
  | { k: "flip"; seg: number; pos: number; ch: string }
  | { k: "dropSeg"; seg: number }
  | { k: "addSeg"; text: string }
  | { k: "truncate"; n: number }
  | { k: "append"; text: string }
  | { k: "swap" }
  | { k: "case"; upper: boolean }
  | { k: "reencodeSig" }
  | { k: "padSig"; pad: string }
  | { k: "double" };

type KidSpec = { k: "real" } | { k: "absent" } | { k: "str"; v: string } | { k: "nonString"; v: unknown };

export interface CraftSpec {
  alg: string | number | null;
  kid: KidSpec;
  typ: string | number | null;
  extras: string[];
  claims: string[];
  signer: Signer;
}

export type AuthSpec =
  | { k: "none" }
  | { k: "valid"; token: "cc" | "alice" | "noApiScope"; scheme: string }
  | { k: "named"; token: "expired" | "otherAudience" | "revoked" }
  | { k: "raw"; value: string }
  | { k: "basic"; value: string }
  | { k: "mutated"; token: "cc" | "alice"; mutations: TokenMutation[] }
  | { k: "crafted"; spec: CraftSpec }
  | { k: "twoTokens"; sep: string };

/**
 * Header-safe text: Latin-1 without NUL/CR/LF (what `Headers` accepts), leading/trailing space
 * trimmed by it. On workerd the request crosses HTTP/1.1, whose field values (RFC 9110 §5.5) hold no
 * other control character but HTAB either: the HTTP client (undici) refuses to send one, so there the
 * text leaves them out too.
 */
export const headerText = (maxLength = 60) =>
  fc.string({
    unit: fc
      .integer({ min: 0x01, max: 0xff })
      .filter((c) => c !== 0x0a && c !== 0x0d && (!ON_WORKERD || c === 0x09 || (c >= 0x20 && c !== 0x7f)))
      .map((c) => String.fromCharCode(c)),
    maxLength,
  });

const B64URL_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const tokenChar = fc.oneof(
  fc.constantFrom(...B64URL_CHARS.split("")),
  fc.constantFrom("+", "/", "=", ".", "~", "%", " ", "\t", "é", "\u00ff"),
);

const mutationArb: fc.Arbitrary<TokenMutation> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ k: fc.constant("flip" as const), seg: fc.integer({ min: 0, max: 2 }), pos: fc.nat(), ch: tokenChar }) },
  fc.record({ k: fc.constant("dropSeg" as const), seg: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ k: fc.constant("addSeg" as const), text: fc.string({ unit: fc.constantFrom(...B64URL_CHARS.split("")), maxLength: 20 }) }),
  fc.record({ k: fc.constant("truncate" as const), n: fc.integer({ min: 1, max: 200 }) }),
  fc.record({ k: fc.constant("append" as const), text: fc.constantFrom("=", "==", ".", "..", " x", "A", "\u00e9", "%00") }),
  fc.constant({ k: "swap" as const }),
  fc.record({ k: fc.constant("case" as const), upper: fc.boolean() }),
  fc.constant({ k: "reencodeSig" as const }),
  fc.record({ k: fc.constant("padSig" as const), pad: fc.constantFrom("=", "==", "===") }),
  fc.constant({ k: "double" as const }),
);

function applyMutation(token: string, m: TokenMutation): string {
  const segs = token.split(".");
  switch (m.k) {
    case "flip": {
      const seg = segs[m.seg % segs.length] ?? "";
      if (seg.length === 0) return token;
      const pos = m.pos % seg.length;
      segs[m.seg % segs.length] = seg.slice(0, pos) + m.ch + seg.slice(pos + 1);
      return segs.join(".");
    }
    case "dropSeg":
      segs.splice(m.seg % segs.length, 1);
      return segs.join(".");
    case "addSeg":
      return `${token}.${m.text}`;
    case "truncate":
      return token.slice(0, Math.max(0, token.length - m.n));
    case "append":
      return token + m.text;
    case "swap":
      return segs.length >= 2 ? [segs[1], segs[0], ...segs.slice(2)].join(".") : token;
    case "case":
      return m.upper ? token.toUpperCase() : token.toLowerCase();
    case "reencodeSig":
      if (segs.length < 3) return token;
      segs[2] = segs[2]!.replace(/-/g, "+").replace(/_/g, "/");
      return segs.join(".");
    case "padSig":
      return token + m.pad;
    case "double":
      return `${token}.${token}`;
  }
}

function laxB64(text: string): Uint8Array | null {
  const t = text.replace(/=+$/, "").replace(/-/g, "+").replace(/_/g, "/");
  if (!/^[A-Za-z0-9+/]*$/.test(t) || t.length % 4 === 1) return null;
  return Uint8Array.from(atob(t), (c) => c.charCodeAt(0));
}

/** accept when semantically the original, either when only the signature's encoding is lax, else reject. */
function mutatedVerdict(original: string, mutated: string, scope: string[]): Verdict {
  if (mutated === original) return { k: "accept", scope };
  const [o, m] = [original.split("."), mutated.split(".")];
  if (m.length !== 3 || m[0] !== o[0] || m[1] !== o[1]) return { k: "reject" };
  const strict = strictB64url(m[2]!);
  const orig = strictB64url(o[2]!)!;
  if (strict && strict.length === orig.length && strict.every((b, i) => b === orig[i])) return { k: "accept", scope };
  // A lenient base64url decoder maps '+' '/' to '-' '_', ignores '=' padding and the trailing bits.
  const lax = laxB64(m[2]!);
  if (lax && lax.length === orig.length && lax.every((b, i) => b === orig[i])) return { k: "either", scope };
  return { k: "reject" };
}

const KID_INJECTIONS = [
  "../../../../etc/passwd",
  "..\\..\\windows\\win.ini",
  "' OR '1'='1",
  "\"; DROP TABLE pg_signing_keys; --",
  "${jndi:ldap://x}",
  "__proto__",
  "constructor",
  "toString",
  "\u0000",
  "kid\u0000real",
  "é",
  "\ud800",
  "",
  " ",
  "/dev/random",
  "http://attacker.example/key.json",
];

const kidArb: fc.Arbitrary<KidSpec> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ k: "real" as const }) },
  fc.constant({ k: "absent" as const }),
  fc.record({ k: fc.constant("str" as const), v: fc.oneof(fc.constantFrom(...KID_INJECTIONS), fc.string({ maxLength: 40 }), fc.constant("k".repeat(10_000))) }),
  fc.record({ k: fc.constant("nonString" as const), v: fc.constantFrom<unknown>(1, 0, null, true, [], {}, ["x"], { $ne: null }) }),
);

const EXTRAS = ["jkuAttacker", "x5uAttacker", "jwkAttacker", "jwkReal", "x5c", "critUnknown", "critEmpty", "critNotArray", "critB64", "b64false", "cty", "dupAlgNone", "dupAlgLast"];
const CLAIMS = [
  "expPast",
  "expNow",
  "expMissing",
  "expString",
  "nbfFuture",
  "nbfPast",
  "iatFuture",
  "iatString",
  "issTrailingSlash",
  "issUpper",
  "issOther",
  "issMissing",
  "issArray",
  "audOther",
  "audOtherIssuer",
  "audMissing",
  "audArrayIncluding",
  "audArrayExcluding",
  "subMissing",
  "subNumber",
  "subUser",
  "jtiMissing",
  "jtiNumber",
  "clientIdMissing",
  "clientIdNumber",
  "scopeMissing",
  "scopeArray",
  "scopeEmpty",
  "scopeUserOnly",
  "scopeUnknown",
  "extraClaims",
  "payloadArray",
  "payloadNull",
  "payloadBroken",
  "payloadDuplicateExp",
];

const signerArb: fc.Arbitrary<Signer> = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ k: "real" as const }) },
  fc.constant({ k: "attacker" as const }),
  fc.record({ k: fc.constant("hmac" as const), secret: fc.constantFrom("jwkText" as const, "jwkCanonical" as const, "pem" as const, "pemNoNewline" as const, "x" as const, "empty" as const) }),
  fc.constant({ k: "none" as const }),
  fc.record({ k: fc.constant("garbage" as const), bytes: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 80 }) }),
);

export const craftArb: fc.Arbitrary<CraftSpec> = fc.record({
  alg: fc.oneof(
    { weight: 8, arbitrary: fc.constant("ES256") },
    fc.constantFrom<string | number | null>("none", "None", "NONE", "nOnE", "HS256", "HS512", "ES384", "RS256", "PS256", "EdDSA", "ES256 ", "es256", "", null, 256),
  ),
  kid: kidArb,
  typ: fc.oneof(
    { weight: 6, arbitrary: fc.constant("at+jwt") },
    fc.constantFrom<string | number | null>("application/at+jwt", "AT+JWT", "JWT", "jwt", "at+jwt2", "application/jwt", "", null, 1),
  ),
  extras: fc.uniqueArray(fc.constantFrom(...EXTRAS), { maxLength: 2 }),
  // At most one mutation per claim ("expPast" and "expMissing" both set exp; the last would win).
  claims: fc.uniqueArray(fc.constantFrom(...CLAIMS), { maxLength: 2, selector: (c) => /^[a-z]+/.exec(c)![0] }),
  signer: signerArb,
});

/** Any auth case, weighted so that valid tokens still reach the body parser often. */
export const authArb: fc.Arbitrary<AuthSpec> = fc.oneof(
  { weight: 10, arbitrary: fc.record({ k: fc.constant("valid" as const), token: fc.constantFrom("cc" as const, "alice" as const, "noApiScope" as const), scheme: fc.constantFrom("Bearer ", "Bearer ", "Bearer ", "bearer ", "BEARER ", "Bearer   ", "Bearer\t") }) },
  { weight: 1, arbitrary: fc.constant({ k: "none" as const }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("named" as const), token: fc.constantFrom("expired" as const, "otherAudience" as const, "revoked" as const) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant("raw" as const), value: fc.oneof(headerText(), fc.constantFrom("Bearer", "Bearer ", "Bearer a.b.c", "Bearer ....", "Bearer =", "Token abc", "Bearer%20x", "Digest x", "Bearer " + "A".repeat(9000))) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("basic" as const), value: headerText(40) }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant("mutated" as const), token: fc.constantFrom("cc" as const, "alice" as const), mutations: fc.array(mutationArb, { minLength: 1, maxLength: 3 }) }) },
  { weight: 6, arbitrary: fc.record({ k: fc.constant("crafted" as const), spec: craftArb }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("twoTokens" as const), sep: fc.constantFrom(", ", " ", ",") }) },
);

let attacker: Promise<{ privateKey: CryptoKey; publicJwk: JsonWebKey }> | null = null;

function material(world: World, attackerKey: CryptoKey): SigningMaterial {
  return { realKey: world.keys.privateKey, attackerKey, publicJwkText: world.keys.publicJwkText, publicJwk: world.keys.publicJwk, pem: world.keys.pem };
}

/** Builds the header JSON text of a crafted token (raw text, so duplicate members are possible). */
function headerText_(world: World, spec: CraftSpec, attackerJwk: JsonWebKey): string {
  const members: string[] = [];
  const put = (k: string, v: unknown) => members.push(`${JSON.stringify(k)}:${JSON.stringify(v)}`);
  if (spec.extras.includes("dupAlgNone")) put("alg", "none");
  if (spec.alg !== null) put("alg", spec.alg);
  if (spec.extras.includes("dupAlgLast")) put("alg", "none");
  if (spec.kid.k === "real") put("kid", world.keys.kid);
  else if (spec.kid.k === "str") put("kid", spec.kid.v);
  else if (spec.kid.k === "nonString") put("kid", spec.kid.v);
  if (spec.typ !== null) put("typ", spec.typ);
  for (const e of spec.extras) {
    if (e === "jkuAttacker") put("jku", "https://attacker.example/jwks.json");
    if (e === "x5uAttacker") put("x5u", "https://attacker.example/cert.pem");
    if (e === "jwkAttacker") put("jwk", attackerJwk);
    if (e === "jwkReal") put("jwk", world.keys.publicJwk);
    if (e === "x5c") put("x5c", ["MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA"]);
    if (e === "critUnknown") put("crit", ["urn:attacker:ext"]), put("urn:attacker:ext", true);
    if (e === "critEmpty") put("crit", []);
    if (e === "critNotArray") put("crit", "exp");
    if (e === "critB64") put("crit", ["b64"]), put("b64", true);
    if (e === "b64false") put("b64", false);
    if (e === "cty") put("cty", "JWT");
  }
  return `{${members.join(",")}}`;
}

function payloadText(world: World, spec: CraftSpec): string {
  // The world's time (a workerd world's is the machine's): an `exp` in an hour is an hour from the answer.
  const now = Math.floor(world.clock.now / 1000);
  const c: Record<string, unknown> = {
    iss: ISSUER,
    sub: "client:cc-client",
    aud: ISSUER,
    client_id: "cc-client",
    scope: `${USER_APIS} ${SERVER_COMMANDS}`,
    iat: now - 60,
    exp: now + 3600,
    jti: "hostile-jti-1",
  };
  const has = (k: string) => spec.claims.includes(k);
  if (has("expPast")) c.exp = now - 1;
  if (has("expNow")) c.exp = now;
  if (has("expMissing")) delete c.exp;
  if (has("expString")) c.exp = String(now + 3600);
  if (has("nbfFuture")) c.nbf = now + 3600;
  if (has("nbfPast")) c.nbf = now - 3600;
  if (has("iatFuture")) c.iat = now + 3600;
  if (has("iatString")) c.iat = String(now);
  if (has("issTrailingSlash")) c.iss = ISSUER + "/";
  if (has("issUpper")) c.iss = ISSUER.toUpperCase();
  if (has("issOther")) c.iss = OTHER_ISSUER;
  if (has("issMissing")) delete c.iss;
  if (has("issArray")) c.iss = [ISSUER];
  if (has("audOther")) c.aud = "https://api.other.example";
  if (has("audOtherIssuer")) c.aud = OTHER_ISSUER;
  if (has("audMissing")) delete c.aud;
  if (has("audArrayIncluding")) c.aud = ["https://api.other.example", ISSUER];
  if (has("audArrayExcluding")) c.aud = ["https://api.other.example", OTHER_ISSUER];
  if (has("subMissing")) delete c.sub;
  if (has("subNumber")) c.sub = 42;
  if (has("subUser")) c.sub = "00000000-0000-4000-8000-000000000000";
  if (has("jtiMissing")) delete c.jti;
  if (has("jtiNumber")) c.jti = 7;
  if (has("clientIdMissing")) delete c.client_id;
  if (has("clientIdNumber")) c.client_id = 1;
  if (has("scopeMissing")) delete c.scope;
  if (has("scopeArray")) c.scope = [USER_APIS];
  if (has("scopeEmpty")) c.scope = "";
  if (has("scopeUserOnly")) c.scope = USER_APIS;
  if (has("scopeUnknown")) c.scope = "admin root";
  if (has("extraClaims")) Object.assign(c, { admin: true, roles: ["admin"], "x-\u0000": "\ud800" });
  if (has("payloadArray")) return "[]";
  if (has("payloadNull")) return "null";
  if (has("payloadBroken")) return '{"iss":';
  const text = JSON.stringify(c);
  if (has("payloadDuplicateExp")) return text.slice(0, -1) + `,"exp":${now - 10}}`;
  return text;
}

/** What the server must decide for a crafted token (see the module comment). */
export function craftedVerdict(spec: CraftSpec): Verdict {
  const has = (k: string) => spec.claims.includes(k);
  const ex = (k: string) => spec.extras.includes(k);
  // Two extras that set the same member (crit, b64) make a duplicate: JSON leaves its meaning open.
  const duplicateMembers = spec.extras.filter((e) => e.startsWith("crit")).length > 1 || (ex("b64false") && ex("critB64"));
  const critRejects = ex("critUnknown") || ex("critEmpty") || ex("critNotArray");

  // JSON.parse keeps the last of duplicate members.
  const alg = ex("dupAlgLast") ? "none" : spec.alg ?? (ex("dupAlgNone") ? "none" : null);
  const reject =
    spec.signer.k !== "real" ||
    alg !== "ES256" ||
    spec.kid.k !== "real" ||
    !(spec.typ === "at+jwt" || spec.typ === "application/at+jwt" || spec.typ === "AT+JWT") ||
    (critRejects && !duplicateMembers) ||
    [
      "expPast", "expNow", "expMissing", "expString", "nbfFuture", "iatString", "issTrailingSlash", "issUpper", "issOther", "issMissing", "issArray",
      "audOther", "audOtherIssuer", "audMissing", "audArrayExcluding", "subMissing", "subNumber", "jtiMissing", "jtiNumber", "clientIdMissing",
      "clientIdNumber", "scopeMissing", "scopeArray", "payloadArray", "payloadNull", "payloadBroken", "payloadDuplicateExp",
    ].some(has);
  const scope = has("scopeEmpty") ? [] : has("scopeUserOnly") ? [USER_APIS] : has("scopeUnknown") ? ["admin", "root"] : [USER_APIS, SERVER_COMMANDS];
  if (reject) return { k: "reject" };
  if (critRejects && duplicateMembers) return { k: "either", scope };
  // RFC 9068 §4 allows "application/at+jwt"; a JOSE header ignored by the verifier (jku, x5u, an
  // embedded jwk, cty, b64 without crit) may be ignored or refused; duplicate header members are
  // undefined behaviour of JSON. The server may go either way there, but never accept a bad key.
  const lax = spec.typ !== "at+jwt" || spec.extras.length > 0 || has("audArrayIncluding") || has("nbfPast") || has("iatFuture") || has("extraClaims");
  return lax ? { k: "either", scope } : { k: "accept", scope };
}

/** Resolves an auth case against the world: the Authorization header to send and the verdict. */
export async function resolveAuth(world: World, spec: AuthSpec): Promise<{ header: string | null; verdict: Verdict }> {
  switch (spec.k) {
    case "none":
      return { header: null, verdict: { k: "reject", code: 1201 } };
    case "valid": {
      const header = spec.scheme + world.tokens[spec.token];
      // RFC 6750 §2.1: "Bearer" 1*SP b64token; a tab is not a separator there.
      return { header, verdict: spec.scheme.includes("\t") ? { k: "reject" } : { k: "accept", scope: SCOPES_OF[spec.token] } };
    }
    case "named":
      return { header: `Bearer ${world.tokens[spec.token]}`, verdict: { k: "reject", code: 1202 } };
    case "raw":
    case "basic": {
      const value = spec.k === "basic" ? `Basic ${spec.value}` : spec.value;
      const trimmed = value.replace(/^[\t ]+|[\t ]+$/g, "");
      return { header: value, verdict: /^bearer(?:\s|$)/i.test(trimmed) ? { k: "reject" } : { k: "reject", code: 1201 } };
    }
    case "mutated": {
      const original = world.tokens[spec.token];
      // Headers carry Latin-1 only (upper-casing "ÿ" gives "Ÿ", U+0178): keep it sendable.
      const mutated = spec.mutations.reduce(applyMutation, original).replace(/[^\x01-\x09\x0b\x0c\x0e-\xff]/g, "?");
      // What the server is given: `Headers` drops the value's trailing spaces and tabs, and RFC 6750
      // puts 1*SP between "Bearer" and the token, so a space or tab a mutation left at the end, or a
      // space at the start, is not part of the token (a flip of the appended "=" to " " leaves the
      // original token, rightly accepted).
      const presented = mutated.replace(/^ +/, "").replace(/[ \t]+$/, "");
      return { header: `Bearer ${mutated}`, verdict: mutatedVerdict(original, presented, SCOPES_OF[spec.token]) };
    }
    case "crafted": {
      attacker ??= attackerKeys();
      const a = await attacker;
      const token = await compact(headerText_(world, spec.spec, a.publicJwk), payloadText(world, spec.spec), spec.spec.signer, material(world, a.privateKey));
      return { header: `Bearer ${token}`, verdict: craftedVerdict(spec.spec) };
    }
    case "twoTokens":
      return { header: `Bearer ${world.tokens.cc}${spec.sep}Bearer ${world.tokens.alice}`, verdict: { k: "reject" } };
  }
}

/**
 * Checks the auth part of an API answer. Returns the scopes the request went on with, or null when
 * the answer was (rightly) the 401 and nothing further is to be checked.
 */
export function authOutcome(verdict: Verdict, status: number, code: number | null): { scope: string[] } | null | "violation" {
  if (verdict.k === "reject") {
    if (status !== 401) return "violation";
    if (verdict.code !== undefined && code !== null && code !== verdict.code) return "violation";
    return null;
  }
  if (status === 401) return verdict.k === "either" ? null : "violation";
  return { scope: verdict.scope };
}
