/**
 * Shared helpers of the tests: a fetch-mock instance standing in for the platform, a fake token
 * endpoint that issues numbered tokens, a clock the tests move by hand, the real example server
 * on a socket ({@link startTarget}) and the real app in-process ({@link inProcessTarget}).
 * Not a test file itself (vitest only picks up `*.test.ts`).
 */
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { SecurityEvent, Storage } from "@plantgate/core";
import fetchMock, { type CallLog, type FetchMock } from "fetch-mock";
import { afterEach, expect } from "vitest";
import { createClient, TOKEN_PATH, type ClientOptions, type FetchLike, type PlantgateClient } from "../src/index.js";

export const BASE = "https://platform.example.test";
export const TOKEN_URL = `${BASE}/UserService/connect/token`;
export const ACCOUNTS_URL = `${BASE}/rbac/ServerCommand/GetAccountList`;
export const PLANTS_URL = `${BASE}/plants`;
export const CLIENT_ID = "third-party";
export const CLIENT_SECRET = "client-secret-that-is-long-enough";
export const USER = { username: "alice", password: "wonderland-42" };
export const T0 = Date.UTC(2026, 0, 1);

/** A clock the tests move by hand. */
export function manualClock(start = T0) {
  let now = start;
  return {
    now: () => now,
    advance(seconds: number) {
      now += seconds * 1000;
    },
  };
}

/** The form fields a token request sent. */
export function formOf(call: CallLog): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(String(call.options.body ?? "")));
}

export function headerOf(call: CallLog, name: string): string | undefined {
  return (call.options.headers as Record<string, string> | undefined)?.[name.toLowerCase()];
}

export function bearerOf(call: CallLog): string | undefined {
  return headerOf(call, "authorization")?.replace(/^Bearer /, "");
}

export interface FakeTokenEndpoint {
  /** Every token request, in order. */
  requests: Record<string, string>[];
  /** Access tokens issued so far (at-1, at-2, ...). */
  issued: string[];
}

/**
 * Routes the token endpoint of `fm` to a fake that issues `at-<n>` access tokens, and `rt-<n>`
 * refresh tokens to the password grant with offline_access and to every refresh. `override` may
 * answer a request instead (return undefined to fall through).
 */
export function fakeTokenEndpoint(
  fm: FetchMock,
  options: { expiresIn?: number; delayMs?: number; override?: (form: Record<string, string>, n: number) => unknown } = {},
): FakeTokenEndpoint {
  const state: FakeTokenEndpoint = { requests: [], issued: [] };
  fm.post(
    TOKEN_URL,
    (call: CallLog) => {
      const form = formOf(call);
      state.requests.push(form);
      const n = state.requests.length;
      const custom = options.override?.(form, n);
      if (custom !== undefined) return custom;
      const access = `at-${n}`;
      state.issued.push(access);
      const wantsRefresh = (form.grant_type === "password" && (form.scope ?? "").split(" ").includes("offline_access")) || form.grant_type === "refresh_token";
      return {
        status: 200,
        headers: { "content-type": "application/json", "cache-control": "no-store" },
        body: {
          access_token: access,
          token_type: "Bearer",
          expires_in: options.expiresIn ?? 3600,
          // A refresh answers without scope: RFC 6749 §5.1 allows that when it is unchanged.
          ...(form.grant_type === "refresh_token" ? {} : { scope: form.scope ?? "Platform_UserAPIs" }),
          ...(wantsRefresh ? { refresh_token: `rt-${n}` } : {}),
        },
      };
    },
    { name: "token", ...(options.delayMs ? { delay: options.delayMs } : {}) },
  );
  return state;
}

/** An account-list page body with `count` accounts named after the page. */
export function accountPage(page: number, pageSize: number, total: number) {
  const first = (page - 1) * pageSize;
  const count = Math.max(0, Math.min(pageSize, total - first));
  return {
    accounts: Array.from({ length: count }, (_, i) => ({
      id: `id-${String(first + i).padStart(4, "0")}`,
      username: `user-${first + i}`,
      displayName: null,
      email: null,
      roles: [],
      enabled: true,
      createdAt: "2026-01-01T00:00:00.000Z",
    })),
    page,
    pageSize,
    total,
    totalPages: Math.ceil(total / pageSize),
  };
}

/**
 * Routes GetAccountList: 200 with a one-account page when the bearer token is in `valid`
 * (all `at-*` tokens when omitted), else 401 with the platform's error body.
 */
export function fakeAccounts(fm: FetchMock, valid?: (token: string) => boolean) {
  fm.get(
    `begin:${ACCOUNTS_URL}`,
    (call: CallLog) => {
      const token = bearerOf(call) ?? "";
      const ok = valid ? valid(token) : token.startsWith("at-");
      if (!ok) {
        return {
          status: 401,
          headers: { "content-type": "application/json", "www-authenticate": 'Bearer realm="plantgate", error="invalid_token"' },
          body: { error: 1202, message: "The access token is invalid or expired." },
        };
      }
      return { status: 200, body: accountPage(1, 20, 1) };
    },
    { name: "accounts" },
  );
}

export function newMock(): FetchMock {
  return fetchMock.createInstance();
}

/** A client on `fm` with test defaults (client credentials, the manual clock when given). */
export function clientOn(fm: FetchMock, options: Partial<ClientOptions> = {}): PlantgateClient {
  return createClient({
    baseUrl: BASE,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    auth: "basic",
    scope: "Platform_UserAPIs",
    fetch: fm.fetchHandler,
    ...options,
  });
}

/** The global fetch, recording the grant_type of every token request that reached the server. */
export function countingFetch() {
  const grants: string[] = [];
  const fetch: FetchLike = (url, init) => {
    if (new URL(url).pathname === TOKEN_PATH) grants.push(new URLSearchParams(init.body).get("grant_type") ?? "");
    return globalThis.fetch(url, init);
  };
  return { grants, fetch };
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

/** A silent logger that keeps errors, to assert none happened. */
export function recordingLogger(errors: unknown[]) {
  return { error: (message: string, context?: unknown) => void errors.push({ message, context }), warn: () => {} };
}

/**
 * The example Node server on port 0 over a real socket (memory storage unless `storage` is given,
 * its clock manual), with a
 * bootstrapped client and user of random ids and secrets. `errors`: what it logged at level error;
 * `events()`: the names of the security events it logged so far. `close()` (safe to call twice)
 * also checks that no secret or password appeared in its log lines.
 */
export async function startTarget(options: { clock?: ReturnType<typeof manualClock>; storage?: Storage } = {}) {
  // Loaded here, not at the top: the fetch-mock unit tests import this file too and need none of it.
  const [{ createMemoryStorage }, { startServer }, { serverLines }] = await Promise.all([
    import("@plantgate/core"),
    import("@plantgate/example-node-server"),
    import("@plantgate/http-suite-tests/server-lines"),
  ]);
  const hex = (n: number) => randomBytes(n).toString("hex");
  const clock = options.clock ?? manualClock(Date.now());
  const errors: unknown[] = [];
  const events: string[] = [];
  const ids = { clientId: `client-${hex(4)}`, clientSecret: hex(32), username: `user-${hex(4)}`, password: hex(16) };
  const lines = serverLines();
  const server = await startServer(
    {
      PORT: "0",
      PLANTGATE_BOOTSTRAP_CLIENT_ID: ids.clientId,
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: ids.clientSecret,
      PLANTGATE_BOOTSTRAP_USERNAME: ids.username,
      PLANTGATE_BOOTSTRAP_PASSWORD: ids.password,
      PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
    },
    // In-memory storage: the example server would otherwise open its default SQLite file in the cwd.
    { storage: options.storage ?? createMemoryStorage(), clock: clock.now, logger: recordingLogger(errors) },
    {
      destination: {
        write(line: string) {
          lines.destination.write(line);
          const event = /"event":"([a-z_.]+)"/.exec(line)?.[1];
          if (event) events.push(event);
        },
      },
    },
  );
  let closed = false;
  return {
    ...ids,
    clock,
    errors,
    /** Every event the server logged so far (flushed first). */
    events: async () => {
      await server.app.flushEvents();
      return [...events];
    },
    baseUrl: server.url,
    app: server.app,
    close: async () => {
      if (closed) return;
      closed = true;
      await server.close();
      lines.check([ids.clientSecret, ids.password]);
    },
  };
}

/** A running {@link startTarget}. */
export type ServerTarget = Awaited<ReturnType<typeof startTarget>>;

/**
 * The real app in-process, no socket: memory storage unless `storage` is given, its clock manual,
 * 1000 password-hash iterations, a silent logger; with the client {@link CLIENT_ID} and the user
 * {@link USER}. `fetch` hands each request to `app.fetch` ({@link userProcess} uses it), recording
 * the grant_type of every token request in `grants`; `events`: every security event, as emitted.
 */
export async function inProcessTarget(options: { storage?: Storage } = {}) {
  // Loaded here, not at the top, as in startTarget.
  const { createMemoryStorage, createPlantgate } = await import("@plantgate/core");
  const clock = manualClock(Date.now());
  const events: SecurityEvent[] = [];
  const app = createPlantgate({ storage: options.storage ?? createMemoryStorage(), clock: clock.now, passwordHashIterations: 1000, onEvent: (e) => void events.push(e), logger: { error() {}, warn() {} } });
  const { clientSecret } = await app.admin.createClient({ clientId: CLIENT_ID });
  await app.admin.createAccount({ ...USER });
  const grants: string[] = [];
  /** How long the next API request waits before it reaches the app (ms; then 0 again). */
  let apiDelay = 0;
  const fetch: FetchLike = async (url, init) => {
    if (url.endsWith(TOKEN_PATH)) grants.push(new URLSearchParams(init.body).get("grant_type") ?? "");
    else if (apiDelay > 0) {
      const ms = apiDelay;
      apiDelay = 0;
      await new Promise((r) => setTimeout(r, ms));
    }
    return app.fetch(new Request(url, init));
  };
  /** The next API request reaches the app `ms` later (a slow network or upstream). */
  const delayNextApiRequest = (ms: number): void => {
    apiDelay = ms;
  };
  return { app, clock, events, grants, fetch, delayNextApiRequest, baseUrl: BASE, clientId: CLIENT_ID, clientSecret, username: USER.username, password: USER.password };
}

/** A running {@link inProcessTarget}. */
export type InProcessTarget = Awaited<ReturnType<typeof inProcessTarget>>;

/**
 * A process of the target's user: a client with `offline_access` that does not keep the password
 * (a refused refresh token signs it out), on a manual clock of its own set to the server's, through
 * the target's own `fetch` when it has one (an {@link inProcessTarget}); more `options` (fetch,
 * tokenCache, waitUntil, ...) as given.
 */
export function userProcess(t: ServerTarget | InProcessTarget, options: Partial<ClientOptions> = {}) {
  const clock = manualClock(t.clock.now());
  const client = createClient({
    baseUrl: t.baseUrl,
    clientId: t.clientId,
    clientSecret: t.clientSecret,
    scope: "Platform_UserAPIs offline_access",
    credentials: { username: t.username, password: t.password },
    keepCredentials: false,
    clock: clock.now,
    ...("fetch" in t ? { fetch: t.fetch } : {}),
    ...options,
  });
  return { client, clock };
}

/**
 * The token endpoint of another authorization server (node:http on 127.0.0.1, reached over a
 * socket): `answer` gives each token request's status and JSON body (sent with `cache-control:
 * no-store`) from its form and its number (1, 2, ...); any other path is a 404. `close()` ends it
 * and its connections.
 */
export async function tokenServer(answer: (form: URLSearchParams, n: number) => { status: number; body: unknown }) {
  let n = 0;
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      if (new URL(req.url ?? "/", "http://x").pathname !== TOKEN_PATH) {
        res.writeHead(404).end();
        return;
      }
      const answered = answer(new URLSearchParams(body), ++n);
      res.writeHead(answered.status, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(answered.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * The servers a test file's cases start, each closed after its case: call it at the top of the
 * file (it registers an `afterEach`). `target()` starts a {@link startTarget}, `tokenServer(answer)`
 * a {@link tokenServer}, and `refusingServer(code, status)` a token server that answers every
 * request with `code` and `status` (400 unless given; `error_description` "refused: <code>"),
 * recording each request's grant_type in `grants`.
 */
export function serversClosedAfterEach() {
  let target: ServerTarget | null = null;
  const open: { close(): Promise<void> }[] = [];
  afterEach(async () => {
    await target?.close();
    target = null;
    await Promise.all(open.splice(0).map((server) => server.close()));
  });
  const tokenServerClosedAfter: typeof tokenServer = async (answer) => {
    const server = await tokenServer(answer);
    open.push(server);
    return server;
  };
  return {
    target: async (): Promise<ServerTarget> => (target = await startTarget()),
    tokenServer: tokenServerClosedAfter,
    async refusingServer(code: string, status = 400) {
      const grants: string[] = [];
      const server = await tokenServerClosedAfter((form) => {
        grants.push(form.get("grant_type") ?? "");
        return { status, body: { error: code, error_description: `refused: ${code}` } };
      });
      return { grants, baseUrl: server.baseUrl };
    },
  };
}

/** Rejects with the same OAuthError five times over each way in, sending nothing. */
export async function expectStopped(client: PlantgateClient, first: unknown): Promise<void> {
  for (let i = 0; i < 5; i++) {
    expect(await rejectionOf(client.listAccounts())).toBe(first);
    expect(await rejectionOf(client.getAccessToken())).toBe(first);
    expect(await rejectionOf(client.refresh())).toBe(first);
  }
}

/**
 * After a refused grant (`first`, answered `status` and `code`) and two later calls (`later`):
 * when `stopped`, the request went out once (`grants`) and both calls rejected with `first`;
 * else each sent it again and got a new error of the same kind.
 */
export function expectStoppedOrSentAgain(
  stopped: boolean,
  seen: { grants: string[]; first: unknown; later: unknown[]; status: number; code: string; grantType: string },
): void {
  const { grants, first, later, status, code, grantType } = seen;
  if (stopped) {
    expect(grants).toEqual([grantType]);
    expect(later.every((e) => e === first)).toBe(true);
  } else {
    for (const e of later) {
      expect(e).not.toBe(first);
      expect(e).toMatchObject({ status, error: code, grantType });
    }
    expect(grants).toEqual([grantType, grantType, grantType]);
  }
}
