import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express, { type RequestHandler } from "express";
import { afterEach, describe, expect, it } from "vitest";
import { createRequestListener, type FetchApp } from "@plantgate/node";
import { plantgate } from "../src/index.js";
import { CLIENT_ID, CLIENT_SECRET, basic, clientToken, listen, plantgateApp } from "./support.js";

// A host app that mounts a body parser *before* plantgate. Requests plantgate refuses without ever
// reading their body (a JSON body to the form-only token endpoint, a body to a GET-only route, a
// request refused on its credentials or its origin first) get exactly plantgate's answer, as on an
// app without the parser; only a request whose body plantgate needs, and which the parser took,
// gets plantgate's 500 (a HostFaultError: the README's "Mount order"); a Web handler that reads the
// body and answers anything but a 5xx goes to next(PlantgateBodyConsumedError).

const nodeServers: Server[] = [];
afterEach(async () => {
  await Promise.all(nodeServers.splice(0).map((s) => new Promise<void>((resolve) => (s.closeAllConnections(), s.close(() => resolve())))));
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

async function answer(res: Response): Promise<Answer> {
  const headers: Record<string, string> = {};
  // Date is the only header that depends on the moment of sending.
  for (const [name, value] of res.headers) if (name !== "date") headers[name] = value;
  return { status: res.status, headers, body: await res.text() };
}

/** Three servers over one plantgate app: Express with `parser` mounted first, Express without it, the Node listener. */
async function servers(parser: RequestHandler, options: Parameters<typeof plantgateApp>[0] = {}) {
  const pg = await plantgateApp(options);
  const parsed = express();
  parsed.use(parser);
  parsed.use(plantgate(pg));
  const plain = express();
  plain.use(plantgate(pg));
  const node = createServer(createRequestListener(pg));
  await new Promise<void>((resolve) => node.listen(0, "127.0.0.1", resolve));
  nodeServers.push(node);
  return {
    pg,
    parsed: await listen(parsed),
    plain: await listen(plain),
    node: `http://127.0.0.1:${(node.address() as AddressInfo).port}`,
  };
}

const JSON_TOKEN_REQUEST = JSON.stringify({ grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: CLIENT_SECRET });
const json = { "content-type": "application/json" };

describe("express.json() mounted before plantgate", () => {
  const cases: { name: string; path: string; init: RequestInit; status: number; body: unknown }[] = [
    {
      name: "a JSON body to the token endpoint (RFC 6749 §3.2: form only)",
      path: "/auth/UserService/connect/token",
      init: { method: "POST", headers: { ...json, authorization: basic() }, body: JSON_TOKEN_REQUEST },
      status: 400,
      body: { error: "invalid_request", error_description: "The request body must be application/x-www-form-urlencoded." },
    },
    {
      name: "a JSON body to the token endpoint, client credentials in it",
      path: "/auth/UserService/connect/token",
      init: { method: "POST", headers: json, body: JSON_TOKEN_REQUEST },
      status: 400,
      body: { error: "invalid_request", error_description: "The request body must be application/x-www-form-urlencoded." },
    },
    {
      name: "a JSON body to the revocation endpoint",
      path: "/auth/UserService/connect/revocation",
      init: { method: "POST", headers: { ...json, authorization: basic() }, body: `{"token":"x"}` },
      status: 400,
      body: { error: "invalid_request", error_description: "The request body must be application/x-www-form-urlencoded." },
    },
    {
      name: "a JSON body to the introspection endpoint",
      path: "/auth/UserService/connect/introspect",
      init: { method: "POST", headers: { ...json, authorization: basic() }, body: `{"token":"x"}` },
      status: 400,
      body: { error: "invalid_request", error_description: "The request body must be application/x-www-form-urlencoded." },
    },
    {
      name: "a JSON PUT to the token endpoint (POST only)",
      path: "/auth/UserService/connect/token",
      init: { method: "PUT", headers: json, body: `{}` },
      status: 405,
      body: { error: "invalid_request", error_description: "Use POST for this endpoint." },
    },
    {
      name: "a JSON POST to the JWKS (GET only)",
      path: "/auth/.well-known/jwks.json",
      init: { method: "POST", headers: json, body: `{"a":1}` },
      status: 405,
      body: { error: 1405, message: "Use GET, HEAD for this endpoint." },
    },
    {
      name: "a JSON POST to the plant store without a bearer token",
      path: "/auth/plants",
      init: { method: "POST", headers: json, body: `{"id":1,"name":"Monstera"}` },
      status: 401,
      body: { error: 1201, message: "An access token is required." },
    },
  ];

  for (const c of cases) {
    it(`${c.name}: plantgate's ${c.status}, status/headers/body as without the parser and as on the Node listener`, async () => {
      const { parsed, plain, node } = await servers(express.json());
      const got = await answer(await fetch(parsed + c.path, c.init));
      const without = await answer(await fetch(plain + c.path, c.init));
      const onNode = await answer(await fetch(node + c.path, c.init));
      expect(got).toEqual(without);
      expect({ status: got.status, body: JSON.parse(got.body) as unknown }).toEqual({ status: c.status, body: c.body });
      expect({ status: onNode.status, body: onNode.body }).toEqual({ status: got.status, body: got.body });
      expect(got.headers["content-type"]).toBe("application/json");
    });
  }

  it("a cross-site console sign-in: the console's 403, as without the parser; a same-origin one needs the body and is plantgate's 500", async () => {
    const { parsed, plain } = await servers(express.json(), { console: { enabled: true } });
    const init: RequestInit = {
      method: "POST",
      headers: { ...json, "sec-fetch-site": "cross-site" },
      body: JSON.stringify({ username: "alice", password: "a long passphrase" }),
    };
    const got = await answer(await fetch(`${parsed}/auth/console/api/session`, init));
    expect(got).toEqual(await answer(await fetch(`${plain}/auth/console/api/session`, init)));
    expect([got.status, JSON.parse(got.body)]).toEqual([403, { error: 1304, message: "Cross-site requests to the console are refused." }]);

    const same: RequestInit = { ...init, headers: { ...json, "sec-fetch-site": "same-origin" } };
    const signIn = await fetch(`${parsed}/auth/console/api/session`, same);
    expect([signIn.status, await signIn.text()]).toEqual([500, '{"error":1500,"message":"The server encountered an unexpected error."}']);
    // Without the parser the body is read: alice is no administrator, the console's 401.
    const unparsed = await fetch(`${plain}/auth/console/api/session`, same);
    expect([unparsed.status, await unparsed.json()]).toEqual([401, { error: 1305, message: "The username or password is incorrect." }]);
  });

  it("a body plantgate needs (JSON to the plant store with a token) is plantgate's 500 1500, never the body", async () => {
    const { parsed, plain } = await servers(express.json());
    // The token's issuer is the server's origin: each server its own (a form: the parser leaves it alone).
    const access = await clientToken(`${parsed}/auth`);
    const init: RequestInit = { method: "POST", headers: { ...json, authorization: `Bearer ${access}` }, body: `{"id":9223372036854775807,"name":"Monstera"}` };
    const res = await fetch(`${parsed}/auth/plants`, init);
    expect([res.status, res.headers.get("content-type"), await res.text()]).toEqual([
      500,
      "application/json",
      '{"error":1500,"message":"The server encountered an unexpected error."}',
    ]);
    // Without the parser the plant is stored.
    const stored = await fetch(`${plain}/auth/plants`, { ...init, headers: { ...json, authorization: `Bearer ${await clientToken(`${plain}/auth`)}` } });
    expect(stored.status).toBe(200);
  });

  it("express.text() first: a text/plain body plantgate refuses by its media type gets that refusal (plantgate cancels the body, it never reads it)", async () => {
    const { parsed, plain } = await servers(express.text({ type: "text/plain" }));
    const init = (access: string): RequestInit => ({ method: "POST", headers: { "content-type": "text/plain", authorization: `Bearer ${access}` }, body: `{"id":1,"name":"x"}` });
    const got = await answer(await fetch(`${parsed}/auth/plants`, init(await clientToken(`${parsed}/auth`))));
    expect(got).toEqual(await answer(await fetch(`${plain}/auth/plants`, init(await clientToken(`${plain}/auth`)))));
    expect(got.status).toBe(400);
    expect((JSON.parse(got.body) as { error: number }).error).toBe(1008);
  });

  it("a Web handler that reads the consumed body gets an error, never an empty body, and the request goes to next(err)", async () => {
    const seen: string[] = [];
    const app: FetchApp = {
      async fetch(request) {
        if (new URL(request.url).pathname === "/read") {
          try {
            seen.push(`read ${JSON.stringify(await request.text())}`);
          } catch (error) {
            seen.push(`failed ${(error as Error).name}`);
          }
          return new Response("answered after reading", { status: 201 });
        }
        return new Response("refused unread", { status: 415 });
      },
    };
    const host = express();
    host.use(express.json());
    host.use(plantgate(app));
    const origin = await listen(host);
    const refused = await fetch(`${origin}/other`, { method: "POST", headers: json, body: `{"a":1}` });
    expect([refused.status, await refused.text()]).toEqual([415, "refused unread"]);
    const read = await fetch(`${origin}/read`, { method: "POST", headers: json, body: `{"a":1}` });
    expect(read.status).toBe(500);
    expect(await read.text()).toContain("plantgate: a body parser consumed the request body before plantgate");
    expect(seen).toEqual(["failed PlantgateBodyConsumedError"]);
  });
});

describe("a parser that read an empty body (nothing taken)", () => {
  it("express.urlencoded() first, an empty form (Content-Length: 0) to the token endpoint: the client's 400, as without the parser and on the Node listener", async () => {
    const { parsed, plain, node } = await servers(express.urlencoded());
    const init: RequestInit = { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic() }, body: "" };
    const got = await answer(await fetch(`${parsed}/auth/UserService/connect/token`, init));
    expect(got).toEqual(await answer(await fetch(`${plain}/auth/UserService/connect/token`, init)));
    expect({ status: got.status, body: got.body }).toEqual({
      status: 400,
      body: JSON.stringify({ error: "invalid_request", error_description: "The grant_type parameter is required." }),
    });
    const onNode = await answer(await fetch(`${node}/auth/UserService/connect/token`, init));
    expect({ status: onNode.status, body: onNode.body }).toEqual({ status: got.status, body: got.body });
  });
});
