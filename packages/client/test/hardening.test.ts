/**
 * What a misbehaving server or network must not do to the client: hang it (a deadline on every
 * request), sign its users out through host clock differences (the refresh token to present is not
 * chosen by comparing clocks), loop it forever (a listing that answers another page), or put a
 * token into an error message (tokens must be visible ASCII).
 */
import { Readable } from "node:stream";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { createPlantgate, type SecurityEvent } from "@plantgate/core";
import { describe, expect, it, vi } from "vitest";
import { createClient, NetworkError, type CachedToken, type FetchLike, type FetchResponse, type TokenCache } from "../src/index.js";
import { readCapped } from "../src/fetch.js";
import { manualClock } from "./support.js";

const BASE = "https://platform.example.test";
const SECRET_OPTIONS = { baseUrl: BASE, clientId: "third-party", clientSecret: "a-client-secret-0123456789" };

const json = (status: number, body: unknown): FetchResponse => ({ status, headers: new Headers({ "content-type": "application/json" }), text: async () => JSON.stringify(body) });
const TOKEN = { access_token: "an-access-token", token_type: "Bearer", expires_in: 3600 };

describe("a deadline on every call (timeoutMs, default 20 s)", () => {
  it("a token endpoint that never answers fails every waiting caller with NetworkError timeout, and the next call sends a new request", async () => {
    let calls = 0;
    let signal: AbortSignal | undefined;
    let hang = true;
    const fetch: FetchLike = (url, init) => {
      calls++;
      signal = init.signal;
      if (hang) return new Promise<FetchResponse>(() => {});
      return Promise.resolve(url.endsWith("/connect/token") ? json(200, TOKEN) : json(500, {}));
    };
    const client = createClient({ ...SECRET_OPTIONS, fetch, timeoutMs: 50 });
    const waiting = await Promise.allSettled([client.getAccessToken(), client.getAccessToken(), client.getAccessToken()]);
    expect(calls).toBe(1);
    for (const r of waiting) {
      expect(r.status).toBe("rejected");
      const e = (r as PromiseRejectedResult).reason as NetworkError;
      expect([e.constructor, e.reason, e.message, e.status]).toEqual([NetworkError, "timeout", "POST /UserService/connect/token got no complete answer within 50 ms", null]);
    }
    // The shared request is aborted at its own deadline, which began a few microtasks after the callers'.
    await vi.waitFor(() => expect(signal?.aborted).toBe(true), { timeout: 1000 });
    hang = false;
    expect(await client.getAccessToken()).toBe("an-access-token");
    expect(calls).toBe(2);
  });

  it("a body that never ends counts too, on API calls as on token requests", async () => {
    const fetch: FetchLike = async (url) =>
      url.endsWith("/connect/token") ? json(200, TOKEN) : { status: 200, headers: new Headers(), text: () => new Promise<string>(() => {}) };
    const client = createClient({ ...SECRET_OPTIONS, fetch, timeoutMs: 50 });
    const error = (await client.listAccounts().catch((e: unknown) => e)) as NetworkError;
    expect([error.reason, error.message]).toEqual(["timeout", "GET /rbac/ServerCommand/GetAccountList got no complete answer within 50 ms"]);
  });

  it("timeoutMs: 0 sets no deadline: a token request answered after ten minutes is waited for, and carries no abort signal", async () => {
    // Any deadline, the 0 taken for 0 ms or the 20 s default, would have failed the call by then.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date", "performance"] });
    try {
      let answer: ((response: FetchResponse) => void) | undefined;
      const signals: Array<AbortSignal | undefined> = [];
      const fetch: FetchLike = (_url, init) => {
        signals.push(init.signal);
        return new Promise<FetchResponse>((resolve) => (answer = resolve));
      };
      const client = createClient({ ...SECRET_OPTIONS, fetch, timeoutMs: 0 });
      let settled = false;
      const call = client.getAccessToken().finally(() => (settled = true));
      await vi.advanceTimersByTimeAsync(600_000);
      expect([settled, signals]).toEqual([false, [undefined]]);
      answer!(json(200, TOKEN));
      expect(await call).toBe("an-access-token");
    } finally {
      vi.useRealTimers();
    }
  });

  it("is checked: an integer from 0 (none) to 2147483647", () => {
    for (const timeoutMs of [-1, 1.5, 2 ** 31]) expect(() => createClient({ ...SECRET_OPTIONS, fetch: async () => json(200, TOKEN), timeoutMs })).toThrow(new TypeError("timeoutMs must be an integer from 0 to 2147483647"));
    expect(() => createClient({ ...SECRET_OPTIONS, fetch: async () => json(200, TOKEN), timeoutMs: 0 })).not.toThrow();
  });
});

/**
 * The real core app on a manual clock (access tokens of 120 s), recording its events, and client
 * options for alice (password grant, offline_access, password not kept) sharing one in-memory cache.
 */
async function sharedCacheSetup() {
  const server = manualClock(Date.UTC(2026, 10, 29));
  const events: SecurityEvent[] = [];
  const app = createPlantgate({ clock: server.now, passwordHashIterations: 1000, accessTokenTtl: 120, onEvent: (e) => void events.push(e), logger: { error() {}, warn() {} } });
  const { clientSecret } = await app.admin.createClient({ clientId: "third-party" });
  await app.admin.createAccount({ username: "alice", password: "wonderland-42" });
  const fetch: FetchLike = (url, init) => app.fetch(new Request(url, init));
  const store = new Map<string, CachedToken>();
  const tokenCache: TokenCache = { get: async (k) => store.get(k) ?? null, set: async (k, t) => void store.set(k, t) };
  const options = { baseUrl: BASE, clientId: "third-party", clientSecret, scope: "Platform_UserAPIs offline_access", credentials: { username: "alice", password: "wonderland-42" }, keepCredentials: false, tokenCache, fetch };
  return { server, events, app, store, options };
}

describe("two hosts sharing a token cache, one's clock 60 s ahead", () => {
  it("the host that runs ahead presents the cache's newer refresh token, not its own rotated one: nobody is signed out", async () => {
    const { server, events, app, options } = await sharedCacheSetup();
    const a = createClient({ ...options, clock: server.now });
    const b = createClient({ ...options, clock: () => server.now() + 60_000 });
    await b.getToken(); // t = 0: B signs in and caches RT1
    server.advance(10);
    await a.getToken(); // A takes RT1's token from the cache
    await a.refresh(); // t = 10 s: A rotates RT1 to RT2 and caches it
    server.advance(90);
    // t = 100 s: B's token is due (B's clock: 160 s of a 120 s token). Its own RT1 has B's
    // obtainedAt 60 s, the cache's RT2 A's 10 s: comparing them took RT1, rotated 90 s ago (past
    // the 30 s grace window), and the server revoked the family.
    expect((await b.getToken()).hasRefreshToken).toBe(true);
    expect((await a.refresh()).hasRefreshToken).toBe(true);
    await app.flushEvents();
    expect(events.filter((e) => e.type === "refresh_token.reuse_detected")).toEqual([]);
    // A's last refresh finds B's new token in the cache, fresh: no request.
    expect(events.filter((e) => e.type === "token.issued").map((e) => (e as { grant_type: string }).grant_type)).toEqual(["password", "refresh_token", "refresh_token"]);
  });
});

describe("a stale refresh token written over a newer one in the shared cache", () => {
  it("a process holding the newer token presents its own (its lineage names the cache's as replaced), not the stale one: nobody is signed out", async () => {
    const { server, events, app, store, options: shared } = await sharedCacheSetup();
    const options = { ...shared, clock: server.now };
    const d = createClient(options);
    const c = createClient(options);
    await d.getToken(); // R1
    await d.refresh(); // R1 -> R2
    const [key] = [...store.keys()];
    const r2 = store.get(key!)!;
    await d.refresh(); // R2 -> R3, cached
    await c.getToken(); // C adopts R3 from the cache
    // A slow process (a grace replay of R2) writes R2 back over R3, last writer wins.
    store.set(key!, r2);
    server.advance(121); // C's access token is due; R2 was rotated 121 s ago, past the grace window
    expect((await c.getToken()).hasRefreshToken).toBe(true);
    await app.flushEvents();
    expect(events.filter((e) => e.type === "refresh_token.reuse_detected")).toEqual([]);
    expect(store.get(key!)!.lineage).toHaveLength(3);
    expect(JSON.stringify(store.get(key!))).not.toContain(r2.refreshToken!);
  });
});

describe("accounts() walks pages the server really answers", () => {
  it("a server (or a proxy dropping the query) that answers page 1 to every page: NetworkError unexpected_response, not an endless walk", async () => {
    let listed = 0;
    const fetch: FetchLike = async (url) => {
      if (url.endsWith("/connect/token")) return json(200, TOKEN);
      listed++;
      return json(200, { accounts: [{ id: "a-1", username: "alice", displayName: null, email: null, roles: [], enabled: true, createdAt: "2026-11-29T00:00:00.000Z" }], page: 1, pageSize: 20, total: 1e12, totalPages: 5e10 });
    };
    const client = createClient({ ...SECRET_OPTIONS, fetch });
    const seen: string[] = [];
    const error = await (async () => {
      for await (const account of client.accounts()) seen.push(account.username);
    })().catch((e: unknown) => e);
    expect(error).toEqual(new NetworkError("unexpected_response", "GetAccountList: asked for page 2, got page 1", 200));
    expect([seen, listed]).toEqual([["alice"], 2]);
  });
});

describe("tokens are visible ASCII", () => {
  for (const [member, what, value] of [
    ["access_token", "a line break (header injection)", "SECRET-ACCESS-TOKEN\nX-Evil: 1"],
    ["access_token", "U+0000", "SECRET\u0000TOKEN"],
    ["refresh_token", "a space", "SECRET REFRESH"],
  ] as const) {
    it(`a token response whose ${member} holds ${what}: NetworkError unexpected_response that does not quote it`, async () => {
      const fetch: FetchLike = async () => json(200, { ...TOKEN, [member]: value });
      const client = createClient({ ...SECRET_OPTIONS, fetch });
      const error = (await client.listAccounts().catch((e: unknown) => e)) as NetworkError;
      expect([error.reason, error.message]).toEqual(["unexpected_response", `token endpoint: HTTP 200, ${member} holds characters other than visible ASCII`]);
      expect(String(error.cause ?? "")).not.toContain("SECRET");
    });
  }
});

/**
 * A token endpoint on a real socket that answers 200 and then sends JSON-looking bytes without end
 * (or declares a huge Content-Length and sends nothing); records how much it wrote and whether the
 * client closed the connection.
 */
async function floodingServer(mode: "endless" | "declared") {
  const { createServer } = await import("node:http");
  const seen = { written: 0, closed: false };
  const server = createServer((_req, res) => {
    res.on("close", () => void (seen.closed = true));
    if (mode === "declared") {
      res.writeHead(200, { "content-type": "application/json", "content-length": "10000000" });
      res.flushHeaders();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" });
    const chunk = Buffer.alloc(16_384, 0x20);
    const pump = () => {
      // Stop at 64 MiB whatever happens, so a client that never stops reading cannot hang the test.
      while (!res.destroyed && seen.written < 64 * 1_048_576) {
        seen.written += chunk.length;
        if (!res.write(chunk)) return void res.once("drain", pump);
      }
      res.end();
    };
    res.write("{");
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe("a cap on response bodies (maxResponseBytes, default 1 MiB)", () => {
  const tooLarge = (status: number, limit: number, path = "POST /UserService/connect/token") => [
    NetworkError,
    "response_too_large",
    `${path} answered HTTP ${status} with a body over ${limit} bytes (maxResponseBytes); it was not read further`,
    status,
  ];
  const fields = (e: NetworkError) => [e.constructor, e.reason, e.message, e.status];

  it.each([
    ["the global fetch", undefined],
    ["node-fetch 3 (a Node stream body)", "node-fetch"],
  ])("a server that sends without end, through %s: NetworkError response_too_large at the cap, the connection closed, not 64 MiB read", async (_label, which) => {
    const server = await floodingServer("endless");
    try {
      const fetch = which === "node-fetch" ? ((await import("node-fetch")).default as unknown as FetchLike) : undefined;
      const client = createClient({ baseUrl: server.url, clientId: "c", clientSecret: "s", maxResponseBytes: 100_000, timeoutMs: 10_000, ...(fetch ? { fetch } : {}) });
      const error = (await client.getAccessToken().catch((e: unknown) => e)) as NetworkError;
      expect(fields(error)).toEqual(tooLarge(200, 100_000));
      await expect.poll(() => server.seen.closed, { timeout: 5_000 }).toBe(true);
      expect(server.seen.written).toBeLessThan(16 * 1_048_576);
    } finally {
      await server.close();
    }
  });

  it("a declared Content-Length over the cap is refused before any of the body arrives (no wait for the deadline)", async () => {
    const server = await floodingServer("declared");
    try {
      const client = createClient({ baseUrl: server.url, clientId: "c", clientSecret: "s", timeoutMs: 10_000 });
      const started = Date.now();
      const error = (await client.getAccessToken().catch((e: unknown) => e)) as NetworkError;
      expect(fields(error)).toEqual(tooLarge(200, 1_048_576));
      expect(Date.now() - started).toBeLessThan(5_000);
      await expect.poll(() => server.seen.closed, { timeout: 5_000 }).toBe(true);
    } finally {
      await server.close();
    }
  });

  it("counts UTF-8 bytes, not characters: a body of exactly the cap is read, one byte more is refused; API calls are capped too", async () => {
    // A token answer padded with two-byte characters to an exact size in bytes.
    const padded = (bytes: number) => {
      const bare = JSON.stringify({ ...TOKEN, pad: "" });
      const room = bytes - new TextEncoder().encode(bare).byteLength;
      return JSON.stringify({ ...TOKEN, pad: "é".repeat(Math.floor(room / 2)) + "x".repeat(room % 2) });
    };
    const limit = 4_000;
    let body = padded(limit);
    expect(new TextEncoder().encode(body).byteLength).toBe(limit);
    let listBody = "";
    const fetch: FetchLike = async (url) => ({
      status: 200,
      headers: new Headers({ "content-type": "application/json" }),
      text: async () => (url.endsWith("/connect/token") ? body : listBody),
    });
    const client = createClient({ ...SECRET_OPTIONS, fetch, maxResponseBytes: limit });
    expect(await client.getAccessToken()).toBe("an-access-token");
    body = padded(limit + 1);
    const over = (await client.refresh().catch((e: unknown) => e)) as NetworkError;
    expect(fields(over)).toEqual(tooLarge(200, limit));
    body = padded(limit);
    listBody = JSON.stringify({ accounts: [], page: 1, pageSize: 20, total: 0, totalPages: 0, pad: "x".repeat(limit) });
    const list = (await client.listAccounts().catch((e: unknown) => e)) as NetworkError;
    expect(fields(list)).toEqual(tooLarge(200, limit, "GET /rbac/ServerCommand/GetAccountList"));
  });

  /** A token answer padded to exactly `bytes` bytes of UTF-8, a BOM first, cut into chunks that split the BOM and every two-byte character. */
  const splitChunks = (bytes: number) => {
    const bare = "\ufeff" + JSON.stringify({ ...TOKEN, pad: "" });
    const room = bytes - new TextEncoder().encode(bare).byteLength;
    const whole = new TextEncoder().encode("\ufeff" + JSON.stringify({ ...TOKEN, pad: "é".repeat(Math.floor(room / 2)) + "x".repeat(room % 2) }));
    expect(whole.byteLength).toBe(bytes);
    const chunks: Uint8Array[] = [];
    for (let at = 0; at < whole.byteLength; at += 3) chunks.push(whole.slice(at, at + 3));
    return chunks;
  };
  const streamed = (make: (chunks: Uint8Array[]) => unknown, bytes: number): FetchLike => async () => ({
    status: 200,
    headers: new Headers({ "content-type": "application/json" }),
    body: make(splitChunks(bytes)),
    text: async () => {
      throw new Error("text() must not be called when there is a body stream");
    },
  });
  const webStream = (chunks: unknown[]) =>
    new ReadableStream({
      pull(controller) {
        const next = chunks.shift();
        if (next === undefined) controller.close();
        else controller.enqueue(next);
      },
    });

  it.each([
    ["a Web ReadableStream of Uint8Arrays", (c: Uint8Array[]) => webStream(c)],
    ["a Web ReadableStream of ArrayBuffers (as some polyfills give)", (c: Uint8Array[]) => webStream(c.map((x) => x.buffer.slice(x.byteOffset, x.byteOffset + x.byteLength)))],
    ["a Node stream (node-fetch)", (c: Uint8Array[]) => Readable.from(c.map((x) => Buffer.from(x)))],
  ])("read from %s in 3-byte chunks (the BOM and every 2-byte character split): exactly the cap is read, one byte more refused", async (_label, make) => {
    const limit = 2_000;
    const exact = await createClient({ ...SECRET_OPTIONS, fetch: streamed(make, limit), maxResponseBytes: limit }).getToken();
    expect(exact.accessToken).toBe("an-access-token");
    const over = (await createClient({ ...SECRET_OPTIONS, fetch: streamed(make, limit + 1), maxResponseBytes: limit }).getToken().catch((e: unknown) => e)) as NetworkError;
    expect(fields(over)).toEqual(tooLarge(200, limit));
  });

  it("past the deadline, a body still dripping is no longer read (its stream cancelled), even when the fetch ignores the signal", async () => {
    let reads = 0;
    let cancelled = false;
    const fetch: FetchLike = async () => ({
      status: 200,
      headers: new Headers(),
      text: async () => "",
      body: new ReadableStream({
        async pull(controller) {
          reads++;
          await new Promise((resolve) => setTimeout(resolve, 10));
          controller.enqueue(new TextEncoder().encode(" "));
        },
        cancel() {
          cancelled = true;
        },
      }),
    });
    const error = (await createClient({ ...SECRET_OPTIONS, fetch, timeoutMs: 60 }).getToken().catch((e: unknown) => e)) as NetworkError;
    expect(error.reason).toBe("timeout");
    await expect.poll(() => cancelled, { timeout: 2_000 }).toBe(true);
    const at = reads;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reads - at).toBeLessThanOrEqual(1);
  });

  it.each([
    ["a Web ReadableStream", "web"],
    ["a Node stream (node-fetch)", "node"],
  ])("a body that sends one chunk and then stalls, through %s, is cancelled at the deadline, not left holding the connection", async (_label, kind) => {
    let cancelled = false;
    const body =
      kind === "web"
        ? new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode("{"));
            },
            cancel() {
              cancelled = true;
            },
          })
        : new Readable({
            read() {
              if (!this.readableLength && !(this as { sent?: boolean }).sent) {
                (this as { sent?: boolean }).sent = true;
                this.push(Buffer.from("{"));
              }
            },
            destroy(error, callback) {
              cancelled = true;
              callback(error);
            },
          });
    const fetch: FetchLike = async () => ({ status: 200, headers: new Headers(), text: async () => "", body });
    const started = Date.now();
    const error = (await createClient({ ...SECRET_OPTIONS, fetch, timeoutMs: 60 }).getToken().catch((e: unknown) => e)) as NetworkError;
    expect(error.reason).toBe("timeout");
    await expect.poll(() => cancelled, { timeout: 1_000, interval: 5 }).toBe(true);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  /** A body a polyfill reads with text() only (no stream): pending until the I/O behind it answers, which here it never does. */
  const stalledText = (pending: Array<(text: string) => void>): FetchResponse => ({
    status: 200,
    headers: new Headers(),
    // The resolver is held as a polyfill's socket would hold it, so the read stays reachable.
    text: () => new Promise<string>((resolve) => void pending.push(resolve)),
  });

  it("a body read with text() (a polyfill's Response, no stream), a Web stream or a Node stream is given up once the signal is aborted, each with the same rejection", async () => {
    const reasons = [undefined, new Error("the caller left")];
    for (const reason of reasons) {
      const outcomes: unknown[] = [];
      const stalled = (body: unknown): FetchResponse => ({ status: 200, headers: new Headers(), text: async () => "", body });
      for (const response of [stalledText([]), stalled(new ReadableStream({ pull: () => new Promise<void>(() => {}) })), stalled(new Readable({ read() {} }))]) {
        const controller = new AbortController();
        let outcome: unknown = "pending";
        const reading = readCapped(response, 1000, controller.signal).then(
          (text) => (outcome = { text }),
          (error: unknown) => (outcome = { error }),
        );
        controller.abort(reason);
        await expect.poll(() => outcome, { timeout: 1_000 }).not.toBe("pending");
        await reading;
        outcomes.push(outcome);
      }
      // The streaming path's rejection is the signal's reason (an AbortError DOMException for send's timer, which aborts without one).
      expect(outcomes[0]).toEqual({ error: reason ?? expect.objectContaining({ name: "AbortError" }) });
      expect(outcomes[1]).toEqual(outcomes[0]);
      expect(outcomes[2]).toEqual(outcomes[0]);
      if (reason !== undefined) expect((outcomes[0] as { error: unknown }).error).toBe(reason);
    }
  });

  it("a text() that never settles holds nothing once the call ended: 20 calls timed out or aborted leave none of their responses reachable", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const pending: Array<(text: string) => void> = [];
    const responses: WeakRef<FetchResponse>[] = [];
    const fetch: FetchLike = async (url) => {
      if (url.endsWith("/connect/token")) return json(200, TOKEN);
      const response = stalledText(pending);
      responses.push(new WeakRef(response));
      return response;
    };
    const client = createClient({ ...SECRET_OPTIONS, fetch, timeoutMs: 30 });
    for (let i = 0; i < 10; i++) expect(((await client.listAccounts().catch((e: unknown) => e)) as NetworkError).reason).toBe("timeout");
    for (let i = 0; i < 10; i++) {
      const controller = new AbortController();
      const call = client.listAccounts({ signal: controller.signal }).catch((e: unknown) => e);
      await expect.poll(() => pending.length, { timeout: 1_000, interval: 1 }).toBe(11 + i);
      controller.abort();
      expect(await call).toMatchObject({ name: "AbortError" });
    }
    expect([pending.length, responses.length]).toEqual([20, 20]);
    // WeakRefs read in this turn stay alive until it ends: collect in a later one.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    await new Promise((resolve) => setImmediate(resolve));
    expect(responses.filter((r) => r.deref() !== undefined).length).toBe(0);
  });

  it("is checked: a positive integer", () => {
    for (const maxResponseBytes of [0, -1, 1.5, Number.NaN]) {
      expect(() => createClient({ ...SECRET_OPTIONS, fetch: async () => json(200, TOKEN), maxResponseBytes })).toThrow(new TypeError("maxResponseBytes must be a positive integer"));
    }
  });
});

describe("waitUntil", () => {
  it("is checked: a function", () => {
    expect(() => createClient({ ...SECRET_OPTIONS, fetch: async () => json(200, TOKEN), waitUntil: {} as never })).toThrow(new TypeError("waitUntil must be a function"));
  });
});

describe("nothing of a body reaches an error, and nothing is held (review 2026-11-29)", () => {
  it("a redirect's body is let go of (cancelled), not left holding the connection", async () => {
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({ pull: () => new Promise(() => {}), cancel: () => void (cancelled = true) });
    const fetch: FetchLike = async () => ({ status: 302, headers: new Headers({ location: "https://elsewhere.example/" }), text: async () => "", body });
    const error = await createClient({ ...SECRET_OPTIONS, fetch }).getAccessToken().catch((e: unknown) => e);
    expect([(error as NetworkError).reason, cancelled]).toEqual(["redirect_refused", true]);
  });

  it("a token response that is not JSON: the error has no cause quoting the body (a token, say)", async () => {
    for (const text of ["rt-0123456789", "{'access_token': 'SECRET-TOKEN-VALUE-0123456789'}"]) {
      const fetch: FetchLike = async () => ({ status: 200, headers: new Headers({ "content-type": "text/plain" }), text: async () => text });
      const error = (await createClient({ ...SECRET_OPTIONS, fetch }).getAccessToken().catch((e: unknown) => e)) as NetworkError;
      expect([error.reason, error.message, error.cause]).toEqual(["not_json", "token endpoint: HTTP 200 with a body that is not JSON (text/plain)", undefined]);
      expect(JSON.stringify(error) + String(error.stack)).not.toContain("0123456789");
    }
  });

  it("POST /plants answering an id outside int64 (or a megabyte of digits) is unexpected_response, parsed no further", async () => {
    for (const id of ["9223372036854775808", "-9223372036854775809", "1".repeat(23), "9".repeat(1_000_000)]) {
      const fetch: FetchLike = async (url) =>
        url.endsWith("/connect/token") ? json(200, TOKEN) : { status: 200, headers: new Headers({ "content-type": "application/json" }), text: async () => `{"id":${id},"name":"x"}` };
      const started = performance.now();
      const error = (await createClient({ ...SECRET_OPTIONS, fetch, maxResponseBytes: 2_000_000 }).createPlant({ id: 1n, name: "x" }).catch((e: unknown) => e)) as NetworkError;
      expect([error.reason, error.message]).toEqual(["unexpected_response", "POST /plants: HTTP 200, the plant has no int64 id"]);
      expect(performance.now() - started).toBeLessThan(200);
    }
    const fetch: FetchLike = async (url) => (url.endsWith("/connect/token") ? json(200, TOKEN) : { status: 200, headers: new Headers(), text: async () => `{"id":-9223372036854775808,"name":"x"}` });
    expect((await createClient({ ...SECRET_OPTIONS, fetch }).createPlant({ id: 1n, name: "x" })).id).toBe(-9223372036854775808n);
  });

  it("a private JWK that does not import rejects with a TypeError naming privateKey, not WebCrypto's DataError", async () => {
    const fetch: FetchLike = async () => json(200, TOKEN);
    const jwk = { kty: "EC", crv: "P-256", x: "AAAA", y: "BBBB", d: "AAAA" };
    const error = await createClient({ baseUrl: BASE, clientId: "signed", privateKey: jwk, fetch }).getAccessToken().catch((e: unknown) => e);
    expect([(error as Error).constructor, (error as Error).message]).toEqual([TypeError, "privateKey: the JWK could not be imported (DataError)"]);
  });
});
