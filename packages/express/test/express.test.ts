import { request as httpRequest } from "node:http";
import express, { type ErrorRequestHandler } from "express";
import nodeFetch from "node-fetch";
import { describe, expect, it, vi } from "vitest";
import { HostFaultError } from "@plantgate/core";
import { plantgate, BODY_CONSUMED, PlantgateBodyConsumedError } from "../src/index.js";
import { CLIENT_ID, CLIENT_SECRET, PASSWORD, USERNAME, basic, clientToken, form, listen, plantgateApp, token } from "./support.js";

async function mounted(setup?: (app: express.Express) => void) {
  const pg = await plantgateApp();
  const app = express();
  setup?.(app);
  app.use("/auth", plantgate(pg));
  const origin = await listen(app);
  return { pg, app, origin, base: `${origin}/auth` };
}

describe("grants through the Express mount", () => {
  it("client_credentials with HTTP Basic", async () => {
    const { base } = await mounted();
    const res = await token(base, { grant_type: "client_credentials" });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ token_type: "Bearer", expires_in: 7200 });
    expect(typeof body.access_token).toBe("string");
    expect(body.refresh_token).toBeUndefined();
  });

  it("password with offline_access (client_secret_post), then refresh_token rotates", async () => {
    const { base } = await mounted();
    const res = await fetch(`${base}/UserService/connect/token`, {
      method: "POST",
      body: form({
        grant_type: "password",
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        username: USERNAME,
        password: PASSWORD,
        scope: "Platform_UserAPIs offline_access",
      }),
    });
    expect(res.status).toBe(200);
    const first = (await res.json()) as { access_token: string; refresh_token: string; scope: string };
    expect(first.scope).toBe("Platform_UserAPIs offline_access");
    expect(first.refresh_token).toEqual(expect.any(String));

    const refreshed = await token(base, { grant_type: "refresh_token", refresh_token: first.refresh_token });
    expect(refreshed.status).toBe(200);
    const second = (await refreshed.json()) as { access_token: string; refresh_token: string };
    expect(second.refresh_token).not.toBe(first.refresh_token);

    // The spent token presented again within the grace window gets the rotation's answer again
    // (README: refresh-token grace window); after the window it is reuse (core tests, with a clock).
    const replay = await token(base, { grant_type: "refresh_token", refresh_token: first.refresh_token });
    expect(replay.status).toBe(200);
    const replayed = (await replay.json()) as { access_token: string; refresh_token: string };
    expect({ access_token: replayed.access_token, refresh_token: replayed.refresh_token }).toEqual({
      access_token: second.access_token,
      refresh_token: second.refresh_token,
    });
  });

  it("wrong client secret -> 401 invalid_client with WWW-Authenticate: Basic", async () => {
    const { base } = await mounted();
    const res = await fetch(`${base}/UserService/connect/token`, {
      method: "POST",
      headers: { authorization: basic(CLIENT_ID, "wrong-secret-wrong-secret") },
      body: form({ grant_type: "client_credentials" }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Basic/);
    expect(((await res.json()) as { error: string }).error).toBe("invalid_client");
  });
});

describe("APIs through the Express mount", () => {
  it("GetAccountList pages", async () => {
    const { pg, base } = await mounted();
    for (const name of ["bob", "carol", "dave", "erin"]) {
      await pg.admin.createAccount({ username: name, password: "another long passphrase" });
    }
    const access = await clientToken(base);
    const page = async (n: number) => {
      const res = await fetch(`${base}/rbac/ServerCommand/GetAccountList?page=${n}&pageSize=2`, {
        headers: { authorization: `Bearer ${access}` },
      });
      expect(res.status).toBe(200);
      return (await res.json()) as { accounts: Array<{ username: string }>; page: number; pageSize: number; total: number; totalPages: number };
    };
    const pages = [await page(1), await page(2), await page(3), await page(4)];
    expect(pages.map((p) => p.accounts.length)).toEqual([2, 2, 1, 0]);
    expect(pages[0]).toMatchObject({ page: 1, pageSize: 2, total: 5, totalPages: 3 });
    const names = pages.flatMap((p) => p.accounts.map((a) => a.username));
    expect(new Set(names)).toEqual(new Set([USERNAME, "bob", "carol", "dave", "erin"]));

    const bad = await fetch(`${base}/rbac/ServerCommand/GetAccountList?pageSize=0`, {
      headers: { authorization: `Bearer ${access}` },
    });
    expect(bad.status).toBe(400);
  });

  it("POST /plants keeps int64 ids exact at both ends of the range", async () => {
    const { base } = await mounted();
    const access = await clientToken(base);
    for (const id of ["9223372036854775807", "-9223372036854775808"]) {
      const res = await fetch(`${base}/plants`, {
        method: "POST",
        headers: { authorization: `Bearer ${access}`, "content-type": "application/json" },
        body: `{"id":${id},"name":"Monstera","tag":"indoor"}`,
      });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain(`"id":${id}`);
      expect(text).toBe(`{"id":${id},"name":"Monstera","tag":"indoor"}`);
    }
  });

  it("a 2 MB body -> 400 with error 1007", async () => {
    const { base } = await mounted();
    const access = await clientToken(base);
    const big = `{"id":1,"name":"${"x".repeat(2 * 1024 * 1024)}"}`;
    const res = await nodeFetch(`${base}/plants`, {
      method: "POST",
      headers: { authorization: `Bearer ${access}`, "content-type": "application/json" },
      body: big,
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: 1007, message: expect.any(String) });
  });

  it("no token -> 401 with WWW-Authenticate: Bearer", async () => {
    const { base } = await mounted();
    const res = await fetch(`${base}/plants`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `{"id":1,"name":"x"}`,
    });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer realm="plantgate"/);
    const list = await fetch(`${base}/rbac/ServerCommand/GetAccountList`);
    expect(list.status).toBe(401);
    expect(list.headers.get("www-authenticate")).toMatch(/^Bearer/);
  });

  it("a wrong method on a plantgate route is answered by plantgate (405), not passed on", async () => {
    const { base } = await mounted();
    const res = await fetch(`${base}/plants`);
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
  });
});

describe("mount path, origin and trust proxy", () => {
  it("metadata and JWKS URLs include the mount path; the JWKS is served there", async () => {
    const { origin, base } = await mounted();
    const res = await fetch(`${base}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    const meta = (await res.json()) as { token_endpoint: string; jwks_uri: string };
    expect(meta.token_endpoint).toBe(`${origin}/auth/UserService/connect/token`);
    expect(meta.jwks_uri).toBe(`${origin}/auth/.well-known/jwks.json`);
    const jwks = await fetch(meta.jwks_uri);
    expect(jwks.status).toBe(200);
    // The one signing key of a new app, public members only.
    const { keys } = (await jwks.json()) as { keys: Record<string, unknown>[] };
    expect(keys.map((k) => Object.keys(k).sort())).toEqual([["alg", "crv", "kid", "kty", "use", "x", "y"]]);
    expect(keys[0]).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
  });

  it("works under a nested mount path (basePath = mount path) and in a sub-router", async () => {
    const pg = await plantgateApp({ basePath: "/api/v1/auth" });
    const app = express();
    const api = express.Router();
    api.use("/v1/auth", plantgate(pg));
    app.use("/api", api);
    const origin = await listen(app);
    const res = await fetch(`${origin}/api/v1/auth/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { token_endpoint: string }).token_endpoint).toBe(
      `${origin}/api/v1/auth/UserService/connect/token`,
    );
    expect(await clientToken(`${origin}/api/v1/auth`)).toEqual(expect.any(String));
  });

  it("trust proxy off: X-Forwarded-Proto/-Host are ignored", async () => {
    const { origin, base } = await mounted();
    const res = await fetch(`${base}/.well-known/oauth-authorization-server`, {
      headers: { "x-forwarded-proto": "https", "x-forwarded-host": "auth.example.com" },
    });
    expect(((await res.json()) as { token_endpoint: string }).token_endpoint).toBe(
      `${origin}/auth/UserService/connect/token`,
    );
  });

  it("trust proxy on: X-Forwarded-Proto/-Host decide the origin", async () => {
    const { base } = await mounted((app) => app.set("trust proxy", "loopback"));
    const res = await fetch(`${base}/.well-known/oauth-authorization-server`, {
      headers: { "x-forwarded-proto": "https", "x-forwarded-host": "auth.example.com" },
    });
    expect(((await res.json()) as { token_endpoint: string }).token_endpoint).toBe(
      "https://auth.example.com/auth/UserService/connect/token",
    );
    // Only the scheme forwarded: the Host header stays.
    const port = new URL(base).port;
    const protoOnly = await fetch(`${base}/.well-known/oauth-authorization-server`, {
      headers: { "x-forwarded-proto": "https" },
    });
    expect(((await protoOnly.json()) as { jwks_uri: string }).jwks_uri).toBe(
      `https://127.0.0.1:${port}/auth/.well-known/jwks.json`,
    );
  });

  it("a malformed forwarded host gives way to the Host header, as on the Node listener (one host check for both)", async () => {
    const { base } = await mounted((app) => app.set("trust proxy", "loopback"));
    const port = new URL(base).port;
    for (const host of ["evil.example/path", "a b", "[zz::1]", "host:99999"]) {
      const res = await fetch(`${base}/.well-known/oauth-authorization-server`, {
        headers: { "x-forwarded-proto": "https", "x-forwarded-host": host },
      });
      expect(((await res.json()) as { issuer: string }).issuer, host).toBe(`https://127.0.0.1:${port}/auth`);
    }
  });
});

describe("Express integration", () => {

  it("a body parser mounted before plantgate, a body plantgate needs: plantgate's own 500, the host's error handler not involved", async () => {
    const seen: unknown[] = [];
    const handler: ErrorRequestHandler = (err, _req, res, _next) => {
      seen.push(err);
      res.status(599).end();
    };
    const { base, app } = await mounted((a) => a.use(express.urlencoded()));
    app.use(handler);
    const res = await token(base, { grant_type: "client_credentials" });
    expect([res.status, res.headers.get("cache-control"), res.headers.get("pragma"), await res.text()]).toEqual([
      500,
      "no-store",
      "no-cache",
      '{"error":"server_error","error_description":"The server encountered an unexpected error."}',
    ]);
    expect(seen).toEqual([]);
  });

  it("a Web handler that reads a consumed body and blames the client (a 4xx) -> next(err) reaches a custom error handler", async () => {
    const seen: unknown[] = [];
    const handler: ErrorRequestHandler = (err, _req, res, _next) => {
      seen.push(err);
      res.status(500).json({ error: 1500, code: (err as { code?: string }).code, message: (err as Error).message });
    };
    const webApp = {
      async fetch(request: Request): Promise<Response> {
        try {
          await request.text();
        } catch {
          return new Response("your upload broke", { status: 400 });
        }
        return new Response("read", { status: 200 });
      },
    };
    const app = express();
    app.use(express.urlencoded());
    app.use(plantgate(webApp));
    app.use(handler);
    const res = await fetch(`${await listen(app)}/anything`, { method: "POST", body: form({ grant_type: "client_credentials" }) });
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error: number; code: string; message: string };
    expect(body.error).toBe(1500);
    expect(body.code).toBe(BODY_CONSUMED);
    expect(body.message).toMatch(/^plantgate: a body parser consumed the request body before plantgate; mount plantgate before express\.json\(\)\/express\.urlencoded\(\)/);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeInstanceOf(PlantgateBodyConsumedError);
    expect(seen[0]).toBeInstanceOf(HostFaultError);
  });

  it("a body parser mounted before plantgate leaves the app's own routes alone, under the mount and at a root mount: they get their parsed bodies", async () => {
    const { app, origin } = await mounted((a) => a.use(express.json()));
    app.post("/auth/custom", (req, res) => void res.json({ got: req.body as unknown }));
    app.post("/api/items", (req, res) => void res.json({ got: req.body as unknown }));
    for (const path of ["/auth/custom", "/api/items"]) {
      const res = await fetch(`${origin}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: `{"a":1}` });
      expect([path, res.status, await res.json()]).toEqual([path, 200, { got: { a: 1 } }]);
    }
    const root = express();
    root.use(express.json());
    root.use(plantgate(await plantgateApp()));
    root.post("/api/items", (req, res) => void res.json({ got: req.body as unknown }));
    const rootOrigin = await listen(root);
    const res = await fetch(`${rootOrigin}/api/items`, { method: "POST", headers: { "content-type": "application/json" }, body: `{"a":2}` });
    expect([res.status, await res.json()]).toEqual([200, { got: { a: 2 } }]);
  });

  it("a body parser mounted after plantgate is fine for plantgate and for the app's own routes", async () => {
    const { app, base, origin } = await mounted();
    app.use(express.json());
    app.post("/echo", (req, res) => {
      res.json({ got: req.body as unknown });
    });
    expect(await clientToken(base)).toEqual(expect.any(String));
    const res = await fetch(`${origin}/echo`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `{"a":1}`,
    });
    expect(await res.json()).toEqual({ got: { a: 1 } });
  });

  it("unknown paths under the mount fall through to the app's own routes and 404 handling", async () => {
    const { app, origin, base } = await mounted();
    app.use(express.json());
    app.get("/auth/profile", (_req, res) => {
      res.json({ own: "profile" });
    });
    app.post("/auth/feedback", (req, res) => {
      res.status(201).json({ received: req.body as unknown });
    });
    app.get("/other", (_req, res) => {
      res.json({ own: "other" });
    });

    expect(await (await fetch(`${base}/profile`)).json()).toEqual({ own: "profile" });
    // A body the plantgate request never read is still intact for the next route.
    const feedback = await fetch(`${base}/feedback`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `{"stars":5}`,
    });
    expect(feedback.status).toBe(201);
    expect(await feedback.json()).toEqual({ received: { stars: 5 } });
    expect(await (await fetch(`${origin}/other`)).json()).toEqual({ own: "other" });
    // Nobody handles it: Express's own 404.
    const missing = await fetch(`${base}/nothing-here`);
    expect(missing.status).toBe(404);
    expect(await missing.text()).toContain("Cannot GET /auth/nothing-here");
  });

  it("unknown paths go on without plantgate answering them (owns), and the console's own paths stay plantgate's", async () => {
    const pg = await plantgateApp({ basePath: "/auth", console: { enabled: true } });
    const asked: string[] = [];
    const spy = { handle: (request: Request, info?: object) => (asked.push(new URL(request.url).pathname), pg.handle(request, info)), owns: (path: string) => pg.owns(path) };
    const app = express();
    app.use("/auth", plantgate(spy));
    app.use((req, res) => {
      res.status(404).json({ express: req.originalUrl });
    });
    const origin = await listen(app);
    const unknown = await fetch(`${origin}/auth/nothing-here`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ express: "/auth/nothing-here" });
    const unknownConsole = await fetch(`${origin}/auth/console/nope`);
    expect(await unknownConsole.json()).toEqual({ express: "/auth/console/nope" });
    const session = await fetch(`${origin}/auth/console/api/session`);
    expect(session.status).toBe(401);
    expect(await session.json()).toEqual({ error: 1301, message: "Sign in to the console first." });
    const wrongMethod = await fetch(`${origin}/auth/UserService/connect/token`);
    expect(wrongMethod.status).toBe(405);
    expect(asked).toEqual(["/auth/console/api/session", "/auth/UserService/connect/token"]);
  });

  it("an app without owns() answers every path itself, its 404s included", async () => {
    const app = express();
    app.use("/w", plantgate({ fetch: async () => Response.json({ error: 1404, message: "Not found." }, { status: 404 }) }));
    app.use((_req, res) => {
      res.status(404).json({ express: true });
    });
    const origin = await listen(app);
    const res = await fetch(`${origin}/w/anything`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 1404, message: "Not found." });
  });

  it('notFound: "respond" sends plantgate\'s own 404', async () => {
    const pg = await plantgateApp();
    const app = express();
    app.use("/auth", plantgate(pg, { notFound: "respond" }));
    app.get("/auth/profile", (_req, res) => {
      res.json({ own: "profile" });
    });
    const origin = await listen(app);
    const res = await fetch(`${origin}/auth/profile`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: 1404 });
  });

  it("an app that throws -> next(err)", async () => {
    const failure = new Error("boom");
    const seen: unknown[] = [];
    const app = express();
    app.use("/auth", plantgate({ fetch: () => Promise.reject(failure) }));
    app.use(((err, _req, res, _next) => {
      seen.push(err);
      res.status(502).json({ handled: true });
    }) as ErrorRequestHandler);
    const origin = await listen(app);
    const res = await fetch(`${origin}/auth/.well-known/jwks.json`);
    expect(res.status).toBe(502);
    expect(await res.json()).toEqual({ handled: true });
    expect(seen).toEqual([failure]);
  });

  it("an app that reads part of the body and throws -> next(err), and Express's own final handler answers (the paused body hung it)", async () => {
    const failure = new Error("boom after one chunk");
    const app = express();
    // "test": Express's final handler then logs nothing (it shows the stack in the page, as in development).
    app.set("env", "test");
    app.use(
      "/w",
      plantgate({
        fetch: async (request: Request) => {
          await request.body!.getReader().read();
          throw failure;
        },
      }),
    );
    const origin = await listen(app);
    const body = Buffer.alloc(200_000, "a");
    for (const connection of ["close", "keep-alive"]) {
      const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = httpRequest(`${origin}/w/upload`, { method: "POST", headers: { "content-type": "application/octet-stream", "content-length": String(body.length), connection } }, (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (text += chunk));
          res.on("end", () => resolve({ status: res.statusCode!, text }));
        });
        req.setTimeout(5_000, () => req.destroy(new Error(`no answer within 5 s (Connection: ${connection})`)));
        req.on("error", reject);
        req.end(body);
      });
      expect(answer, connection).toEqual({ status: 500, text: expect.stringContaining("Error: boom after one chunk") });
    }
  });

  it("the upload discard bounds reach the lingering close: uploadDiscardMs 0 cuts off an upload still arriving after the answer at once (the 30 s default would hold it open)", async () => {
    const pg = await plantgateApp();
    const app = express();
    app.use("/auth", plantgate(pg, { uploadDiscardMs: 0 }));
    const { hostname, port } = new URL(await listen(app));
    const { connect } = await import("node:net");
    const socket = connect(Number(port), hostname);
    socket.on("error", () => {});
    let received = "";
    socket.setEncoding("latin1").on("data", (chunk: string) => (received += chunk));
    const closed = new Promise<number>((resolve) => socket.once("close", () => resolve(Date.now())));
    // No access token: answered 401 without the body, of which 1,000 of 1,048,576 bytes come.
    socket.write(`POST /auth/plants HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1048576\r\n\r\n${"d".repeat(1000)}`);
    const answeredAt = await vi.waitFor(() => {
      expect(received).toContain('{"error":1201,"message":"An access token is required."}');
      return Date.now();
    }, { timeout: 5_000, interval: 10 });
    expect(received.startsWith("HTTP/1.1 401 Unauthorized\r\n")).toBe(true);
    expect((await closed) - answeredAt).toBeLessThan(2_000);
  });

  it("upload discard bounds are checked when the middleware is made, not per request after the app has answered", async () => {
    const pg = await plantgateApp();
    for (const options of [{ uploadDiscardMs: Infinity }, { uploadDiscardMs: -1 }, { uploadDiscardBytes: 1.5 }, { uploadDiscardBytes: Number.NaN }]) {
      expect(() => plantgate(pg, options), JSON.stringify(options)).toThrow(TypeError);
    }
    expect(() => plantgate(pg, { uploadDiscardMs: 0, uploadDiscardBytes: 0 })).not.toThrow();
  });

  it("mounted at the root it serves basePath's routes and the RFC 8414 §3.1 metadata URL outside basePath; the app's own routes go on", async () => {
    const pg = await plantgateApp();
    const root = express();
    root.use(plantgate(pg));
    root.get("/health", (_req, res) => void res.json({ ok: true }));
    const origin = await listen(root);
    const metadata = await fetch(`${origin}/.well-known/oauth-authorization-server/auth`);
    expect(metadata.status).toBe(200);
    const body = (await metadata.json()) as { issuer: string; token_endpoint: string };
    expect({ issuer: body.issuer, token_endpoint: body.token_endpoint }).toEqual({ issuer: `${origin}/auth`, token_endpoint: `${origin}/auth/UserService/connect/token` });
    expect(await clientToken(`${origin}/auth`)).toEqual(expect.any(String));
    expect(await (await fetch(`${origin}/health`)).json()).toEqual({ ok: true });
    // Mounted at basePath, that one URL is outside the mount (README, Express): Express's own 404.
    const { origin: mountedOrigin } = await mounted();
    expect((await fetch(`${mountedOrigin}/.well-known/oauth-authorization-server/auth`)).status).toBe(404);
  });

  it("a middleware that sets req.body without reading the stream (body-parser 1.x does so on every request) is not a consumed body", async () => {
    const { base } = await mounted((app) =>
      app.use((req, _res, next) => {
        (req as { body?: unknown }).body ??= {};
        next();
      }),
    );
    const res = await token(base, { grant_type: "client_credentials" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ token_type: "Bearer", expires_in: 7200, access_token: expect.any(String) });
  });

  it("the same plantgate app answers identically through Express and directly", async () => {
    const pg = await plantgateApp();
    const app = express();
    app.use("/auth", plantgate(pg));
    const origin = await listen(app);
    const requests: [string, RequestInit][] = [
      ["/auth/.well-known/jwks.json", {}],
      ["/auth/.well-known/oauth-authorization-server", {}],
      ["/auth/UserService/connect/token", { method: "POST", headers: { authorization: basic(), "content-type": "application/x-www-form-urlencoded" }, body: "grant_type=device_code" }],
      ["/auth/UserService/connect/token", { method: "POST", headers: { authorization: basic(CLIENT_ID, "wrong-secret"), "content-type": "application/x-www-form-urlencoded" }, body: "grant_type=client_credentials" }],
      ["/auth/rbac/ServerCommand/GetAccountList", {}],
      ["/auth/plants", { method: "POST", headers: { "content-type": "application/json" }, body: "{" }],
    ];
    const seen = (res: Response, body: string) => ({
      status: res.status,
      body,
      headers: Object.fromEntries(["content-type", "cache-control", "pragma", "www-authenticate", "allow"].map((h) => [h, res.headers.get(h)])),
    });
    for (const [path, init] of requests) {
      const viaExpress = await fetch(`${origin}${path}`, init);
      const direct = await pg.fetch(new Request(`${origin}${path}`, init));
      expect(seen(viaExpress, await viaExpress.text()), path).toEqual(seen(direct, await direct.text()));
    }
  });
});
