/**
 * Anything that answers a Web-standard {@link Request} with a {@link Response}.
 *
 * The adapter depends on nothing else, so any framework or hand-written
 * handler that exposes a `fetch` method can be served on `node:http`.
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
  /**
   * `info.clientIp` is the socket peer address (`socket.remoteAddress`). The adapter never reads
   * forwarded headers for it: whether to believe `X-Forwarded-For` is the app's decision
   * (plantgate's `trustedProxies` option), made in one place.
   */
  fetch(request: Request, info?: FetchClientInfo): Promise<Response>;
  /**
   * Optional: the same answer as `fetch`, as plain data, under the registered symbol
   * {@link HANDLE_PLAIN} (a symbol rather than a method name, so another framework's own
   * `handle` method is never mistaken for it). When present, the request listener calls it
   * instead of `fetch` and writes status, headers and body bytes straight to the socket, skipping
   * a Web `Response` and its body stream. plantgate's `createPlantgate()` app has it.
   */
  [HANDLE_PLAIN]?(request: Request, info?: FetchClientInfo): Promise<PlainAnswer>;
}

/**
 * `Symbol.for("plantgate.handle")`: the key of {@link FetchApp}'s optional plain-answer method.
 *
 * @example
 * ```ts
 * import { HANDLE_PLAIN, serve, type FetchApp } from "@plantgate/node";
 * import { createPlantgate } from "@plantgate/core";
 *
 * const app = createPlantgate();
 * // A wrapper keeps the fast path by passing the method on.
 * const wrapped: FetchApp = { fetch: (r, i) => app.fetch(r, i), [HANDLE_PLAIN]: (r, i) => app.handle(r, i) };
 * await serve(wrapped, { port: 3000 });
 * ```
 */
export const HANDLE_PLAIN: unique symbol = Symbol.for("plantgate.handle") as never;

/**
 * A complete answer as plain data, what {@link FetchApp.handle} resolves to: header names in lower
 * case (content-length included when there is a body), `body` null for none. For a HEAD request
 * the body is not sent.
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
 * What the adapter knows about the connection, passed as `fetch`'s second argument.
 *
 * @example
 * ```ts
 * const app: FetchApp = { fetch: async (_request, info) => new Response(info?.clientIp ?? "unknown") };
 * ```
 */
export interface FetchClientInfo {
  /** The socket peer address, e.g. `203.0.113.9` or `::ffff:203.0.113.9`; absent when the socket has none. */
  clientIp?: string;
}
