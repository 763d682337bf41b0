/**
 * The caller's `signal` (fetch's conventions) against the real example server over a socket, with
 * the real global fetch: a small HTTP proxy in front of the server can hold a request until the
 * client lets go of its connection, so "aborted while in flight" is an abort on the wire.
 */
import { getEventListeners } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createClient, NetworkError, TOKEN_PATH, type CachedToken, type ClientOptions, type TokenCache } from "../src/index.js";
import { rejectionOf, startTarget, type ServerTarget } from "./support.js";

const ACCOUNTS = "GET /rbac/ServerCommand/GetAccountList";
const TOKEN = `POST ${TOKEN_PATH}`;

let target: ServerTarget | null = null;
let proxy: Server | null = null;
afterEach(async () => {
  const p = proxy;
  proxy = null;
  if (p) {
    p.closeAllConnections();
    await new Promise<void>((resolve) => p.close(() => resolve()));
  }
  await target?.close();
  expect(target?.errors).toEqual([]);
  target = null;
});

/**
 * What the proxy saw: "GET /rbac/..." when a request arrived, "closed GET /rbac/..." when the
 * client let go of a request it was holding (the fetch was aborted on the wire), "forwarded ..."
 * once it passed it on to the server.
 */
type Seen = string[];

/**
 * A proxy on port 0 in front of `t`. A request whose path `held` names is held until the client
 * closes its connection (then never forwarded) or until `release()`; others are forwarded at once.
 */
async function startProxy(t: ServerTarget, seen: Seen) {
  const held = new Set<string>();
  const waiting = new Set<() => void>();
  proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const path = new URL(req.url!, "http://proxy").pathname;
      const what = `${req.method} ${path}`;
      seen.push(what);
      if (held.has(path)) {
        const gone = await new Promise<boolean>((resolve) => {
          const release = () => resolve(false);
          waiting.add(release);
          res.on("close", () => {
            waiting.delete(release);
            resolve(true);
          });
        });
        if (gone) return void seen.push(`closed ${what}`);
      }
      seen.push(`forwarded ${what}`);
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !["host", "connection", "content-length", "keep-alive"].includes(k))) as Record<string, string>;
      const body = chunks.length === 0 ? undefined : Buffer.concat(chunks);
      const answer = await fetch(t.baseUrl + req.url, { method: req.method!, headers, ...(body === undefined ? {} : { body }) });
      const bytes = Buffer.from(await answer.arrayBuffer());
      const out: Record<string, string> = {};
      answer.headers.forEach((value, key) => {
        if (!["content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding"].includes(key)) out[key] = value;
      });
      res.writeHead(answer.status, { ...out, "content-length": String(bytes.byteLength) });
      res.end(bytes);
    });
  });
  await new Promise<void>((resolve) => proxy!.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    hold: (path: string) => void held.add(path),
    /** Stops holding, and lets every held request through. */
    release() {
      held.clear();
      for (const release of [...waiting]) release();
      waiting.clear();
    },
  };
}

/** Polls `condition` every 10 ms; fails after `ms`. */
async function until(condition: () => boolean, ms = 10_000): Promise<void> {
  const end = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}

const listeners = (signal: AbortSignal) => getEventListeners(signal, "abort").length;
const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;

/** The real server behind a proxy, and a client on the proxy with the global fetch. */
async function setUp(options: Partial<ClientOptions> = {}) {
  target = await startTarget();
  const seen: Seen = [];
  const p = await startProxy(target, seen);
  const client = createClient({ baseUrl: p.url, clientId: target.clientId, clientSecret: target.clientSecret, scope: "Platform_UserAPIs", timeoutMs: 600_000, ...options });
  return { client, seen, proxy: p };
}

describe("an already aborted signal", () => {
  it("every method rejects at once with the signal's reason and sends nothing, with or without a token held", async () => {
    const { client, seen } = await setUp();
    const plain = new AbortController();
    plain.abort();
    const reason = new Error("user left the page");
    const custom = new AbortController();
    custom.abort(reason);
    const calls = (signal: AbortSignal) => [
      () => client.getAccessToken({ signal }),
      () => client.getToken({ signal }),
      () => client.refresh(undefined, { signal }),
      () => client.listAccounts({ page: 1, signal }),
      () => client.createPlant({ id: 1n, name: "Monstera" }, { signal }),
      () => client.accounts({ signal }).next(),
    ];
    for (const round of ["no token yet", "a token held"]) {
      for (const call of calls(plain.signal)) {
        const error = await rejectionOf(call());
        expect(error, round).toBeInstanceOf(DOMException);
        expect(error, round).toMatchObject({ name: "AbortError" });
        expect(error, round).toBe(plain.signal.reason);
      }
      for (const call of calls(custom.signal)) expect(await rejectionOf(call()), round).toBe(reason);
      expect(seen, round).toEqual(round === "no token yet" ? [] : [TOKEN, `forwarded ${TOKEN}`]);
      if (round === "no token yet") {
        await client.getAccessToken();
        seen.length = 0;
        seen.push(TOKEN, `forwarded ${TOKEN}`);
      }
    }
    expect(listeners(plain.signal) + listeners(custom.signal)).toBe(0);
  });

  it("a signal option that is not an AbortSignal is a TypeError, and nothing is sent", async () => {
    const { client, seen } = await setUp();
    const bad = { aborted: false } as unknown as AbortSignal;
    for (const call of [() => client.getAccessToken({ signal: bad }), () => client.listAccounts({ signal: bad }), () => client.createPlant({ id: 1n, name: "x" }, { signal: bad })]) {
      expect(await rejectionOf(call())).toMatchObject({ name: "TypeError", message: "signal must be an AbortSignal" });
    }
    expect(seen).toEqual([]);
  });
});

describe("a signal aborted while the call runs", () => {
  it("during the API request: the fetch is aborted on the wire, the call rejects with the reason at once, and nothing reached the server", async () => {
    const { client, seen, proxy: p } = await setUp();
    await client.getAccessToken();
    p.hold("/plants");
    const controller = new AbortController();
    const reason = new Error("cancelled by the user");
    const pending = rejectionOf(client.createPlant({ id: 9223372036854775807n, name: "Monstera" }, { signal: controller.signal }));
    await until(() => seen.includes("POST /plants"));
    controller.abort(reason);
    expect(await pending).toBe(reason);
    // The proxy sees the client's connection go: the real fetch was aborted, not left running.
    await until(() => seen.includes("closed POST /plants"));
    expect(listeners(controller.signal)).toBe(0);
    // It never reached the server: the same id is free, and the token is still in use (no new token request).
    p.release();
    expect(await client.createPlant({ id: 9223372036854775807n, name: "Monstera" })).toEqual({ id: 9223372036854775807n, name: "Monstera" });
    expect(seen).toEqual([TOKEN, `forwarded ${TOKEN}`, "POST /plants", "closed POST /plants", "POST /plants", "forwarded POST /plants"]);
  });

  it("a plain abort() rejects with an AbortError DOMException, as fetch does", async () => {
    const { client, seen, proxy: p } = await setUp();
    await client.getAccessToken();
    p.hold("/rbac/ServerCommand/GetAccountList");
    const controller = new AbortController();
    const pending = rejectionOf(client.listAccounts({ signal: controller.signal }));
    await until(() => seen.includes(ACCOUNTS));
    controller.abort();
    const error = await pending;
    expect(error).toBeInstanceOf(DOMException);
    expect(error).toMatchObject({ name: "AbortError" });
    await until(() => seen.includes(`closed ${ACCOUNTS}`));
  });

  it("while waiting for the token: the call rejects at once; the shared token request goes on and its token serves the next call", async () => {
    const { client, seen, proxy: p } = await setUp();
    p.hold(TOKEN_PATH);
    const controller = new AbortController();
    const pending = rejectionOf(client.listAccounts({ signal: controller.signal }));
    await until(() => seen.includes(TOKEN));
    controller.abort();
    expect(await pending).toMatchObject({ name: "AbortError" });
    expect(listeners(controller.signal)).toBe(0);
    // The renewal is not cancelled (a refresh cut off mid-way could lose its rotated refresh token).
    p.release();
    expect((await client.listAccounts()).total).toBe(1);
    expect(seen).toEqual([TOKEN, `forwarded ${TOKEN}`, ACCOUNTS, `forwarded ${ACCOUNTS}`]);
  });

  it("while a tokenCache.get hangs: the call rejects at once with the reason", async () => {
    let hang = true;
    const store = new Map<string, CachedToken>();
    const tokenCache: TokenCache = {
      get: (key) => (hang ? new Promise<never>(() => {}) : Promise.resolve(store.get(key) ?? null)),
      set: async (key, token) => void store.set(key, token),
    };
    const { client, seen } = await setUp({ timeoutMs: 3000, tokenCache });
    const controller = new AbortController();
    const started = performance.now();
    const pending = rejectionOf(client.getAccessToken({ signal: controller.signal }));
    await new Promise((r) => setTimeout(r, 50));
    controller.abort();
    expect(await pending).toMatchObject({ name: "AbortError" });
    // Well before the hook's own deadline (3 s) gave up on it.
    expect(performance.now() - started).toBeLessThan(2500);
    expect(listeners(controller.signal)).toBe(0);
    expect(seen).toEqual([]);
    // The renewal stuck in the hook ends at timeoutMs (3 s); after it the client works. A call
    // that joins that renewal first fails with it (NetworkError timeout) and is made again: no
    // fixed wait to guess how late a busy host's timers run.
    hang = false;
    const deadline = performance.now() + 20_000;
    let total: number | undefined;
    while (total === undefined) {
      total = await client.listAccounts().then(
        (page) => page.total,
        (error: unknown) => {
          if (!(error instanceof NetworkError) || performance.now() > deadline) throw error;
          return undefined;
        },
      );
    }
    expect(total).toBe(1);
  });
});

describe("signal and timeoutMs together: whichever comes first", () => {
  it("timeoutMs first: NetworkError timeout, the fetch aborted on the wire, no listener left on the signal", async () => {
    const { client, seen, proxy: p } = await setUp({ timeoutMs: 1000 });
    await client.getAccessToken();
    p.hold("/rbac/ServerCommand/GetAccountList");
    const controller = new AbortController();
    const error = await rejectionOf(client.listAccounts({ signal: controller.signal }));
    expect(error).toBeInstanceOf(NetworkError);
    expect(error).toMatchObject({ reason: "timeout", status: null, message: `${ACCOUNTS} got no complete answer within 1000 ms` });
    await until(() => seen.includes(`closed ${ACCOUNTS}`));
    expect(listeners(controller.signal)).toBe(0);
    expect(controller.signal.aborted).toBe(false);
  });

  it("the signal first (AbortSignal.timeout shorter than timeoutMs): its TimeoutError DOMException, not a NetworkError", async () => {
    const { client, seen, proxy: p } = await setUp({ timeoutMs: 600_000 });
    await client.getAccessToken();
    p.hold("/rbac/ServerCommand/GetAccountList");
    const signal = AbortSignal.timeout(300);
    const error = await rejectionOf(client.listAccounts({ signal }));
    expect(error).toBeInstanceOf(DOMException);
    expect(error).toMatchObject({ name: "TimeoutError" });
    expect(error).not.toBeInstanceOf(NetworkError);
    await until(() => seen.includes(`closed ${ACCOUNTS}`));
  });
});

describe("no listener or timer outlives a call", () => {
  it("200 calls with one long-lived signal: it never keeps a listener, and no timer is left", async () => {
    const { client } = await setUp();
    const controller = new AbortController();
    await client.getAccessToken({ signal: controller.signal });
    const before = timers();
    for (let i = 0; i < 200; i++) {
      if (i % 2 === 0) expect((await client.listAccounts({ signal: controller.signal })).total).toBe(1);
      else expect(typeof (await client.getAccessToken({ signal: controller.signal }))).toBe("string");
      expect(listeners(controller.signal)).toBe(0);
    }
    // Each call armed a timeoutMs timer of 600 s: a leak would leave 200 of them.
    await until(() => timers() <= before + 5);
  });

  it("50 calls aborted mid-request: no listener and no timer left by any of them", async () => {
    const { client, seen, proxy: p } = await setUp();
    await client.getAccessToken();
    p.hold("/rbac/ServerCommand/GetAccountList");
    const before = timers();
    const signals: AbortSignal[] = [];
    for (let i = 0; i < 50; i++) {
      const controller = new AbortController();
      signals.push(controller.signal);
      const pending = rejectionOf(client.listAccounts({ signal: controller.signal }));
      await until(() => seen.filter((s) => s === ACCOUNTS).length === i + 1);
      controller.abort();
      expect(await pending).toMatchObject({ name: "AbortError" });
    }
    expect(signals.map(listeners)).toEqual(signals.map(() => 0));
    await until(() => seen.filter((s) => s === `closed ${ACCOUNTS}`).length === 50);
    await until(() => timers() <= before + 5);
  });
});
