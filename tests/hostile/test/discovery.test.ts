/**
 * The public documents (JWKS, RFC 8414 metadata) and the router under generated requests: random
 * methods, origins, query strings, headers and bodies; then random and near-miss paths. The
 * documents must never echo a request's host or headers, never publish a private key member, and
 * never differ between requests.
 */
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { ApiErrorCode, createPlantgate } from "@plantgate/core";
import { expect, it } from "vitest";
import { headerText } from "../src/auth.js";
import { apiError, fail, logsAreClean, noServerError, oauthError, read, withStoreCheck, type Answer } from "../src/invariants.js";
import { bump, runChunked, summary } from "../src/run.js";
import { COVERAGE_CHECKS, RUNS, SEED } from "../src/settings.js";
import { INTROSPECTION_PATH, ISSUER, LIST_PATH, ON_WORKERD, REVOCATION_PATH, TOKEN_PATH, type World } from "../src/world.js";

const JWKS_PATH = "/.well-known/jwks.json";
const METADATA_PATH = "/.well-known/oauth-authorization-server";
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "k", "oth"];

interface DocRequest {
  method: string;
  origin: string;
  query: string;
  headers: [string, string][];
  body: number[] | null;
}

const docRequestArb: fc.Arbitrary<DocRequest> = fc.record({
  method: fc.oneof({ weight: 12, arbitrary: fc.constant("GET") }, fc.constantFrom("HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "PROPFIND")),
  origin: fc.constantFrom(ISSUER, "https://evil.example", "http://as.example:8080", "http://127.0.0.1", "http://[::1]:1"),
  query: fc.oneof({ weight: 3, arbitrary: fc.constant("") }, fc.constantFrom("?", "?x=1", "?kid=../../etc", "?%zz", "?a=%00&a=1", "?callback=alert(1)"), fc.string({ maxLength: 20 }).map((s) => `?${encodeURIComponent(s)}`)),
  headers: fc.array(
    fc.tuple(fc.constantFrom("host", "x-forwarded-host", "x-forwarded-proto", "forwarded", "accept", "accept-encoding", "if-none-match", "if-modified-since", "range", "authorization", "cookie", "origin"), headerText(40)),
    { maxLength: 3 },
  ),
  body: fc.option(fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 64 }), { nil: null }),
});

function docRequest(path: string, r: DocRequest): Request {
  const headers = new Headers();
  for (const [k, v] of r.headers) headers.set(k, v);
  const hasBody = r.body !== null && r.method !== "GET" && r.method !== "HEAD";
  return new Request(`${r.origin}${path}${r.query}`, { method: r.method, headers, ...(hasBody ? { body: new Uint8Array(r.body!) } : {}) });
}

async function documentProperty(path: string, checkBody: (world: World, a: Answer) => Promise<void>) {
  return runChunked(docRequestArb, async (world, r, tally) => {
    // Reading a public document never writes.
    const a = await withStoreCheck(world, async () => read(await world.app.fetch(docRequest(path, r))), () => true);
    noServerError(a);
    logsAreClean(world);
    if (r.method !== "GET" && r.method !== "HEAD") {
      if (a.status !== 405 || apiError(a) !== ApiErrorCode.methodNotAllowed) fail(`${r.method} must be 405`, a);
      if (!/\bGET\b/.test(a.headers.get("allow") ?? "")) fail("Allow does not name GET", a);
      bump(tally, "405");
      return a.status;
    }
    if (a.status !== 200) fail("a public document was not served", a);
    if (!(a.headers.get("content-type") ?? "").startsWith("application/json")) fail("not application/json", a);
    if (r.method === "HEAD") {
      if (a.text !== "") fail("HEAD with a body", a);
      bump(tally, "head");
      return a.status;
    }
    await checkBody(world, a);
    bump(tally, "served");
    return a.status;
  });
}

it(`JWKS: ${RUNS} generated requests: never a 5xx, only public members of exactly the stored keys, whatever the request`, async () => {
  const tally = await documentProperty(JWKS_PATH, async (world, a) => {
    const body = a.json as { keys?: Record<string, unknown>[] };
    if (!body || !Array.isArray(body.keys) || Object.keys(body).join() !== "keys") fail("not {keys: [...]}", a);
    const stored = await world.storage.signingKeys.list();
    const kids = body.keys.map((k) => k.kid).sort();
    if (!isDeepStrictEqual(kids, stored.map((k) => k.kid).sort())) fail("the JWKS does not list exactly the stored keys", a);
    for (const key of body.keys) {
      for (const m of PRIVATE_MEMBERS) if (m in key) fail(`a private key member '${m}' in the JWKS`, a);
      const pub = JSON.parse(stored.find((k) => k.kid === key.kid)!.publicJwk) as Record<string, unknown>;
      for (const m of ["kty", "crv", "x", "y", "n", "e"]) if (pub[m] !== key[m]) fail(`member ${m} differs from the stored public key`, a);
      if (key.use !== "sig" || typeof key.alg !== "string") fail("a key without use=sig and alg", a);
    }
  });
  console.log(`JWKS: ${summary(tally)}`);
  expect(tally.runs).toBeGreaterThanOrEqual(RUNS);
  if (COVERAGE_CHECKS) expect(tally.labels.get("served") ?? 0).toBeGreaterThan(RUNS / 2);
});

it(`metadata: ${RUNS} generated requests: never a 5xx, the same RFC 8414 document whatever the host or headers`, async () => {
  let first: unknown = null;
  const tally = await documentProperty(METADATA_PATH, async (_world, a) => {
    const doc = a.json as Record<string, unknown>;
    const want = {
      issuer: ISSUER,
      token_endpoint: ISSUER + TOKEN_PATH,
      jwks_uri: ISSUER + JWKS_PATH,
      revocation_endpoint: ISSUER + REVOCATION_PATH,
      introspection_endpoint: ISSUER + INTROSPECTION_PATH,
    };
    for (const [k, v] of Object.entries(want)) if (doc?.[k] !== v) fail(`metadata ${k} is ${JSON.stringify(doc?.[k])}, expected ${v}`, a);
    if (/evil\.example|8080|127\.0\.0\.1|\[::1\]/.test(a.text)) fail("the metadata echoes the request's host", a);
    first ??= doc;
    if (!isDeepStrictEqual(doc, first)) fail("the metadata document changed between requests", a);
  });
  console.log(`metadata: ${summary(tally)}`);
  expect(tally.runs).toBeGreaterThanOrEqual(RUNS);
  if (COVERAGE_CHECKS) expect(tally.labels.get("served") ?? 0).toBeGreaterThan(RUNS / 2);
});

it(`metadata with only an issuer configured (no baseUrl): ${Math.ceil(RUNS / 10)} generated requests: every URL from the issuer, publicly cacheable, never the request's host`, async () => {
  // The documented production set-up of the example servers (finding 1 of the security review):
  // the URLs once came from Host / X-Forwarded-Host and were cached publicly without Vary.
  const app = createPlantgate({ issuer: ISSUER, logger: { error() {}, warn() {} } });
  const want = {
    issuer: ISSUER,
    token_endpoint: ISSUER + TOKEN_PATH,
    jwks_uri: ISSUER + JWKS_PATH,
    revocation_endpoint: ISSUER + REVOCATION_PATH,
    introspection_endpoint: ISSUER + INTROSPECTION_PATH,
  };
  let served = 0;
  await fc.assert(
    fc.asyncProperty(docRequestArb, async (r) => {
      if (r.method !== "GET") return;
      const a = await read(await app.fetch(docRequest(METADATA_PATH, r)));
      noServerError(a);
      if (a.status !== 200) fail("the metadata was not served", a);
      const doc = a.json as Record<string, unknown>;
      for (const [k, v] of Object.entries(want)) if (doc?.[k] !== v) fail(`metadata ${k} is ${JSON.stringify(doc?.[k])}, expected ${v}`, a);
      if (/evil\.example|8080|127\.0\.0\.1|\[::1\]/.test(a.text)) fail("the metadata echoes the request's host", a);
      if (a.headers.get("cache-control") !== "public, max-age=300" || a.headers.get("vary") !== null) fail("unexpected cache headers", a);
      served++;
    }),
    { numRuns: Math.ceil(RUNS / 10), seed: SEED },
  );
  if (COVERAGE_CHECKS) expect(served).toBeGreaterThan(RUNS / 20);
});

it(`metadata with neither issuer nor baseUrl: ${Math.ceil(RUNS / 10)} generated requests: private and varying by Host whenever it follows the request`, async () => {
  const app = createPlantgate({ logger: { error() {}, warn() {} } });
  await fc.assert(
    fc.asyncProperty(docRequestArb, async (r) => {
      if (r.method !== "GET") return;
      const a = await read(await app.fetch(docRequest(METADATA_PATH, r)));
      noServerError(a);
      if (a.status !== 200) fail("the metadata was not served", a);
      if (a.headers.get("cache-control") !== "private, max-age=300" || a.headers.get("vary") !== "Host") fail("a host-dependent document cacheable by shared caches", a);
    }),
    { numRuns: Math.ceil(RUNS / 10), seed: SEED },
  );
});

const KNOWN = [TOKEN_PATH, REVOCATION_PATH, INTROSPECTION_PATH, "/plants", LIST_PATH, JWKS_PATH, METADATA_PATH];
const OAUTH_PATHS = new Set([TOKEN_PATH, REVOCATION_PATH, INTROSPECTION_PATH]);

const pathArb = fc.oneof(
  fc.tuple(fc.constantFrom(...KNOWN), fc.constantFrom("/", "//", "%2F", ".", "/.", "/..", "%00", "x", ";a=b", "%20", "\u00e9", "/../plants", "?", "#")).map(([p, s]) => p + s),
  fc.constantFrom(...KNOWN).map((p) => p.toUpperCase()),
  fc.constantFrom(...KNOWN).map((p) => p.replace(/\//g, "//")),
  fc.constantFrom(...KNOWN).map((p) => p.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16)}`)),
  fc.constantFrom("/", "", "/console", "/console/api/clients", "/admin", "/.env", "/.git/config", "/UserService/connect/", "/UserService/connect/authorize", "/rbac", "/plants/1", "/%2e%2e/%2e%2e/etc/passwd", "/\u0000", "/" + "a".repeat(5000)),
  fc.string({ maxLength: 30 }).map((s) => "/" + s),
  // A token or a client secret put in the path by mistake: appended, as a `;` parameter or behind
  // a percent-encoded `?` ({token} and {secret} stand for the world's own; see the property).
  fc
    .tuple(fc.constantFrom(...KNOWN, "/plants/1", "/console/api/clients"), fc.constantFrom("/", ";access_token=", "%3Faccess_token=", "%3Fclient_secret="), fc.constantFrom("{token}", "{secret}"))
    .map(([p, s, v]) => p + s + v),
);

it(`router: ${Math.ceil(RUNS / 2)} generated paths: never a 5xx; unknown paths 404 {error:1404}; the shape follows the route; no span carries a token or secret a path held`, async () => {
  const tally = await runChunked(
    fc.tuple(pathArb, docRequestArb),
    async (world, [generated, r], tally) => {
      // The world's access token and a client secret (percent-encoded, as a client would put it in a
      // path), which the chunk's output check (spans included: the world traces) must not find.
      const path = generated.replace("{token}", world.tokens.cc).replace("{secret}", encodeURIComponent(world.clients[0]!.secret));
      if (path !== generated) bump(tally, "carried-in-path");
      let url: URL;
      try {
        url = new URL(`${r.origin}${path.startsWith("/") ? "" : "/"}${path}`);
      } catch {
        return 0;
      }
      const request = docRequest(url.pathname + url.search, { ...r, query: "" });
      const a = await withStoreCheck(world, async () => read(await world.app.fetch(request)), (x) => x.status >= 300);
      noServerError(a);
      logsAreClean(world);
      const known = KNOWN.includes(url.pathname) || url.pathname === "/openapi.json" || url.pathname === "/docs" || url.pathname.startsWith("/docs/assets/");
      if (!known) {
        if (a.status !== 404 || apiError(a, { head: r.method === "HEAD" }) !== (r.method === "HEAD" ? 0 : ApiErrorCode.notFound)) fail(`an unknown path ${url.pathname.slice(0, 80)} was not 404`, a);
        bump(tally, "404");
      } else if (a.status >= 400) {
        if (OAUTH_PATHS.has(url.pathname)) oauthError(a, { head: r.method === "HEAD" });
        else apiError(a, { head: r.method === "HEAD" });
        bump(tally, "known-error");
      } else bump(tally, "known-ok");
      return a.status;
    },
    { runs: Math.ceil(RUNS / 2), world: { tracing: !ON_WORKERD } },
  );
  console.log(`router: ${summary(tally)}`);
  if (COVERAGE_CHECKS) expect(tally.labels.get("404") ?? 0).toBeGreaterThan(RUNS / 20);
  if (COVERAGE_CHECKS) expect(tally.labels.get("carried-in-path") ?? 0).toBeGreaterThan(RUNS / 100);
});
