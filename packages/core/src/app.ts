import { createAdmin, type Admin } from "./admin/index.js";
import { consoleHandler } from "./console/index.js";
import { listAccounts } from "./api/accounts.js";
import { createPlant } from "./api/plants.js";
import { DOCS_ASSET_NAMES, DOCS_ASSETS_PATH, DOCS_PATH, docsAsset, docsPage } from "./api/docs.js";
import { openApiResponse } from "./api/openapi.js";
import { ApiError, ApiErrorCode, OAuthError } from "./errors/index.js";
import { requireBearer } from "./http/bearer.js";
import { resolveClientIp, type ClientInfo } from "./http/client-ip.js";
import { errorResponse, json, NO_STORE, toResponse, type PlainResponse } from "./http/respond.js";
import { INTROSPECTION_PATH, metadata, REVOCATION_PATH, TOKEN_PATH } from "./oauth/metadata.js";
import { introspectionEndpoint } from "./oauth/introspection.js";
import { revocationEndpoint } from "./oauth/revocation.js";
import { tokenEndpoint } from "./oauth/token-endpoint.js";
import { resolveOptions, urlsFor, type Context, type PlantgateOptions, type Urls } from "./options.js";
import type { Storage } from "./storage/types.js";
import { JWKS_MAX_AGE_SECONDS } from "./tokens/keys.js";

/** Where adapters find {@link Plantgate.handle} (a registered symbol, so they need not import core). */
const HANDLE_PLAIN: unique symbol = Symbol.for("plantgate.handle") as never;

/** A plantgate instance: a Web-standard fetch handler plus the admin operations. */
export interface Plantgate {
  /**
   * Handles one request. Never throws: every failure becomes a documented error response.
   * `info.clientIp` is the socket peer address the adapter saw (see `trustedProxies`); without it
   * the brute-force counters fall back to per-username and per-client only.
   */
  fetch(request: Request, info?: ClientInfo): Promise<Response>;
  /**
   * The same answer as {@link fetch}, as plain data (status, lower-case headers, body bytes, with
   * HEAD answered without content): for adapters that write to a socket themselves and so need no
   * Web `Response` (`@plantgate/node` uses it). Never throws.
   */
  handle(request: Request, info?: ClientInfo): Promise<PlainResponse>;
  /** `handle` again, under `Symbol.for("plantgate.handle")`: the key adapters look for (`HANDLE_PLAIN` in @plantgate/node). */
  readonly [HANDLE_PLAIN]: (request: Request, info?: ClientInfo) => Promise<PlainResponse>;
  /** Client and account management (console, CLI, bootstrap). */
  admin: Admin;
  /** The storage in use. */
  storage: Storage;
  /** The public JWK Set (what `/.well-known/jwks.json` serves). */
  jwks(): Promise<{ keys: unknown[] }>;
}

/** `clientIp` is already resolved through `trustedProxies`; undefined when the adapter gave none. */
type Handler = (ctx: Context, urls: Urls, request: Request, clientIp: string | undefined) => Promise<PlainResponse>;

interface Route {
  /** Which error shape the route speaks. */
  surface: "oauth" | "api";
  methods: Record<string, Handler>;
}

const METADATA_PATH = "/.well-known/oauth-authorization-server";

const ROUTES: Record<string, Route> = {
  [TOKEN_PATH]: {
    surface: "oauth",
    methods: { POST: (ctx, urls, request, clientIp) => tokenEndpoint(ctx, urls, request, clientIp) },
  },
  [REVOCATION_PATH]: {
    surface: "oauth",
    methods: { POST: (ctx, urls, request, clientIp) => revocationEndpoint(ctx, urls, request, clientIp) },
  },
  [INTROSPECTION_PATH]: {
    surface: "oauth",
    methods: { POST: (ctx, urls, request, clientIp) => introspectionEndpoint(ctx, urls, request, clientIp) },
  },
  "/plants": {
    surface: "api",
    methods: {
      POST: async (ctx, urls, request) => {
        await requireBearer(ctx, urls, request, "createPlant");
        return createPlant(ctx, request);
      },
    },
  },
  "/rbac/ServerCommand/GetAccountList": {
    surface: "api",
    methods: {
      GET: async (ctx, urls, request) => {
        await requireBearer(ctx, urls, request, "listAccounts");
        return listAccounts(ctx, new URL(request.url));
      },
    },
  },
  "/.well-known/jwks.json": {
    surface: "api",
    methods: {
      GET: async (ctx) => json(200, await ctx.keyring.jwks(), { "cache-control": `public, max-age=${JWKS_MAX_AGE_SECONDS}` }),
    },
  },
  [METADATA_PATH]: {
    surface: "api",
    methods: {
      GET: async (ctx, urls) => json(200, metadata(ctx, urls), { "cache-control": "public, max-age=300" }),
    },
  },
  "/openapi.json": { surface: "api", methods: { GET: async (ctx, urls) => openApiResponse(ctx, urls) } },
  [DOCS_PATH]: { surface: "api", methods: { GET: async () => docsPage() } },
  ...Object.fromEntries(
    DOCS_ASSET_NAMES.map((name): [string, Route] => [DOCS_ASSETS_PATH + name, { surface: "api", methods: { GET: async () => docsAsset(name) } }]),
  ),
};

/** Every route path (relative to the base path); the OpenAPI test checks each is described. */
export const ROUTE_PATHS: readonly string[] = Object.keys(ROUTES);

function methodNotAllowed(route: Route): PlainResponse {
  const methods = Object.keys(route.methods);
  const allow = (methods.includes("GET") ? [...methods, "HEAD"] : methods).join(", ");
  if (route.surface === "oauth") {
    const e = new OAuthError("invalid_request", `Use ${allow} for this endpoint.`);
    return json(405, { error: e.code, error_description: e.description }, { allow, ...NO_STORE });
  }
  return json(405, { error: ApiErrorCode.methodNotAllowed, message: `Use ${allow} for this endpoint.` }, { allow });
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

/** Routes one request; every failure becomes the route's documented error shape. */
async function dispatch(ctx: Context, request: Request, info: ClientInfo | undefined): Promise<PlainResponse> {
  let surface: "oauth" | "api" = "api";
  try {
    let path = pathOf(request.url);
    if (ctx.basePath && path === `${METADATA_PATH}${ctx.basePath}`) {
      // RFC 8414 §3.1: for an issuer with a path, the metadata lives at /.well-known/...{path}.
      path = METADATA_PATH;
    } else if (ctx.basePath) {
      if (path !== ctx.basePath && !path.startsWith(ctx.basePath + "/")) {
        throw new ApiError(404, ApiErrorCode.notFound, "Not found.");
      }
      path = path.slice(ctx.basePath.length);
    }
    if (ctx.console && (path === "/console" || path.startsWith("/console/"))) {
      const clientIp = resolveClientIp(ctx.trustedProxy, info?.clientIp, request.headers.get("x-forwarded-for"));
      return await consoleHandler(ctx, request, new URL(request.url), path, clientIp);
    }
    const route = ROUTES[path];
    if (!route) throw new ApiError(404, ApiErrorCode.notFound, "Not found.");
    surface = route.surface;
    const handler = route.methods[request.method === "HEAD" ? "GET" : request.method];
    if (!handler) return methodNotAllowed(route);
    const clientIp = resolveClientIp(ctx.trustedProxy, info?.clientIp, request.headers.get("x-forwarded-for"));
    return await handler(ctx, urlsFor(ctx, request), request, clientIp);
  } catch (error) {
    return errorResponse(error, surface, ctx.logger);
  }
}

/**
 * Creates a plantgate app: a `fetch(request)` handler for the token endpoint, the plant store,
 * the account listing, the JWKS and the RFC 8414 metadata, over the storage you pass.
 *
 * @example
 * import { createPlantgate } from "@plantgate/core";
 * const app = createPlantgate({ issuer: "https://auth.example.com" });
 * const { clientSecret } = await app.admin.createClient({ clientId: "reporting" });
 * const res = await app.fetch(new Request("https://auth.example.com/.well-known/jwks.json"));
 */
export function createPlantgate(options: PlantgateOptions = {}): Plantgate {
  const ctx = resolveOptions(options);
  const handle = async (request: Request, info?: ClientInfo): Promise<PlainResponse> => {
    const response = await dispatch(ctx, request, info);
    return request.method === "HEAD" ? { ...response, body: null } : response;
  };
  return {
    admin: createAdmin(ctx),
    storage: ctx.storage,
    jwks: () => ctx.keyring.jwks(),
    async fetch(request, info) {
      const answer = await dispatch(ctx, request, info);
      // RFC 9110 §9.3.2: HEAD is GET without the content, errors included.
      try {
        return toResponse(answer, request.method === "HEAD");
      } catch (error) {
        // A header the Response constructor refuses: still a documented answer, never a throw.
        return toResponse(errorResponse(error, "api", ctx.logger), request.method === "HEAD");
      }
    },
    handle,
    [HANDLE_PLAIN]: handle,
  };
}
