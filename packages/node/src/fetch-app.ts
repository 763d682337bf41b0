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
