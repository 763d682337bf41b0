/**
 * private_key_jwt client authentication (RFC 7523 §2.2 / §3, RFC 7521 §4.2, OIDC Core §9) at the
 * token, revocation and introspection endpoints.
 */
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from "jose";
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AdminError } from "../src/index.js";
import { BASE, basic, harness, tokenRequest, type Harness } from "./helpers.js";
import { expectTokenError, expectTokenSuccess } from "./token-helpers.js";

const TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const TOKEN_URL = `${BASE}/UserService/connect/token`;

interface Signer {
  key: CryptoKey;
  alg: string;
  kid: string;
}

async function signer(alg: string, kid: string, options: Record<string, unknown> = {}): Promise<{ signer: Signer; publicJwk: Record<string, unknown> }> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...options });
  return { signer: { key: privateKey, alg, kid }, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" } };
}

let n = 0;
function assertion(s: Signer, h: Harness, clientId: string, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}) {
  const now = Math.floor(h.clock.now() / 1000);
  return new SignJWT({ jti: `jti-${++n}`, ...claims })
    .setProtectedHeader({ alg: s.alg, kid: s.kid, ...header })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience((claims.aud as string | undefined) ?? TOKEN_URL)
    .setIssuedAt(now)
    .setExpirationTime((claims.exp as number | undefined) ?? now + 60)
    .sign(s.key);
}

const ccWith = (h: Harness, a: string, extra: Record<string, string> = {}) =>
  tokenRequest(h.app, { grant_type: "client_credentials", client_assertion_type: TYPE, client_assertion: a, ...extra });

const refused = (description: string) => ({ error: "invalid_client", error_description: description });

describe("private_key_jwt (RFC 7523)", () => {
  let h: Harness;
  let es: Signer;
  let rs: Signer;
  let other: Signer;
  let jwks: { keys: Record<string, unknown>[] };

  beforeAll(async () => {
    h = await harness();
    const a = await signer("ES256", "es-1");
    const b = await signer("PS256", "ps-1", { modulusLength: 2048 });
    const c = await signer("ES256", "es-1"); // same kid, another key
    es = a.signer;
    rs = b.signer;
    other = c.signer;
    jwks = { keys: [a.publicJwk, b.publicJwk] };
    await h.app.admin.createClient({ clientId: "signed", authMethod: "private_key_jwt", jwks });
  });

  it("RFC 7523 §2.2: an ES256 or PS256 assertion with aud = token endpoint or issuer gets a token", async () => {
    const body = await expectTokenSuccess(await ccWith(h, await assertion(es, h, "signed")));
    expect(body).toMatchObject({ token_type: "Bearer", expires_in: 7200 });
    await expectTokenSuccess(await ccWith(h, await assertion(rs, h, "signed", { aud: BASE })));
    await expectTokenSuccess(await ccWith(h, await assertion(es, h, "signed"), { client_id: "signed" }));
  });

  it("RFC 7523 §3 item 3: with a non-URL issuer (a URN) and no baseUrl, the token endpoint's URL follows the Host and is no audience of ours: only the issuer is", async () => {
    const warnings: string[] = [];
    const u = await harness({ issuer: "urn:example:plantgate", logger: { error() {}, warn: (message) => void warnings.push(message) } });
    await u.app.admin.createClient({ clientId: "signed", authMethod: "private_key_jwt", jwks });
    const at = (host: string, aud: string) =>
      assertion(es, u, "signed", { aud }).then((a) =>
        u.app.fetch(
          new Request(`https://${host}/UserService/connect/token`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({ grant_type: "client_credentials", client_assertion_type: TYPE, client_assertion: a }).toString(),
          }),
          { clientIp: "203.0.113.9" },
        ),
      );
    // An assertion made for another server, replayed here with that server's Host: refused.
    await expectTokenError(await at("other-as.example", "https://other-as.example/UserService/connect/token"), 401, refused("The client assertion's aud must be the issuer."));
    // Our issuer as aud: accepted, whatever the Host.
    expect((await at("other-as.example", "urn:example:plantgate")).status).toBe(200);
    expect(warnings).toEqual([
      "plantgate: the issuer is not an http(s) URL and baseUrl is not configured, so the endpoint URLs in the metadata follow each request's Host (client assertions must name the issuer as aud); set baseUrl for any deployment reachable beyond loopback",
    ]);
    // With baseUrl configured, its token endpoint URL is ours again.
    const b = await harness({ issuer: "urn:example:plantgate", baseUrl: "https://as.example.test" });
    await b.app.admin.createClient({ clientId: "signed", authMethod: "private_key_jwt", jwks });
    const viaBase = await assertion(es, b, "signed", { aud: TOKEN_URL });
    expect((await ccWith(b, viaBase)).status).toBe(200);
  });

  it("RFC 7523 §3 item 7: a replayed assertion (same jti) is refused", async () => {
    const a = await assertion(es, h, "signed");
    await expectTokenSuccess(await ccWith(h, a));
    const text = await expectTokenError(await ccWith(h, a), 401, refused("The client assertion was already used (jti)."));
    expect(text).not.toContain(a);
  });

  it("every failure is 401 invalid_client and never echoes the assertion", async () => {
    const now = Math.floor(h.clock.now() / 1000);
    const cases: [string, Promise<string>, string][] = [
      ["signed by another key", assertion(other, h, "signed"), "The client assertion's signature does not verify with the client's keys."],
      ["another audience", assertion(es, h, "signed", { aud: "https://elsewhere.example" }), "The client assertion's aud must be the issuer or the token endpoint URL."],
      ["expired", assertion(es, h, "signed", { exp: now - 31 }), "The client assertion has expired."],
      ["exp too far ahead", assertion(es, h, "signed", { exp: now + 400 }), "The client assertion's exp must be at most 300 seconds ahead."],
      ["no jti", new SignJWT({}).setProtectedHeader({ alg: "ES256", kid: "es-1" }).setIssuer("signed").setSubject("signed").setAudience(TOKEN_URL).setExpirationTime(now + 60).sign(es.key), "The client assertion must have a jti (1-256 characters)."],
      ["iss differs from sub", new SignJWT({ jti: "x1" }).setProtectedHeader({ alg: "ES256", kid: "es-1" }).setIssuer("someone").setSubject("signed").setAudience(TOKEN_URL).setExpirationTime(now + 60).sign(es.key), "The client assertion's iss and sub must both be the client id."],
      ["unknown kid", assertion(es, h, "signed", {}, { kid: "nope" }), "No key of the client matches the client assertion."],
      ["HMAC", new SignJWT({ jti: "h1" }).setProtectedHeader({ alg: "HS256" }).setIssuer("signed").setSubject("signed").setAudience(TOKEN_URL).setExpirationTime(now + 60).sign(new Uint8Array(32)), "The client assertion's algorithm is not accepted; use one of ES256, ES384, RS256, PS256, EdDSA, Ed25519."],
      ["alg none", Promise.resolve(`${btoa('{"alg":"none"}').replace(/=/g, "")}.${btoa(JSON.stringify({ iss: "signed", sub: "signed", aud: TOKEN_URL, exp: now + 60, jti: "n1" })).replace(/=/g, "")}.`), "The client assertion is not a signed JWT with a sub."],
      ["unknown client", assertion(es, h, "ghost"), "Client authentication failed."],
      ["a secret client", assertion(es, h, "app-1"), "Client authentication failed."],
    ];
    for (const [name, pending, description] of cases) {
      const a = await pending;
      const text = await expectTokenError(await ccWith(h, a), 401, refused(description));
      expect(text, name).not.toContain(a.split(".")[2] || a.split(".")[1]!);
    }
    await expectTokenError(await ccWith(h, "not-a-jwt"), 401, refused("The client assertion is not a signed JWT with a sub."));
    await expectTokenError(await ccWith(h, await assertion(es, h, "signed"), { client_id: "app-1" }), 401, refused("client_id does not match the client assertion's sub."));
    await expectTokenError(
      await tokenRequest(h.app, { grant_type: "client_credentials", client_assertion_type: "urn:other", client_assertion: await assertion(es, h, "signed") }),
      401,
      refused(`client_assertion_type must be ${TYPE}, with a client_assertion.`),
    );
  });

  it("a private_key_jwt client is refused with a secret, and a secret client with an assertion", async () => {
    await expectTokenError(await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic("signed", "x".repeat(43)) }), 401, refused("Client authentication failed."));
    await expectTokenError(
      await tokenRequest(h.app, { grant_type: "client_credentials", client_assertion_type: TYPE, client_assertion: await assertion(es, h, "signed") }, { authorization: basic(h.clientId, h.clientSecret) }),
      400,
      { error: "invalid_request", error_description: "Use one client authentication method: a client assertion, HTTP Basic or client_secret, not several." },
    );
  });

  it("RFC 7009 / RFC 7662: revocation and introspection accept the assertion too", async () => {
    // A client of its own: the failures above count against "signed" in the brute-force throttle.
    await h.app.admin.createClient({ clientId: "signed-2", authMethod: "private_key_jwt", jwks });
    const token = (await expectTokenSuccess(await ccWith(h, await assertion(es, h, "signed-2")))).access_token;
    const post = (path: string, body: Record<string, string>) =>
      h.app.fetch(new Request(`${BASE}/UserService/connect/${path}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(body).toString() }));
    const intro = await post("introspect", { token, client_assertion_type: TYPE, client_assertion: await assertion(es, h, "signed-2") });
    expect(intro.status).toBe(200);
    expect(await intro.json()).toMatchObject({ active: true, client_id: "signed-2" });
    const rev = await post("revocation", { token, client_assertion_type: TYPE, client_assertion: await assertion(es, h, "signed-2", { aud: BASE }) });
    expect(rev.status).toBe(200);
    const after = await post("introspect", { token, client_assertion_type: TYPE, client_assertion: await assertion(es, h, "signed-2") });
    expect(await after.json()).toEqual({ active: false });
  });

  it("rejects a JWK Set with a private or symmetric key at registration", async () => {
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    await expect(h.app.admin.createClient({ authMethod: "private_key_jwt", jwks: { keys: [await exportJWK(privateKey)] } })).rejects.toThrow("the JWK Set must hold public keys only");
    await expect(h.app.admin.createClient({ authMethod: "private_key_jwt", jwks: { keys: [{ kty: "oct", k: "AAAA" }] } })).rejects.toThrow("symmetric (oct) keys are not accepted");
    // An RSA key's other private members (RFC 7518 §6.3.2) without `d` or `p`: `q` alone is the
    // private key (p = n / q). Until 2026-12-01 such a set was stored and shown back (CLI, console).
    const rsa = await exportJWK((await generateKeyPair("RS256", { extractable: true })).privateKey);
    const { d: _d, p: _p, ...partial } = rsa;
    for (const member of ["q", "dp", "dq", "qi", "oth"] as const) {
      const key = member === "oth" ? { kty: rsa.kty, n: rsa.n, e: rsa.e, oth: [{ r: "AQAB", d: "AQAB", t: "AQAB" }] } : { kty: rsa.kty, n: rsa.n, e: rsa.e, [member]: partial[member] };
      await expect(h.app.admin.createClient({ authMethod: "private_key_jwt", jwks: { keys: [key] } }), member).rejects.toThrow("the JWK Set must hold public keys only");
    }
    await expect(h.app.admin.createClient({ authMethod: "private_key_jwt" })).rejects.toThrow("a private_key_jwt client needs exactly one of jwks and jwksUri");
    await expect(h.app.admin.createClient({ authMethod: "private_key_jwt", jwksUri: "http://example.com/jwks" })).rejects.toThrow("jwksUri must use https (http only for localhost)");
    // The URL parser percent-encodes these, but the text given is what is stored: PostgreSQL text
    // holds no U+0000 and no SQL engine a lone surrogate.
    for (const jwksUri of ["https://keys.example/a\u0000b", "https://keys.example/\ud800"]) {
      await expect(h.app.admin.createClient({ authMethod: "private_key_jwt", jwksUri })).rejects.toThrow(new AdminError("jwksUri must not contain U+0000 or unpaired surrogates", { field: "jwksUri" }));
    }
  });

  it("RFC 7518 §3.3: an RSA key under 2048 bits is refused at registration, and one in a set stored before that rule is no candidate (the client's other keys are tried)", async () => {
    // jose makes no such key (nor verifies with one): Web Crypto does.
    const small = await crypto.subtle.generateKey({ name: "RSA-PSS", modulusLength: 1024, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" }, true, ["sign", "verify"]);
    const smallJwk = { ...(await exportJWK(small.publicKey)), alg: "PS256", use: "sig" };
    await expect(h.app.admin.createClient({ authMethod: "private_key_jwt", jwks: { keys: [smallJwk, jwks.keys[1]!] } })).rejects.toThrow(
      new AdminError("RSA keys must be 2048 bits or larger (RFC 7518 §3.3); a key has 1024", { field: "jwks" }),
    );
    // Stored before the rule: the small key first, the client's good PS256 key second, and an
    // assertion without a kid. Until 2026-12-01 the small key's TypeError refused it at once.
    await h.app.admin.createClient({ clientId: "legacy-rsa", authMethod: "private_key_jwt", jwks: { keys: [jwks.keys[1]!] } });
    const stored = (await h.app.storage.clients.get("legacy-rsa"))!;
    const { kid: _kid, ...good } = jwks.keys[1]!;
    await h.app.storage.clients.delete("legacy-rsa");
    await h.app.storage.clients.create({ ...stored, jwks: JSON.stringify({ keys: [smallJwk, good] }) });
    await expectTokenSuccess(await ccWith(h, await assertion(rs, h, "legacy-rsa", {}, { kid: undefined })));
  });

  it("an EC key of the right size whose point is off its curve is refused at registration (it passed every other rule and failed only at import, every assertion 401); one in a set stored before is passed over", async () => {
    const good = jwks.keys[0]!;
    const y = Uint8Array.from(atob((good.y as string).replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
    y[31]! ^= 1;
    const offCurve = { ...good, kid: "off-1", y: btoa(String.fromCharCode(...y)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "") };
    const refusal = new AdminError("a key does not import as a public key (EC P-256): its members are no key of that kind, such as a point off the curve", { field: "jwks" });
    for (const keys of [[offCurve], [offCurve, good], [good, offCurve]]) {
      const outcome = await h.app.admin.createClient({ clientId: "off-curve", authMethod: "private_key_jwt", jwks: { keys } }).then(() => null, (e: unknown) => e);
      expect(outcome).toEqual(refusal);
      expect((outcome as AdminError).field).toBe("jwks");
    }
    expect(await h.app.storage.clients.get("off-curve")).toBeNull();
    // Stored before the rule, beside the client's key: its import fails, the other key verifies.
    await h.app.admin.createClient({ clientId: "legacy-off-curve", authMethod: "private_key_jwt", jwks: { keys: [good] } });
    const stored = (await h.app.storage.clients.get("legacy-off-curve"))!;
    await h.app.storage.clients.delete("legacy-off-curve");
    await h.app.storage.clients.create({ ...stored, jwks: JSON.stringify({ keys: [{ ...offCurve, kid: "es-1" }, good] }) });
    await expectTokenSuccess(await ccWith(h, await assertion(es, h, "legacy-off-curve")));
  });
});

describe("private_key_jwt with a jwks_uri (real HTTP server)", () => {
  let server: Server;
  let published: Record<string, unknown>[] = [];
  let fetches = 0;
  let uri = "";
  beforeAll(async () => {
    server = createServer((req, res) => {
      fetches++;
      // A redirect to the set: never followed (the redirect target would count as a second fetch).
      if (req.url === "/moved.json") return void res.writeHead(302, { location: "/jwks.json" }).end();
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: published }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    uri = `http://127.0.0.1:${(server.address() as { port: number }).port}/jwks.json`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("fetches the set, caches it, and refetches on an unknown kid at most once a minute", async () => {
    const h = await harness();
    const first = await signer("EdDSA", "ed-1");
    const second = await signer("ES384", "es384-1");
    published = [first.publicJwk];
    await h.app.admin.createClient({ clientId: "remote", authMethod: "private_key_jwt", jwksUri: uri });
    await expectTokenSuccess(await ccWith(h, await assertion(first.signer, h, "remote")));
    await expectTokenSuccess(await ccWith(h, await assertion(first.signer, h, "remote")));
    expect(fetches).toBe(1);
    // A new key published: the first assertion with its kid refetches once (the fetch is over a minute old).
    h.clock.advance(61_000);
    published = [first.publicJwk, second.publicJwk];
    await expectTokenSuccess(await ccWith(h, await assertion(second.signer, h, "remote")));
    expect(fetches).toBe(2);
    // Unknown kids within the minute do not fetch again.
    await expectTokenError(await ccWith(h, await assertion(second.signer, h, "remote", {}, { kid: "nope" })), 401, refused("No key of the client matches the client assertion."));
    await expectTokenError(await ccWith(h, await assertion(second.signer, h, "remote", {}, { kid: "nope2" })), 401, refused("No key of the client matches the client assertion."));
    expect(fetches).toBe(2);
  });

  it("a jwks_uri that redirects is not followed: the assertion is refused, and the warning names the status", async () => {
    const warnings: unknown[] = [];
    const h = await harness({ logger: { error() {}, warn: (message, context) => void warnings.push({ message, context }) } });
    const key = await signer("ES256", "es-moved");
    published = [key.publicJwk];
    fetches = 0;
    await h.app.admin.createClient({ clientId: "moved", authMethod: "private_key_jwt", jwksUri: uri.replace("/jwks.json", "/moved.json") });
    await expectTokenError(await ccWith(h, await assertion(key.signer, h, "moved")), 401, refused("No key of the client matches the client assertion."));
    expect(fetches).toBe(1);
    expect(warnings.filter((w) => (w as { message: string }).message.startsWith("jwks_uri"))).toEqual([{ message: "jwks_uri could not be used", context: { jwksUri: uri.replace("/jwks.json", "/moved.json"), reason: "status 302" } }]);
  });
});

describe("a jwks_uri that sends too much (real HTTP server)", () => {
  let server: Server;
  let sent = 0;
  let uri = "";
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === "/declared") {
        // Declares 10 MB and sends it: refused on the header, before the body is read.
        res.writeHead(200, { "content-type": "application/json", "content-length": String(10_000_000) });
        const chunk = Buffer.alloc(65_536, 0x20);
        let left = 10_000_000;
        const pump = () => {
          while (left > 0) {
            const n = Math.min(left, chunk.length);
            left -= n;
            sent += n;
            if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once("drain", pump);
          }
          res.end();
        };
        res.on("close", () => (left = 0));
        return pump();
      }
      // Chunked, without end: up to 200 MB of spaces unless the reader gives up.
      res.writeHead(200, { "content-type": "application/json" });
      const chunk = Buffer.alloc(16_384, 0x20);
      let open = true;
      res.on("close", () => (open = false));
      const pump = () => {
        while (open && sent < 200_000_000) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        res.end();
      };
      pump();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    uri = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("a jwks_uri's query (a presigned URL's signature) is not in the warning", async () => {
    sent = 0;
    const warnings: unknown[] = [];
    const h = await harness({ logger: { error() {}, warn: (message, context) => void warnings.push({ message, context }) } });
    const key = await signer("EdDSA", "ed-1");
    await h.app.admin.createClient({ clientId: "signed", authMethod: "private_key_jwt", jwksUri: `${uri}/declared?X-Amz-Signature=c2VjcmV0&token=t0k3n#frag` });
    await expectTokenError(await ccWith(h, await assertion(key.signer, h, "signed")), 401, refused("No key of the client matches the client assertion."));
    const shown = warnings.filter((w) => (w as { message: string }).message.startsWith("jwks_uri"));
    expect(shown).toEqual([{ message: "jwks_uri could not be used", context: { jwksUri: `${uri}/declared?[redacted]`, reason: "the JWK Set exceeds 65536 bytes" } }]);
    expect(JSON.stringify(warnings)).not.toMatch(/c2VjcmV0|t0k3n|frag/);
  });

  for (const path of ["/streamed", "/declared"]) {
    it(`${path}: the fetch gives up past 64 KiB (the server sends a few MB at most, not its 200 MB or 10 MB), the assertion is refused, and the warning says why`, async () => {
      sent = 0;
      const warnings: unknown[] = [];
      const h = await harness({ logger: { error() {}, warn: (message, context) => void warnings.push({ message, context }) } });
      const key = await signer("EdDSA", "ed-1");
      await h.app.admin.createClient({ clientId: "flood", authMethod: "private_key_jwt", jwksUri: `${uri}${path}` });
      await expectTokenError(await ccWith(h, await assertion(key.signer, h, "flood")), 401, refused("No key of the client matches the client assertion."));
      expect(warnings.filter((w) => (w as { message: string }).message.startsWith("jwks_uri"))).toEqual([{ message: "jwks_uri could not be used", context: { jwksUri: `${uri}${path}`, reason: "the JWK Set exceeds 65536 bytes" } }]);
      // Socket buffers on both sides hold some; a reader that read all would have taken it all.
      await new Promise((r) => setTimeout(r, 50));
      expect(sent).toBeLessThan(8_000_000);
    });
  }
});
