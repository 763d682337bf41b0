import { createAdmin, type Admin } from "./admin/index.js";
import { consoleHandler, consoleOwns, consoleSpanPath } from "./console/index.js";
import { CSRF_HEADER } from "./console/session.js";
import { listAccounts } from "./api/accounts.js";
import { createPlant, PLANT_JSON } from "./api/plants.js";
import { CONSOLE_JSON } from "./console/body.js";
import { docsHandler, docsOwns, docsSpanPath } from "./api/docs.js";
import type { ServedPage } from "./pages/static-page.js";
import { openApiResponse } from "./api/openapi.js";
import { ApiError, ApiErrorCode, OAuthError } from "./errors/index.js";
import { readJsonBody } from "./http/api-json.js";
import { requireBearer, withBearerRead } from "./http/bearer.js";
import { readOAuthForm, TOKEN_PARAMETERS, TOKEN_QUERY_PARAMETERS } from "./http/oauth-form.js";
import type { HandleInfo } from "./http/handle-info.js";
import { clientAddressOf, requestClientIp } from "./http/client-address.js";
import { API_NO_STORE, errorResponse, json, NO_STORE, toResponse, type PlainResponse } from "./http/respond.js";
import { INTROSPECTION_PATH, metadata, REVOCATION_PATH, TOKEN_PATH } from "./oauth/metadata.js";
import { introspectionEndpoint } from "./oauth/introspection.js";
import { revocationEndpoint } from "./oauth/revocation.js";
import { GRANT_TYPES, tokenEndpoint, type ClientFormEndpoint } from "./oauth/token-endpoint.js";
import { observeRequests, SCRUBBED, type RequestNote } from "./telemetry/request.js";
import type { Context, Urls } from "./context.js";
import { urlsFor } from "./http/urls.js";
import { resolveOptions, type PlantgateOptions } from "./options.js";
import type { Storage } from "./storage/types.js";
import { JWKS_MAX_AGE_SECONDS } from "./tokens/keys.js";

/**
 * A plantgate instance: the request handler (as plain data through {@link Plantgate.handle}, as a
 * Web `Response` through {@link Plantgate.fetch}) plus the admin operations.
 */
export interface Plantgate {
  /**
   * Handles one request and returns the answer as plain data: status, lower-case headers
   * (content-length included when there is a body), body bytes or null; for HEAD without the body.
   * Never throws: every failure becomes a documented error answer. `info` carries what the adapter
   * knows (the client's address, a direct body reader; see {@link HandleInfo} and the README
   * section "Writing an adapter"). Adapters that write to a socket themselves call this and need
   * no Web `Response` (`@plantgate/node` and `@plantgate/express` do).
   */
  handle(request: Request, info?: HandleInfo): Promise<PlainResponse>;
  /** {@link Plantgate.handle} with the answer as a Web `Response`: for runtimes that want one (Workers, Bun, Deno). Never throws. */
  fetch(request: Request, info?: HandleInfo): Promise<Response>;
  /**
   * Whether plantgate answers this URL path (a pathname as in `new URL(request.url).pathname`,
   * base path included) with anything but its "no such route" 404 (`{"error":1404}`): a route of
   * any method (a wrong method is still plantgate's 405), the console's pages and API when enabled.
   * For hosts that share paths with plantgate: `@plantgate/express` passes unknown paths on with
   * `next()` without asking plantgate to answer them. A path as sent that the URL parser would read
   * as another (a backslash, a `.` or `..` segment, also as `%2e`) is not owned: the Node adapters
   * never serve it as the path it resolves to.
   *
   * @example
   * const app = createPlantgate({ basePath: "/auth" });
   * app.owns("/auth/UserService/connect/token"); // true
   * app.owns("/auth/nope");                      // false
   * app.owns("/health");                         // false
   * app.owns("/auth/x/../UserService/connect/token"); // false
   */
  owns(path: string): boolean;
  /** Client and account management (console, CLI, bootstrap). */
  admin: Admin;
  /** The storage in use. */
  storage: Storage;
  /** The public JWK Set (what `/.well-known/jwks.json` serves). */
  jwks(): Promise<{ keys: unknown[] }>;
  /**
   * Resolves once every security event emitted before the call has been handled by the `onEvent`
   * hook and written to the audit store (failures are logged, never thrown); later events are not
   * waited for. Answers never wait for events;
   * a Worker hands this to `ctx.waitUntil` so they are delivered after the answer is sent.
   *
   * Resolves to 0 then. With `timeoutMs` (an integer up to 2147483647; 0 or none: no bound) it
   * stops waiting once that much time has passed first, and resolves to the number of batches (the
   * events of one step, or of one deferred lookup) still unfinished; the wait is then forgotten, so
   * a hook call that never settles holds nothing of the flushes given up on. Any other `timeoutMs`
   * throws a TypeError. A caller that must not hang (a shutdown, a Worker's `waitUntil`) gives one.
   *
   * @example
   * const unfinished = await app.flushEvents(10_000);
   * if (unfinished > 0) logger.warn(`${unfinished} batches of security events still undelivered`);
   */
  flushEvents(timeoutMs?: number): Promise<number>;
}

/**
 * The only code besides `http/` that sees the Request: it takes what each handler needs from it
 * (a parsed form, a header, a parsed JSON body, the query) and passes that on as plain values.
 * `clientIp` is already resolved through `trustedProxies`; undefined when the adapter gave none.
 */
type Handler = (
  ctx: Context,
  urls: Urls,
  request: Request,
  clientIp: string | undefined,
  info: HandleInfo | undefined,
  note: RequestNote | undefined,
) => Promise<PlainResponse>;

interface Route {
  /** Which error shape the route speaks. */
  surface: "oauth" | "api";
  /** A Map, so a method named `constructor` or `__proto__` finds nothing rather than Object.prototype. */
  methods: ReadonlyMap<string, Handler>;
}

function route(surface: Route["surface"], methods: Record<string, Handler>): Route {
  return { surface, methods: new Map(Object.entries(methods)) };
}

const METADATA_PATH = "/.well-known/oauth-authorization-server";

/** A client-authenticated form endpoint (token, revocation, introspection): POST only. */
function formRoute(endpoint: ClientFormEndpoint, recognized: ReadonlySet<string>): Route {
  return route("oauth", {
    POST: async (ctx, urls, request, clientIp, info, note) => {
      const form = await readOAuthForm(ctx, request, info, recognized);
      if (note) note.grantType = form.get("grant_type");
      return endpoint(ctx, urls, form, request.headers.get("authorization"), clientIp);
    },
  });
}

/** Path (relative to the base path) -> route. A Map for the same reason as {@link Route.methods}. */
const ROUTES: ReadonlyMap<string, Route> = new Map([
  [TOKEN_PATH, formRoute(tokenEndpoint, TOKEN_PARAMETERS)],
  [REVOCATION_PATH, formRoute(revocationEndpoint, TOKEN_QUERY_PARAMETERS)],
  [INTROSPECTION_PATH, formRoute(introspectionEndpoint, TOKEN_QUERY_PARAMETERS)],
  [
    "/plants",
    route("api", {
      POST: async (ctx, urls, request, _clientIp, info) => {
        await requireBearer(ctx, urls, request, "createPlant");
        return createPlant(ctx, await readJsonBody(request, info, ctx.maxBodyBytes, PLANT_JSON));
      },
    }),
  ],
  [
    "/rbac/ServerCommand/GetAccountList",
    route("api", {
      // The page is read while the token's revocation is looked up (one storage wait, not two).
      GET: (ctx, urls, request) => withBearerRead(ctx, urls, request, "listAccounts", () => listAccounts(ctx, new URL(request.url).searchParams)),
    }),
  ],
  [
    "/.well-known/jwks.json",
    route("api", {
      GET: async (ctx) => {
        const jwks = await ctx.keyring.jwks();
        // While this instance's re-reads of the keys fail, its set may lack a key another instance
        // stored since, one that signs within JWKS_MAX_AGE_SECONDS: not to be kept (since
        // 2026-12-03; a resource server kept such a copy 300 s and refused that key's tokens).
        return json(200, jwks, { "cache-control": ctx.keyring.stale ? "no-store" : `public, max-age=${JWKS_MAX_AGE_SECONDS}` });
      },
    }),
  ],
  // Built from the request's Host only when neither baseUrl nor an issuer URL is configured: then
  // no shared cache may hand one client's document to another.
  [METADATA_PATH, route("api", { GET: async (ctx, urls) => json(200, metadata(ctx, urls), hostDependent(ctx)) })],
  ["/openapi.json", route("api", { GET: (ctx, urls, request) => openApiResponse(ctx, urls, request.headers.get("if-none-match")) })],
]);

/** Every route path (relative to the base path); the OpenAPI test checks each is described. */
export const ROUTE_PATHS: readonly string[] = [...ROUTES.keys()];

function methodNotAllowed(route: Route): PlainResponse {
  const methods = [...route.methods.keys()];
  const allow = (methods.includes("GET") ? [...methods, "HEAD"] : methods).join(", ");
  if (route.surface === "oauth") {
    const e = new OAuthError("invalid_request", `Use ${allow} for this endpoint.`);
    return json(405, { error: e.code, error_description: e.description }, { allow, ...NO_STORE });
  }
  return json(405, { error: ApiErrorCode.methodNotAllowed, message: `Use ${allow} for this endpoint.` }, { allow, ...API_NO_STORE });
}

/**
 * The pathname of a serialized absolute URL (what `Request.url` always is), as `new URL(url).pathname`
 * would give it, without parsing the whole URL on every request; anything unexpected is parsed.
 */
function pathOf(url: string): string {
  const authority = url.startsWith("http://") ? 4 : url.startsWith("https://") ? 5 : -1;
  const start = authority < 0 ? -1 : url.indexOf("/", authority + 3);
  if (start < 0) return new URL(url).pathname;
  let end = url.length;
  for (let i = start; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 63 /* ? */ || c === 35 /* # */) {
      end = i;
      break;
    }
  }
  return url.slice(start, end);
}

/**
 * A subtree of paths handed to one handler as a whole (the console under `/console`): `owns` says
 * which of its paths it answers with something other than its own 404.
 */
interface Mount {
  prefix: string;
  owns(path: string): boolean;
  /** The path as a span's `url.path` may carry it (what the request put in it scrubbed), or null when the mount answers it with its 404 (the span then carries the mount's template). */
  spanPath(path: string): string | null;
  handle(ctx: Context, request: Request, info: HandleInfo | undefined, path: string): Promise<PlainResponse>;
}

const consoleMount = (page: ServedPage | null): Mount => ({
  prefix: "/console",
  owns: (path) => consoleOwns(page, path),
  spanPath: (path) => consoleSpanPath(page, path),
  handle: (ctx, request, info, path) =>
    consoleHandler(ctx, {
      method: request.method === "HEAD" ? "GET" : request.method,
      url: new URL(request.url),
      path,
      cookie: request.headers.get("cookie"),
      origin: request.headers.get("origin"),
      fetchSite: request.headers.get("sec-fetch-site"),
      csrfToken: request.headers.get(CSRF_HEADER),
      clientIp: requestClientIp(ctx, request, info),
      hasBody: request.headers.get("content-type") !== null || (request.headers.get("content-length") ?? "0") !== "0",
      readJson: () => readJsonBody(request, info, ctx.maxBodyBytes, CONSOLE_JSON),
    }),
});

/** The API reference page (the `docs` option) under `/docs`. */
function docsMount(docs: ServedPage): Mount {
  return { prefix: "/docs", owns: (path) => docsOwns(docs, path), spanPath: (path) => docsSpanPath(docs, path), handle: (_ctx, request, _info, path) => docsHandler(docs, path, request.method, request.headers.get("if-none-match")) };
}

/** What one app answers: the fixed routes, plus the mounts its options switch on. The one table both dispatch and `owns` read. */
interface RouteTable {
  routes: ReadonlyMap<string, Route>;
  mounts: readonly Mount[];
  /**
   * The route template (base path included) of each route path and mount prefix, made once: the
   * observer gets the same string for every request to a route, which a metric's series lookup
   * then matches by identity instead of comparing a fresh string's characters.
   */
  names: ReadonlyMap<string, string>;
  /**
   * The route of each RFC 8414 §3.1 metadata path (the well-known path with the base path's or the
   * issuer URL's path inserted), by the request's own path: that path itself, which the requests
   * it names match (the base path's template, `/auth/.well-known/...`, never did; until
   * 2026-12-02 it was theirs). At most two, fixed by the configuration.
   */
  insertedMetadata: ReadonlyMap<string, string>;
}

function routeTable(ctx: Context): RouteTable {
  const mounts: Mount[] = [];
  if (ctx.console) mounts.push(consoleMount(ctx.console.page));
  if (ctx.docs) mounts.push(docsMount(ctx.docs));
  const names = new Map<string, string>();
  for (const path of [...ROUTES.keys(), ...mounts.map((m) => m.prefix)]) names.set(path, ctx.basePath + path);
  const insertedMetadata = new Map<string, string>();
  for (const path of [ctx.issuerMetadataPath, ctx.basePath ? `${METADATA_PATH}${ctx.basePath}` : null]) if (path !== null) insertedMetadata.set(path, path);
  return { routes: ROUTES, mounts, names, insertedMetadata };
}

/** Cache headers of a document built from the public URLs: public when they are configured, else private and varying by Host. */
function hostDependent(ctx: Context): Record<string, string> {
  return ctx.baseUrl !== undefined ? { "cache-control": "public, max-age=300" } : { "cache-control": "private, max-age=300", vary: "Host" };
}

/**
 * A backslash, a `.`/`..` segment (also percent-encoded, `%2e`), a tab or a line break: what the
 * WHATWG URL parser turns into another path (`\` is `/`, dot segments are resolved). Never in a
 * pathname read off a `Request`; `@plantgate/node` refuses such a target, `@plantgate/express`
 * passes it on.
 *
 * Keep in step with `AMBIGUOUS` in packages/node/src/incoming.ts (`hasAmbiguousPath`, the adapters'
 * check of the target as sent), its twin: @plantgate/node depends on nothing of ours, so it keeps its
 * own copy. packages/express/test/ambiguous-path.test.ts runs both on the same generated targets and
 * fails when they disagree. Exported for that test only (not from the package's index).
 */
export const AMBIGUOUS_PATH = /[\\\t\n\r]|(?:^|\/)(?:\.|%2e){1,2}(?:[/?#]|$)/i;

/** The path relative to the base path (RFC 8414 §3.1's inserted metadata path mapped back); null outside the base path. */
function relativePath(ctx: Context, path: string): string | null {
  // RFC 8414 §3.1: for an issuer with a path, the metadata lives at /.well-known/...{path}: the
  // base path's, and the configured issuer URL's when that differs (an issuer named for a tenant
  // whose endpoints are at the root).
  if (path === ctx.issuerMetadataPath) return METADATA_PATH;
  if (!ctx.basePath) return path;
  if (path === `${METADATA_PATH}${ctx.basePath}`) return METADATA_PATH;
  if (path !== ctx.basePath && !path.startsWith(ctx.basePath + "/")) return null;
  return path.slice(ctx.basePath.length);
}

function mountOf(table: RouteTable, path: string): Mount | undefined {
  for (const mount of table.mounts) if (path === mount.prefix || path.startsWith(mount.prefix + "/")) return mount;
  return undefined;
}

/**
 * A request's path (`URL.pathname`) as its span's `url.path` (OpenTelemetry: sensitive content in
 * it SHOULD be scrubbed when the instrumentation can identify it). Every path segment a route
 * does not fix is what the request put there: a token appended to a route, a `;access_token=`
 * parameter, a percent-encoded `?`, a client secret after the token endpoint's path. So: a route's
 * own path (base path included, and an RFC 8414 §3.1 metadata path, fixed by the configuration)
 * is carried as it is; a path under a mount as the mount makes it ({@link Mount.spanPath}), or the
 * mount's template; any other path is `REDACTED`. The routes outside the mounts have no path
 * parameters, so their real path is the route's path.
 */
function spanPath(ctx: Context, table: RouteTable, requestPath: string): string {
  const path = relativePath(ctx, requestPath);
  if (path === null) return SCRUBBED;
  const mount = mountOf(table, path);
  if (mount) {
    const own = mount.spanPath(path);
    return own === path ? requestPath : own === null ? table.names.get(mount.prefix)! : ctx.basePath + own;
  }
  return table.routes.has(path) ? requestPath : SCRUBBED;
}

/** Routes one request; every failure becomes the route's documented error shape. */
async function dispatch(ctx: Context, table: RouteTable, request: Request, info: HandleInfo | undefined, note: RequestNote | undefined): Promise<PlainResponse> {
  let surface: "oauth" | "api" = "api";
  let answer: PlainResponse;
  try {
    const requestPath = pathOf(request.url);
    const path = relativePath(ctx, requestPath);
    if (path === null) throw new ApiError(404, ApiErrorCode.notFound, "Not found.");
    const mount = mountOf(table, path);
    if (mount) {
      if (note) note.route = table.names.get(mount.prefix)!;
      answer = await mount.handle(ctx, request, info, path);
    } else {
      const route = table.routes.get(path);
      if (!route) throw new ApiError(404, ApiErrorCode.notFound, "Not found.");
      if (note) note.route = (path === METADATA_PATH && table.insertedMetadata.get(requestPath)) || table.names.get(path)!;
      surface = route.surface;
      const handler = route.methods.get(request.method === "HEAD" ? "GET" : request.method);
      if (!handler) answer = methodNotAllowed(route);
      else {
        const clientIp = requestClientIp(ctx, request, info);
        answer = await handler(ctx, urlsFor(ctx, request.url), request, clientIp, info, note);
      }
    }
  } catch (error) {
    if (note) note.error = error;
    answer = errorResponse(error, surface, ctx.logger);
  }
  // The span's end and the observer's call, here rather than in an async wrapper around dispatch
  // (one promise and one resumption less on every observed request).
  if (note) note.finish(request, note, answer);
  return answer;
}

/**
 * Creates a plantgate app: `handle(request, info)` / `fetch(request, info)` for the token,
 * revocation and introspection endpoints, the plant store, the account listing, the JWKS and the
 * RFC 8414 metadata (and the console when enabled) over the storage you pass, `owns(path)` for
 * hosts that share paths with it, and the admin operations.
 *
 * @example
 * import { createPlantgate } from "@plantgate/core";
 * const app = createPlantgate({ issuer: "https://auth.example.com" });
 * const { clientSecret } = await app.admin.createClient({ clientId: "reporting" });
 * const res = await app.fetch(new Request("https://auth.example.com/.well-known/jwks.json"));
 */
export function createPlantgate(options: PlantgateOptions = {}): Plantgate {
  const ctx = resolveOptions(options);
  const table = routeTable(ctx);
  // A span per request and the observer's call when configured; else dispatch as it is.
  const run = observeRequests((request, info: HandleInfo | undefined, note) => dispatch(ctx, table, request, info, note), {
    tracer: ctx.tracer,
    observer: ctx.observer,
    tokenRoute: table.names.get(TOKEN_PATH)!,
    clientRoutes: new Set([table.names.get(REVOCATION_PATH)!, table.names.get(INTROSPECTION_PATH)!]),
    grantTypes: new Set(GRANT_TYPES),
    spanPath: (path) => spanPath(ctx, table, path),
    // The address as resolved for the throttle, without requestClientIp's warning (said, where
    // due, when a route needs the address).
    clientAddress: (request, info) => clientAddressOf(ctx, request, info as HandleInfo | undefined),
  });
  return {
    admin: createAdmin(ctx),
    storage: ctx.storage,
    jwks: () => ctx.keyring.jwks(),
    flushEvents: (timeoutMs) => ctx.events.settled(timeoutMs),
    async fetch(request, info) {
      const answer = await run(request, info);
      // RFC 9110 §9.3.2: HEAD is GET without the content, errors included.
      try {
        return toResponse(answer, request.method === "HEAD");
      } catch (error) {
        // A header the Response constructor refuses: still a documented answer, never a throw.
        return toResponse(errorResponse(error, "api", ctx.logger), request.method === "HEAD");
      }
    },
    owns(path) {
      // A path as sent that the URL parser would resolve to another (what a host passes from its
      // raw target): not plantgate's, as the adapters never serve it (until 2026-12-02
      // `/auth/console/api/clients/..` was owned, as a client id).
      if (AMBIGUOUS_PATH.test(path)) return false;
      const relative = relativePath(ctx, path);
      if (relative === null) return false;
      const mount = mountOf(table, relative);
      return mount ? mount.owns(relative) : table.routes.has(relative);
    },
    async handle(request, info) {
      const response = await run(request, info);
      return request.method === "HEAD" ? { ...response, body: null } : response;
    },
  };
}
