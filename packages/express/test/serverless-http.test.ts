/**
 * Express with plantgate mounted, run on AWS Lambda by serverless-http 4.0.0 (the real package):
 * its `ServerlessRequest extends http.IncomingMessage` carries the event's headers in `headers`
 * (lowercased), leaves `rawHeaders` empty, says `httpVersionMajor: "1"` (a string) and pushes the
 * body through `_read`; its socket is a PassThrough with the event's `sourceIp` and `encrypted`.
 * Until 2026-12-01 such a request reached plantgate with no headers at all (no Host, no
 * Content-Type, no Authorization) and was taken for HTTP/1.0: every token request was a 400.
 * Events are API Gateway's REST API (payload 1.0) and HTTP API (payload 2.0) as AWS documents them.
 */
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from "jose";
import express from "express";
import serverless from "serverless-http";
import { describe, expect, it } from "vitest";
import type { SecurityEvent } from "@plantgate/core";
import { plantgate } from "../src/index.js";
import { basic, CLIENT_ID, plantgateApp } from "./support.js";

const HOST = "r2d2c3po.execute-api.eu-west-1.amazonaws.com";
const ORIGIN = `https://${HOST}`;
const ISSUER = `${ORIGIN}/auth`;
const SOURCE_IP = "203.0.113.7";
const SCOPE = "Platform_UserAPIs Platform_AllAppsServerCommands";

interface Call {
  method: "GET" | "POST";
  path: string;
  /** As a client sends them (names in any case). */
  headers: Record<string, string>;
  body?: string;
  /** Leave the Host header out (API Gateway always sends one). */
  noHost?: boolean;
}

/** An API Gateway REST API (payload format 1.0) proxy event: `headers` and `multiValueHeaders`, names as sent. */
function restApiEvent({ method, path, headers, body, noHost }: Call): Record<string, unknown> {
  const all: Record<string, string> = {
    ...(noHost === true ? {} : { Host: HOST }),
    "User-Agent": "curl/8.5.0",
    "X-Amzn-Trace-Id": "Root=1-67891233-abcdef012345678912345678",
    "X-Forwarded-For": SOURCE_IP,
    "X-Forwarded-Port": "443",
    "X-Forwarded-Proto": "https",
    ...headers,
  };
  return {
    resource: "/{proxy+}",
    path,
    httpMethod: method,
    headers: all,
    multiValueHeaders: Object.fromEntries(Object.entries(all).map(([name, value]) => [name, [value]])),
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: { proxy: path.slice(1) },
    stageVariables: null,
    requestContext: {
      accountId: "123456789012",
      apiId: "r2d2c3po",
      domainName: HOST,
      httpMethod: method,
      identity: { sourceIp: SOURCE_IP, userAgent: "curl/8.5.0" },
      path: `/prod${path}`,
      protocol: "HTTP/1.1",
      requestId: "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
      requestTimeEpoch: 1764460800000,
      resourcePath: "/{proxy+}",
      stage: "prod",
    },
    body: body ?? null,
    isBase64Encoded: false,
  };
}

/** An API Gateway HTTP API (payload format 2.0) event: lowercased `headers`, the body base64-encoded. */
function httpApiEvent({ method, path, headers, body, noHost }: Call): Record<string, unknown> {
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: path,
    rawQueryString: "",
    headers: {
      accept: "*/*",
      "content-length": String(Buffer.byteLength(body ?? "")),
      ...(noHost === true ? {} : { host: HOST }),
      "user-agent": "curl/8.5.0",
      "x-amzn-trace-id": "Root=1-67891233-abcdef012345678912345678",
      "x-forwarded-for": SOURCE_IP,
      "x-forwarded-port": "443",
      "x-forwarded-proto": "https",
      ...Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value])),
    },
    requestContext: {
      accountId: "123456789012",
      apiId: "r2d2c3po",
      domainName: HOST,
      domainPrefix: "r2d2c3po",
      http: { method, path, protocol: "HTTP/1.1", sourceIp: SOURCE_IP, userAgent: "curl/8.5.0" },
      requestId: "JKJaXmPLvHcESHA=",
      routeKey: "$default",
      stage: "$default",
      time: "30/Nov/2026:00:00:00 +0000",
      timeEpoch: 1764460800000,
    },
    ...(body === undefined ? {} : { body: Buffer.from(body).toString("base64") }),
    isBase64Encoded: body !== undefined,
  };
}

/** What the handler returns, its `body` parsed as JSON. */
interface Result {
  statusCode: number;
  isBase64Encoded: boolean;
  headers: Record<string, string>;
  body: unknown;
  [key: string]: unknown;
}

async function setup() {
  const events: SecurityEvent[] = [];
  const pg = await plantgateApp({ onEvent: (event) => void events.push(event) });
  // Only the requests' events (not the client's and the account's creation).
  await pg.flushEvents();
  events.length = 0;
  const app = express();
  app.use(plantgate(pg));
  app.use(express.json());
  app.get("/health", (_req, res) => void res.json({ ok: true }));
  const handler = serverless(app);
  return { pg, events, handler };
}

const form = (secret?: string): Call => ({
  method: "POST",
  path: "/auth/UserService/connect/token",
  headers: {
    "Content-Type": "application/x-www-form-urlencoded",
    Authorization: secret === undefined ? basic() : basic(CLIENT_ID, secret),
  },
  body: "grant_type=client_credentials",
});

const TOKEN_HEADERS = {
  "x-powered-by": "Express",
  "content-type": "application/json",
  "cache-control": "no-store",
  pragma: "no-cache",
};

describe.each([
  ["REST API (payload 1.0)", restApiEvent, { multiValueHeaders: {} }],
  ["HTTP API (payload 2.0)", httpApiEvent, { cookies: [] }],
] as const)("plantgate behind Express behind serverless-http, API Gateway %s", (_name, eventOf, extra) => {
  it("client_credentials with HTTP Basic -> 200 and a token that verifies against the JWKS served by the same handler (issuer from the Host header, https from the shim's socket); the event's sourceIp is the client address", async () => {
    const { pg, events, handler } = await setup();
    const call = async (c: Call) => {
      const result = (await handler(eventOf(c), {})) as Result;
      return { ...result, body: JSON.parse(result.body as string) as unknown };
    };

    const issued = await call(form());
    const accessToken = (issued.body as { access_token: string }).access_token;
    const tokenBody = JSON.stringify({ access_token: accessToken, token_type: "Bearer", expires_in: 7200, scope: SCOPE });
    expect(issued).toEqual({
      statusCode: 200,
      isBase64Encoded: false,
      headers: { ...TOKEN_HEADERS, "content-length": String(tokenBody.length) },
      body: JSON.parse(tokenBody),
      ...extra,
    });

    const jwks = await call({ method: "GET", path: "/auth/.well-known/jwks.json", headers: {} });
    const keys = (jwks.body as { keys: Array<Record<string, unknown>> }).keys;
    expect(jwks).toEqual({
      statusCode: 200,
      isBase64Encoded: false,
      headers: { "x-powered-by": "Express", "content-type": "application/json", "cache-control": "public, max-age=300", "content-length": String(JSON.stringify({ keys }).length) },
      body: { keys: [{ kty: "EC", crv: "P-256", alg: "ES256", use: "sig", kid: expect.any(String), x: expect.any(String), y: expect.any(String) }] },
      ...extra,
    });
    const { payload, protectedHeader } = await jwtVerify(accessToken, createLocalJWKSet(jwks.body as JSONWebKeySet), { issuer: ISSUER, audience: ISSUER, typ: "at+jwt" });
    expect(protectedHeader).toEqual({ alg: "ES256", typ: "at+jwt", kid: expect.any(String) });
    expect(payload).toEqual({
      iss: ISSUER,
      aud: ISSUER,
      sub: `client:${CLIENT_ID}`,
      client_id: CLIENT_ID,
      scope: SCOPE,
      cgen: expect.stringMatching(/^[A-Za-z0-9_-]{16}$/),
      jti: expect.any(String),
      iat: expect.any(Number),
      exp: payload.iat! + 7200,
    });

    await pg.flushEvents();
    expect(events.map((event) => [event.type, "client_ip" in event ? event.client_ip : undefined])).toEqual([["token.issued", SOURCE_IP]]);
  });

  it("a wrong client secret -> the 401 invalid_client with WWW-Authenticate: Basic", async () => {
    const { pg, events, handler } = await setup();
    const result = (await handler(eventOf(form("wrong-secret-wrong-secret")), {})) as Result;
    const body = JSON.stringify({ error: "invalid_client", error_description: "Client authentication failed." });
    expect(result).toEqual({
      statusCode: 401,
      isBase64Encoded: false,
      headers: {
        ...TOKEN_HEADERS,
        "www-authenticate": 'Basic realm="plantgate", charset="UTF-8"',
        "content-length": String(body.length),
      },
      body,
      ...extra,
    });
    await pg.flushEvents();
    expect(events.map((event) => [event.type, "client_ip" in event ? event.client_ip : undefined])).toEqual([["client.authentication_failed", SOURCE_IP]]);
  });

  it("an event without a Host is the 400 of an HTTP/1.1 request without one (the shim says 1.1 as the strings \"1\"/\"1\"), not a token issued for https://localhost/auth", async () => {
    const { pg, events, handler } = await setup();
    const result = (await handler(eventOf({ ...form(), noHost: true }), {})) as Result;
    const body = '{"error":"invalid_request","error_description":"The request cannot be processed."}';
    expect(result).toEqual({
      statusCode: 400,
      isBase64Encoded: false,
      headers: { "x-powered-by": "Express", "content-type": "application/json", "content-length": String(body.length), "cache-control": "no-store" },
      body,
      ...extra,
    });
    await pg.flushEvents();
    expect(events).toEqual([]);
  });

  it("the bearer token works on the APIs (GetAccountList, POST /plants), and the app's own routes still answer", async () => {
    const { handler } = await setup();
    const issued = (await handler(eventOf(form()), {})) as Result;
    const { access_token } = JSON.parse(issued.body as string) as { access_token: string };
    const bearer = { Authorization: `Bearer ${access_token}` };

    const accounts = (await handler(eventOf({ method: "GET", path: "/auth/rbac/ServerCommand/GetAccountList", headers: bearer }), {})) as Result;
    const listed = accounts.body as string;
    expect({ ...accounts, body: JSON.parse(listed) as unknown }).toEqual({
      statusCode: 200,
      isBase64Encoded: false,
      headers: { "x-powered-by": "Express", "content-type": "application/json", "cache-control": "no-store", "content-length": String(listed.length) },
      body: {
        accounts: [{ id: expect.any(String), username: "alice", displayName: "Alice", email: null, roles: [], enabled: true, createdAt: expect.any(String) }],
        page: 1,
        pageSize: 20,
        total: 1,
        totalPages: 1,
      },
      ...extra,
    });

    const plant = '{"id":9223372036854775807,"name":"Monstera","tag":"indoor"}';
    const stored = (await handler(eventOf({ method: "POST", path: "/auth/plants", headers: { ...bearer, "Content-Type": "application/json" }, body: plant }), {})) as Result;
    expect(stored).toEqual({
      statusCode: 200,
      isBase64Encoded: false,
      headers: { "x-powered-by": "Express", "content-type": "application/json", "content-length": String(plant.length) },
      body: plant,
      ...extra,
    });

    // Without the token: the 401 with its challenge.
    const refused = (await handler(eventOf({ method: "POST", path: "/auth/plants", headers: { "Content-Type": "application/json" }, body: plant }), {})) as Result;
    const challenge = '{"error":1201,"message":"An access token is required."}';
    expect(refused).toEqual({
      statusCode: 401,
      isBase64Encoded: false,
      headers: { "x-powered-by": "Express", "content-type": "application/json", "www-authenticate": 'Bearer realm="plantgate"', "cache-control": "no-store", "content-length": String(challenge.length) },
      body: challenge,
      ...extra,
    });

    // The host app's own route, behind plantgate and express.json().
    const health = (await handler(eventOf({ method: "GET", path: "/health", headers: {} }), {})) as Result;
    expect(health).toEqual({
      statusCode: 200,
      isBase64Encoded: false,
      headers: { "x-powered-by": "Express", "content-type": "application/json; charset=utf-8", "content-length": "11", etag: 'W/"b-Ai2R8hgEarLmHKwesT1qcY913ys"' },
      body: '{"ok":true}',
      ...extra,
    });
  });
});
