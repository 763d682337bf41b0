import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequestListener, type RequestListenerOptions } from "./create-request-listener.js";
import type { NodeApp } from "./fetch-app.js";

/**
 * Options for {@link serve}.
 *
 * @example
 * ```ts
 * import type { ServeOptions } from "@plantgate/node";
 *
 * const options: ServeOptions = { port: 8080, host: "0.0.0.0", trustProxy: true };
 * ```
 */
export interface ServeOptions extends RequestListenerOptions {
  /** TCP port; `0` picks a free ephemeral port. Defaults to `3000`. */
  port?: number;
  /**
   * Interface to bind. Defaults to `127.0.0.1` so nothing is exposed to the
   * network unless asked for; use `0.0.0.0` or `::` in containers.
   */
  host?: string;
}

/**
 * A listening server returned by {@link serve}.
 *
 * @example
 * ```ts
 * import { serve, type ServeResult } from "@plantgate/node";
 *
 * const app = { fetch: async () => new Response("ok") };
 * const running: ServeResult = await serve(app, { port: 0 });
 * console.log(`listening on ${running.url}`);
 * await running.close();
 * ```
 */
export interface ServeResult {
  server: Server;
  /** Base URL actually bound, e.g. `http://127.0.0.1:41234` (no trailing slash). */
  url: string;
  /**
   * Stops listening and closes every connection, idle keep-alive ones and
   * those with a response in flight alike, then resolves. Safe to call more
   * than once.
   */
  close(): Promise<void>;
}

/**
 * Serves an app on `node:http` (see {@link createRequestListener}: plantgate's `handle`, or any
 * Web handler's `fetch`) and resolves once it is listening.
 *
 * Rejects with a `TypeError` if `options.origin` is invalid, and with the
 * listen error (e.g. `EADDRINUSE`) if the port cannot be bound.
 *
 * @example
 * ```ts
 * import { serve } from "@plantgate/node";
 *
 * const app = { fetch: async (request: Request) => new Response("ok") };
 * const { url, close } = await serve(app, { port: 0 });
 * const response = await fetch(`${url}/health`);
 * await close();
 * ```
 */
export async function serve(app: NodeApp, options: ServeOptions = {}): Promise<ServeResult> {
  const server = createServer(createRequestListener(app, options));
  const port = options.port ?? 3000;
  const host = options.host ?? "127.0.0.1";

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });

  let closing: Promise<void> | undefined;
  return {
    server,
    url: baseUrl(server.address() as AddressInfo),
    close() {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        // server.close() only stops accepting; the callback waits for every
        // open connection, and keep-alive clients may hold one for seconds.
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function baseUrl(address: AddressInfo): string {
  // A wildcard address is not something a client can dial on every platform.
  let host = address.address;
  if (host === "0.0.0.0") host = "127.0.0.1";
  else if (host === "::") host = "::1";
  return `http://${address.family === "IPv6" || host.includes(":") ? `[${host}]` : host}:${address.port}`;
}
