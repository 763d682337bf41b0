/**
 * What an adapter knows about one request beyond the Web `Request`: the second argument of
 * `app.handle(request, info)` and `app.fetch(request, info)`. Everything is optional; an adapter
 * passes what it has. See the README section "Writing an adapter".
 *
 * @example
 * // Bun: the peer address from the server, the body through the Request as usual.
 * Bun.serve({ fetch: (request, server) => app.fetch(request, { clientIp: server.requestIP(request)?.address }) });
 */
export interface HandleInfo {
  /**
   * The socket peer address (IPv4 or IPv6 text), or, on platforms that terminate TCP themselves,
   * the address the platform vouches for. Forwarded headers are the app's decision
   * (`trustedProxies`), never the adapter's. Without it the brute-force counters keep their
   * per-username and per-client parts, and every request without an address shares one
   * client-authentication budget across client ids and one console sign-in budget across
   * usernames (anyone sending wrong client ids then locks every client out for the window); the
   * app's first such request is a warn line.
   */
  clientIp?: string;
  /**
   * True when the request came over a Unix domain socket, which has no peer address (a proxy on
   * the same host: nginx's `proxy_pass http://unix:/run/plantgate.sock`). Without `clientIp`, the
   * peer is then a trusted proxy when `trustedProxies` lists `"unix"` or is a hop count, and the
   * client IP is read from `X-Forwarded-For`; else there is none, as without `clientIp`.
   * `@plantgate/node` sets it.
   */
  unixSocket?: boolean;
  /**
   * Reads the whole request body without a Web stream, for adapters that hold the raw body
   * (`@plantgate/node` reads the `IncomingMessage` directly). Resolves to the bytes (empty for
   * none), or to null as soon as more than `maxBytes` arrived (the rest must then be discarded,
   * never buffered); rejects when the upload breaks (the client's fault: a 400), or with a
   * `HostFaultError` when the host server, not the client, keeps the body from plantgate (a body
   * parser took it first: a 500, see `HostFaultError`). plantgate calls it at most once per request,
   * and then never touches `request.body`. Without it, plantgate reads `request.body`.
   */
  readBody?(maxBytes: number): Promise<Uint8Array | null>;
}
