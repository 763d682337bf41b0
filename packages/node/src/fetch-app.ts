/**
 * What the adapter knows about one request, passed as the second argument of `fetch` and
 * `handle`: the same shape as `HandleInfo` in `@plantgate/core` (declared here too, so this package
 * serves any Web handler without depending on core). See the README section "Writing an adapter".
 *
 * @example
 * ```ts
 * const app: FetchApp = { fetch: async (_request, info) => new Response(info?.clientIp ?? "unknown") };
 * ```
 */
export interface HandleInfo {
  /**
   * The socket peer address (`socket.remoteAddress`), e.g. `203.0.113.9` or `::ffff:203.0.113.9`;
   * absent when the socket has none. The adapter never reads forwarded headers for it: whether to
   * believe `X-Forwarded-For` is the app's decision (plantgate's `trustedProxies` option).
   */
  clientIp?: string;
  /**
   * True when the request came over a Unix domain socket (a server listening on a path, behind a
   * proxy on the same host), which has no peer address; then there is no `clientIp`. Whether that
   * peer's `X-Forwarded-For` is believed is the app's decision (plantgate's `trustedProxies`:
   * `"unix"`, or a hop count).
   */
  unixSocket?: boolean;
  /**
   * Reads the whole body straight from the `IncomingMessage`, without a Web stream: the bytes, or
   * null as soon as more than `maxBytes` arrived (the rest is discarded unread); rejects when the
   * upload breaks. Use it or `request.body`, not both. The body then counts as used.
   */
  readBody?(maxBytes: number): Promise<Uint8Array | null>;
}

/**
 * A complete answer as plain data, what an app's `handle` resolves to: header names in lower case
 * (content-length included when there is a body), `body` null for none. For a HEAD request the
 * body is not sent.
 *
 * @example
 * ```ts
 * const answer: PlainAnswer = { status: 204, headers: { "cache-control": "no-store" }, body: null };
 * ```
 */
export interface PlainAnswer {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array | null;
}

/**
 * Anything that answers a Web-standard {@link Request} with a {@link Response}: any framework or
 * hand-written handler with a `fetch` method can be served on `node:http`.
 *
 * @example
 * ```ts
 * import type { FetchApp } from "@plantgate/node";
 *
 * const app: FetchApp = {
 *   async fetch(request) {
 *     return new Response(`Hello from ${new URL(request.url).pathname}`);
 *   },
 * };
 * ```
 */
export interface FetchApp {
  fetch(request: Request, info?: HandleInfo): Promise<Response>;
  /** Optional: see {@link HandleApp}. When present, it is called instead of `fetch`. */
  handle?(request: Request, info?: HandleInfo): Promise<PlainAnswer | Response>;
}

/**
 * An app that answers through `handle(request, info)`, as plantgate's `createPlantgate()` app does:
 * a {@link PlainAnswer} (status, headers and bytes, written with one `writeHead` and one `end`, no
 * Web `Response` built) or a `Response` (streamed as {@link FetchApp}'s are). A wrapper that
 * forwards `handle` keeps this path; one that forwards only `fetch` is served through `fetch`.
 *
 * @example
 * ```ts
 * import { serve, type HandleApp } from "@plantgate/node";
 * import { createPlantgate } from "@plantgate/core";
 *
 * const app = createPlantgate();
 * const wrapped: HandleApp = { handle: (request, info) => app.handle(request, info) };
 * await serve(wrapped, { port: 3000 });
 * ```
 */
export interface HandleApp {
  handle(request: Request, info?: HandleInfo): Promise<PlainAnswer | Response>;
  fetch?(request: Request, info?: HandleInfo): Promise<Response>;
}

/** What `serve`, `createRequestListener` and `@plantgate/express` accept. */
export type NodeApp = FetchApp | HandleApp;
