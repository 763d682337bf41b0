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
  fetch(request: Request): Promise<Response>;
}
