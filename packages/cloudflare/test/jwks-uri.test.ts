/**
 * `private_key_jwt` clients with a `jwks_uri`, in workerd (Miniflare): the real `createWorker()`
 * entry, bundled for the Workers runtime, fetches the client's JWK Set from a real HTTP server on
 * 127.0.0.1. The clients are made through core's admin on the same D1 binding (`/__setup`), after
 * the Worker's start migrated it.
 *
 * The entry's `fetch` can hold the next outbound fetch (`/__gate?hold=1`): that one never settles
 * and holds no I/O, as a fetch does for everyone waiting on it once the request context that made
 * it is gone (cancelled, or found hung by workerd; its 5 s abort timer is that context's too).
 */
import { createServer, type Server } from "node:http";
import type { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CapturedLog, startWorker } from "./support.js";

const ENTRY = `
import { createPlantgate } from "@plantgate/core";
import { createD1Storage } from "@plantgate/storage-sql/d1";
import { createWorker } from "../src/index.ts";
const realFetch = globalThis.fetch;
let hold = 0;
let held = 0;
globalThis.fetch = (...args) => {
  if (hold === 0) return realFetch(...args);
  hold--;
  held++;
  return new Promise(() => {});
};
const worker = createWorker();
let env;
export default {
  async fetch(request, bindings, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__gate") {
      hold += Number(url.searchParams.get("hold") ?? 0);
      return new Response(String(held));
    }
    if (url.pathname === "/__setup") {
      const admin = createPlantgate({ storage: createD1Storage(bindings.DB) }).admin;
      for (const [clientId, jwksUri] of await request.json()) await admin.createClient({ clientId, authMethod: "private_key_jwt", jwksUri });
      return new Response("ok");
    }
    env ??= { ...bindings };
    return worker.fetch(request, env, ctx);
  },
};
`;

let mf: Miniflare | undefined;
let server: Server;
let base = "";
let keysUri = "";
const log = new CapturedLog();
/** The JWK Set fetches the server answered, by path. */
const served: string[] = [];
let privateKey: CryptoKey;
const b64u = (data: string | ArrayBuffer) => Buffer.from(typeof data === "string" ? Buffer.from(data) : new Uint8Array(data)).toString("base64url");

/** An ES256 `private_key_jwt` assertion for `clientId`, made for this Worker's token endpoint. */
async function assertion(clientId: string): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const input = `${b64u(JSON.stringify({ alg: "ES256", kid: "k1", typ: "JWT" }))}.${b64u(JSON.stringify({ iss: clientId, sub: clientId, aud: `${base}/UserService/connect/token`, jti: crypto.randomUUID(), iat: now, exp: now + 60 }))}`;
  // Web Crypto's ECDSA signature is r || s, the JWS form.
  return `${input}.${b64u(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, privateKey, Buffer.from(input)))}`;
}

/** A client_credentials request authenticated by an assertion: status, body, how long it took; unanswered after 20 s is "no answer". */
async function token(clientId: string): Promise<{ status: number | "no answer"; body: unknown; ms: number }> {
  const body = new URLSearchParams({ grant_type: "client_credentials", client_assertion_type: "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", client_assertion: await assertion(clientId) });
  const started = Date.now();
  try {
    const res = await fetch(`${base}/UserService/connect/token`, { method: "POST", body, signal: AbortSignal.timeout(20_000) });
    return { status: res.status, body: await res.json(), ms: Date.now() - started };
  } catch {
    return { status: "no answer", body: null, ms: Date.now() - started };
  }
}

/** Holds the next outbound fetch of the Worker; what it returns resolves once `count` fetches in all have been held. */
async function holdNext(count: number): Promise<() => Promise<void>> {
  await fetch(`${base}/__gate?hold=1`).then((r) => r.text());
  return async () => {
    for (let i = 0; i < 200 && Number(await fetch(`${base}/__gate`).then((r) => r.text())) < count; i++) await new Promise((r) => setTimeout(r, 25));
  };
}

const ISSUED = { access_token: expect.any(String), token_type: "Bearer", expires_in: 7200, scope: "Platform_UserAPIs Platform_AllAppsServerCommands" };

beforeAll(async () => {
  const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])) as CryptoKeyPair;
  privateKey = pair.privateKey;
  const { kty, crv, x, y } = await crypto.subtle.exportKey("jwk", pair.publicKey);
  const jwks = JSON.stringify({ keys: [{ kty, crv, x, y, kid: "k1", alg: "ES256", use: "sig" }] });
  server = createServer((req, res) => {
    served.push(req.url ?? "");
    // A redirect to the set: never followed.
    if (req.url === "/moved.json") return void res.writeHead(302, { location: "/keys.json" }).end();
    res.writeHead(200, { "content-type": "application/json" }).end(jwks);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  keysUri = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  ({ mf, base } = await startWorker(ENTRY, { d1: true, bindings: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" }, onLog: log.onLog }));
  // The first request starts the isolate (D1 migrated); then the clients.
  expect((await fetch(`${base}/.well-known/jwks.json`)).status).toBe(200);
  const setup = await fetch(`${base}/__setup`, {
    method: "POST",
    body: JSON.stringify([
      ["remote", `${keysUri}/keys.json`],
      ["moved", `${keysUri}/moved.json`],
      ["joins", `${keysUri}/joins.json`],
      ["arrives-late", `${keysUri}/arrives-late.json`],
    ]),
  });
  expect([setup.status, await setup.text()]).toEqual([200, "ok"]);
}, 60_000);
afterAll(async () => {
  await mf?.dispose();
  await new Promise<void>((r) => server.close(() => r()));
});

describe("private_key_jwt with a jwks_uri, in workerd", () => {
  it("the client gets a token: the set is fetched once, then kept", async () => {
    const first = await token("remote");
    expect([first.status, first.body]).toEqual([200, ISSUED]);
    const second = await token("remote");
    expect([second.status, second.body]).toEqual([200, ISSUED]);
    expect(served).toEqual(["/keys.json"]);
  }, 30_000);

  it("a jwks_uri that redirects is not followed: 401 invalid_client, and the warning names the status", async () => {
    served.length = 0;
    const refused = await token("moved");
    expect([refused.status, refused.body]).toEqual([401, { error: "invalid_client", error_description: "No key of the client matches the client assertion." }]);
    expect(served).toEqual(["/moved.json"]);
    await log.waitFor("jwks_uri could not be used");
    expect(log.text).toMatch(/jwks_uri could not be used \{ jwksUri: 'http:\/\/127\.0\.0\.1:\d+\/moved\.json', reason: 'status 302' \}/);
  }, 30_000);
});

describe("a jwks_uri fetch that never settles (the context that made it is gone), in workerd", () => {
  it("a request waiting on it gives it up after JWKS_WAIT_MS (6 s), fetches afresh and gets its token; the next one uses the set fetched", async () => {
    served.length = 0;
    const held = await holdNext(1);
    // The first request's fetch is held: that request is the context that is gone; its answer is not the point.
    const first = token("joins");
    await held();
    const second = await token("joins");
    expect([second.status, second.body]).toEqual([200, ISSUED]);
    expect(second.ms).toBeGreaterThanOrEqual(5_500);
    expect(second.ms).toBeLessThan(12_000);
    expect(served).toEqual(["/joins.json"]);
    const third = await token("joins");
    expect([third.status, third.body]).toEqual([200, ISSUED]);
    expect(third.ms).toBeLessThan(3_000);
    expect(served).toEqual(["/joins.json"]);
    void first;
  }, 60_000);

  it("a request arriving after JWKS_WAIT_MS does not wait on it: it fetches afresh at once", async () => {
    served.length = 0;
    const held = await holdNext(2);
    const first = token("arrives-late");
    await held();
    await new Promise((r) => setTimeout(r, 6_500));
    const second = await token("arrives-late");
    expect([second.status, second.body]).toEqual([200, ISSUED]);
    expect(second.ms).toBeLessThan(3_000);
    expect(served).toEqual(["/arrives-late.json"]);
    void first;
  }, 60_000);
});
