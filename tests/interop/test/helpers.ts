/**
 * Shared fixture of the interop tests: the real example server (`startServer` from
 * examples/node-server) listening on 127.0.0.1 with an ephemeral port, a bootstrap client and user
 * with random credentials, and helpers that check tokens with jose and call the APIs with
 * node-fetch over the socket. Not a test file itself (vitest only picks up `*.test.ts`).
 */
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createRemoteJWKSet, jwtVerify, type JWTPayload, type JWTVerifyResult } from "jose";
import fetch, { type Response } from "node-fetch";
import { expect } from "vitest";
import { startServer, type RunningServer } from "@plantgate/example-node-server";
import { serverLines, type ServerLines } from "@plantgate/http-suite-tests/server-lines";

export const TOKEN_PATH = "/UserService/connect/token";
export const ACCOUNTS_PATH = "/rbac/ServerCommand/GetAccountList";
export const USER_APIS = "Platform_UserAPIs";
export const SERVER_COMMANDS = "Platform_AllAppsServerCommands";
export const OFFLINE_ACCESS = "offline_access";
/** What a client gets when it asks for no scope: every allowed scope but offline_access. */
export const DEFAULT_SCOPE = `${USER_APIS} ${SERVER_COMMANDS}`;
export const ACCESS_TOKEN_TTL = 7200;

export interface Fixture {
  server: RunningServer;
  /** e.g. http://127.0.0.1:41234 (no trailing slash); also the issuer and the audience. */
  url: string;
  clientId: string;
  clientSecret: string;
  username: string;
  password: string;
  /** The bootstrap account's id, i.e. the `sub` of its password-grant tokens. */
  userId: string;
  /** What the server logged (the app's `logger` option records here instead of the console). */
  logs: LogEntry[];
  /** The server's JSON lines (events and housekeeping), kept here instead of going to stdout. */
  lines: ServerLines;
}

export interface LogEntry {
  level: "error" | "warn";
  message: string;
  context?: Record<string, unknown>;
}

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

/** Starts the example server the way `pnpm start` would, but on port 0 with fresh credentials. */
export async function startFixture(): Promise<Fixture> {
  const clientId = `interop-${hex(4)}`;
  const clientSecret = hex(32);
  const username = `alice-${hex(4)}`;
  const password = hex(16);
  const logs: LogEntry[] = [];
  const logger = {
    error: (message: string, context?: Record<string, unknown>) => void logs.push({ level: "error", message, context }),
    warn: (message: string, context?: Record<string, unknown>) => void logs.push({ level: "warn", message, context }),
  };
  const lines = serverLines();
  const server = await startServer({
    PORT: "0",
    PLANTGATE_DB: ":memory:",
    PLANTGATE_BOOTSTRAP_CLIENT_ID: clientId,
    PLANTGATE_BOOTSTRAP_CLIENT_SECRET: clientSecret,
    PLANTGATE_BOOTSTRAP_USERNAME: username,
    PLANTGATE_BOOTSTRAP_PASSWORD: password,
    PLANTGATE_PASSWORD_HASH_ITERATIONS: "10000",
    // Strict one-time refresh tokens, so the libraries' reuse of a spent token is refused at once
    // (the default 30 s grace window would replay the answer; the HTTP suite covers that).
    PLANTGATE_REFRESH_GRACE_SECONDS: "0",
  }, { logger }, { destination: lines.destination });
  try {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
    expect(server.demo).toBeNull(); // bootstrap variables given, so no demo client
    // The account id is only visible through the listing; look it up with a plain token request.
    const token = await rawClientCredentialsToken(server.url, clientId, clientSecret);
    const page = (await (await getAccounts(server.url, token)).json()) as { accounts: { id: string; username: string }[] };
    const me = page.accounts.find((a) => a.username === username);
    if (!me) throw new Error(`bootstrap account ${username} missing from the listing`);
    return { server, url: server.url, clientId, clientSecret, username, password, userId: me.id, logs, lines };
  } catch (error) {
    await server.close();
    throw error;
  }
}

/**
 * Closes the server and checks what it logged: no error (an error means a 500 or a 503 somewhere),
 * never a secret in any entry, and in its JSON lines never the client secret, the password, or a
 * token or assertion the libraries sent.
 */
export async function stopFixture(fx: Fixture | undefined): Promise<void> {
  if (!fx) return;
  await fx.server.close();
  expect(fx.logs.filter((entry) => entry.level === "error")).toEqual([]);
  const logged = JSON.stringify(fx.logs);
  expect(logged).not.toContain(fx.clientSecret);
  expect(logged).not.toContain(fx.password);
  fx.lines.check([fx.clientSecret, fx.password]);
}

/** A client_credentials token fetched with node-fetch and client_secret_basic, no OAuth library. */
export async function rawClientCredentialsToken(url: string, clientId: string, clientSecret: string): Promise<string> {
  const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString("base64");
  const response = await fetch(url + TOKEN_PATH, {
    method: "POST",
    headers: { authorization: `Basic ${basic}`, "content-type": "application/x-www-form-urlencoded" },
    body: "grant_type=client_credentials",
  });
  const body = (await response.json()) as { access_token?: string };
  if (response.status !== 200 || typeof body.access_token !== "string") {
    throw new Error(`token request failed: ${response.status} ${JSON.stringify(body)}`);
  }
  await verifyAccessToken({ url, clientId }, body.access_token, { sub: `client:${clientId}`, scope: DEFAULT_SCOPE });
  return body.access_token;
}

const jwksByUrl = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

/**
 * Verifies an access token against the server's published JWKS with jose (issuer and audience =
 * the server URL, `typ: at+jwt` per RFC 9068) and checks the claims the server promises.
 */
export async function verifyAccessToken(
  fx: Pick<Fixture, "url" | "clientId">,
  token: string,
  expected: { sub: string; scope: string; clientId?: string },
): Promise<JWTVerifyResult<JWTPayload>> {
  let jwks = jwksByUrl.get(fx.url);
  if (!jwks) {
    jwks = createRemoteJWKSet(new URL(`${fx.url}/.well-known/jwks.json`));
    jwksByUrl.set(fx.url, jwks);
  }
  const result = await jwtVerify(token, jwks, { issuer: fx.url, audience: fx.url, typ: "at+jwt" });
  const { payload, protectedHeader } = result;
  expect(protectedHeader).toMatchObject({ alg: "ES256", typ: "at+jwt", kid: expect.any(String) });
  expect(payload).toMatchObject({
    iss: fx.url,
    aud: fx.url,
    sub: expected.sub,
    client_id: expected.clientId ?? fx.clientId,
    scope: expected.scope,
    jti: expect.any(String),
    iat: expect.any(Number),
    exp: expect.any(Number),
  });
  expect(payload.exp! - payload.iat!).toBe(ACCESS_TOKEN_TTL);
  expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(300);
  return result;
}

/** `GET /rbac/ServerCommand/GetAccountList` with node-fetch. */
export function getAccounts(url: string, token: string | null, query = "page=1&pageSize=20"): Promise<Response> {
  return fetch(`${url}${ACCOUNTS_PATH}?${query}`, {
    headers: token === null ? {} : { authorization: `Bearer ${token}` },
  });
}

/** `POST /plants` with node-fetch and a raw JSON text body. */
export function postPlant(url: string, token: string | null, body: string): Promise<Response> {
  return fetch(`${url}/plants`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
    body,
  });
}

/** Asserts that `token` opens the account listing over the socket. */
export async function expectTokenWorks(url: string, token: string): Promise<void> {
  const response = await getAccounts(url, token);
  const text = await response.text();
  expect(response.status, text).toBe(200);
  expect(JSON.parse(text)).toMatchObject({ page: 1, pageSize: 20, accounts: expect.any(Array) });
}

/** Awaits `promise` and returns what it rejected with; fails if it resolved. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the promise to reject, but it resolved");
}

/**
 * Polls `read` every 50 ms until it gives a value (a line in a child process's output, say); past
 * `timeoutMs` throws, naming `what` and showing `output()`.
 */
export async function until<T>(what: string, read: () => T | undefined, output: () => string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not appear within ${timeoutMs} ms\n${output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Ends a child spawned `detached` (its own process group: tsx and the node process under it) with
 * SIGKILL and waits for its exit; nothing when it has ended already.
 */
export async function killGroup(child: ChildProcess | undefined): Promise<void> {
  if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    child.kill("SIGKILL");
  }
  await exited;
}
