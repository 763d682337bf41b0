/**
 * Variables bound from Cloudflare's Secrets Store (`[[secrets_store_secrets]]` in wrangler.toml), in
 * workerd (Miniflare's Secrets Store, the real `createWorker()` entry, a real D1 database). Such a
 * binding is not text: its value comes from `await env.NAME.get()`. Until 2026-11-30 the Worker left
 * it out as it leaves out any binding, without a word: a `PLANTGATE_SIGNING_KEY` kept there was
 * ignored and the Worker signed with a key of its own making, a `PLANTGATE_KEY_ENCRYPTION_KEY` kept
 * there left the signing keys in clear.
 */
import { Miniflare } from "miniflare";
import { afterEach, describe, expect, it } from "vitest";
import { bundle, COMPATIBILITY_DATE } from "./support.js";
import { WORKER_START_RETRY_MS } from "../src/index.js";

// createWorker() with a logger the test reads (/__log: errors; /__warnings), and the signing keys
// as stored in its D1 database (/__keys). Everything else is the Worker as deployed.
const ENTRY = `
import { createWorker } from "../src/index.ts";
const lines = [];
const warnings = [];
const worker = createWorker({ logger: { error: (m, c) => lines.push(m + " " + JSON.stringify(c)), warn: (m, c) => warnings.push(c === undefined ? m : m + " " + JSON.stringify(c)) } });
export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__log") return Response.json(lines);
    if (url.pathname === "/__warnings") return Response.json(warnings);
    if (url.pathname === "/__keys") {
      const tables = await env.DB.prepare("select name from sqlite_master where type = 'table' and name = 'pg_signing_keys'").all();
      if (tables.results.length === 0) return Response.json([]);
      return Response.json((await env.DB.prepare("select kid, private_jwk from pg_signing_keys").all()).results);
    }
    return worker.fetch(request, env, ctx);
  },
};
`;

/** The store's secrets, as the test names them: binding name, secret name. */
const SECRETS: Record<string, string> = {
  PLANTGATE_SIGNING_KEY: "signing-key",
  PLANTGATE_KEY_ENCRYPTION_KEY: "kek",
  PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "client-secret",
};
const KEK = "K".repeat(43);
const CLIENT_SECRET = "store-secret-0123456789abcdef";

let mf: Miniflare | undefined;
afterEach(async () => {
  await mf?.dispose();
  mf = undefined;
});

interface Fetcher {
  fetch(url: string, init?: RequestInit): Promise<Response>;
}

/** A Worker whose `vars` are plain, and whose variables named in `secrets` are bound from the store. */
async function worker(vars: Record<string, string> = { PLANTGATE_BOOTSTRAP_CLIENT_ID: "store-client" }, secrets = Object.keys(SECRETS)): Promise<Fetcher> {
  mf = new Miniflare({
    modules: true,
    script: await bundle(ENTRY),
    compatibilityDate: COMPATIBILITY_DATE,
    d1Databases: ["DB"],
    bindings: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", ...vars },
    kvNamespaces: ["PLANTGATE_CACHE"],
    secretsStoreSecrets: Object.fromEntries(secrets.map((binding) => [binding, { store_id: "plantgate", secret_name: SECRETS[binding]! }])),
  });
  return (await mf.getWorker()) as unknown as Fetcher;
}

/** Puts `value` into the store under the secret bound as `binding` (Miniflare's admin API, as `wrangler secrets-store secret create` does). */
async function putSecret(binding: string, value: string): Promise<void> {
  const admin = (await mf!.getSecretsStoreSecretAPI(binding)) as unknown as () => { create(value: string): Promise<string> };
  await admin().create(value);
}

/** A P-256 private JWK with a kid of its own. */
async function privateJwk(): Promise<JsonWebKey & { kid: string }> {
  const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])) as CryptoKeyPair;
  return { ...(await crypto.subtle.exportKey("jwk", pair.privateKey)), kid: "from-secrets-store" };
}

const token = (w: Fetcher, secret: string) =>
  w.fetch("http://worker.test/UserService/connect/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`store-client:${secret}`)}` },
    body: "grant_type=client_credentials",
  });

describe("variables kept in the Secrets Store", () => {
  it("are read with get(): the store's signing key signs and is published, sealed under the store's KEK, and the bootstrap client has the store's secret", async () => {
    const w = await worker();
    const jwk = await privateJwk();
    await putSecret("PLANTGATE_SIGNING_KEY", JSON.stringify(jwk));
    await putSecret("PLANTGATE_KEY_ENCRYPTION_KEY", KEK);
    await putSecret("PLANTGATE_BOOTSTRAP_CLIENT_SECRET", CLIENT_SECRET);

    const jwks = await w.fetch("http://worker.test/.well-known/jwks.json");
    expect(jwks.status).toBe(200);
    expect(await jwks.json()).toEqual({ keys: [{ kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y, kid: "from-secrets-store", alg: "ES256", use: "sig" }] });
    const issued = await token(w, CLIENT_SECRET);
    expect(issued.status).toBe(200);
    const accessToken = ((await issued.json()) as { access_token: string }).access_token;
    expect(JSON.parse(atob(accessToken.split(".")[0]!.replace(/-/g, "+").replace(/_/g, "/")))).toEqual({ alg: "ES256", typ: "at+jwt", kid: "from-secrets-store" });
    const keys = (await (await w.fetch("http://worker.test/__keys")).json()) as { kid: string; private_jwk: string }[];
    expect(keys.map((k) => k.kid)).toEqual(["from-secrets-store"]);
    expect(keys[0]!.private_jwk).toMatch(/^enc:A256GCM:/);
    expect(await (await w.fetch("http://worker.test/__log")).json()).toEqual([]);
    // Neither "signing keys are stored in clear" nor anything else about the variables (Miniflare's
    // requests carry no CF-Connecting-IP, so the first one is the warning of a request without a
    // client address).
    const unrelated = /^plantgate: (neither issuer nor baseUrl|a request came with no client address \(the adapter passed no clientIp; on Cloudflare Workers, the request had no IP address in CF-Connecting-IP\))/;
    expect(((await (await w.fetch("http://worker.test/__warnings")).json()) as string[]).filter((line) => !unrelated.test(line))).toEqual([]);
  }, 60_000);

  it("a signing key and a KEK from the store, without a bootstrap: the store's key is the one published (a key of the Worker's own making was, without a word), sealed", async () => {
    const w = await worker({}, ["PLANTGATE_SIGNING_KEY", "PLANTGATE_KEY_ENCRYPTION_KEY"]);
    const jwk = await privateJwk();
    await putSecret("PLANTGATE_SIGNING_KEY", JSON.stringify(jwk));
    await putSecret("PLANTGATE_KEY_ENCRYPTION_KEY", KEK);
    const jwks = await w.fetch("http://worker.test/.well-known/jwks.json");
    expect([jwks.status, await jwks.json()]).toEqual([200, { keys: [{ kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y, kid: "from-secrets-store", alg: "ES256", use: "sig" }] }]);
    const keys = (await (await w.fetch("http://worker.test/__keys")).json()) as { kid: string; private_jwk: string }[];
    expect([keys.length, keys[0]!.kid, keys[0]!.private_jwk.startsWith("enc:A256GCM:")]).toEqual([1, "from-secrets-store", true]);
  }, 60_000);

  it("a secret the store does not hold: 503, one line naming the variable, nothing stored; once it is put there, the next request after startRetryMs starts and serves", async () => {
    const w = await worker();
    const jwk = await privateJwk();
    await putSecret("PLANTGATE_SIGNING_KEY", JSON.stringify(jwk));
    await putSecret("PLANTGATE_KEY_ENCRYPTION_KEY", KEK);
    const refused = await token(w, CLIENT_SECRET);
    expect([refused.status, await refused.json()]).toEqual([503, { error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later." }]);
    expect(await (await w.fetch("http://worker.test/__log")).json()).toEqual([
      `plantgate worker failed to start ${JSON.stringify({ error: 'plantgate: PLANTGATE_BOOTSTRAP_CLIENT_SECRET is a Secrets Store binding whose get() failed: Secret "client-secret" not found' })}`,
    ]);
    expect(await (await w.fetch("http://worker.test/__keys")).json()).toEqual([]);
    await putSecret("PLANTGATE_BOOTSTRAP_CLIENT_SECRET", CLIENT_SECRET);
    // The failed start is kept for startRetryMs; the first request after it starts afresh.
    await new Promise((resolve) => setTimeout(resolve, WORKER_START_RETRY_MS));
    expect((await token(w, CLIENT_SECRET)).status).toBe(200);
    const all = JSON.stringify(await (await w.fetch("http://worker.test/__log")).json());
    for (const secret of [CLIENT_SECRET, KEK, jwk.d!]) expect(all).not.toContain(secret);
  }, 60_000);
});
