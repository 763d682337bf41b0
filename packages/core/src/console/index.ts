import { ApiError, ApiErrorCode } from "../errors/index.js";
import { errorResponse, json, plain, type PlainResponse } from "../http/respond.js";
import type { Context } from "../context.js";
import * as api from "./api.js";
import type { ConsoleRequest } from "./request.js";
import { CONSOLE_CSS } from "./assets/console-css.js";
import { CONSOLE_JS } from "./assets/console-js.js";
import { consolePage } from "./assets/console-html.js";
import { FAVICON_SVG } from "./assets/favicon-svg.js";
import { checkCsrf, checkOrigin, clearedCookie, isStateChanging, requireSession } from "./session.js";
import { signIn } from "./sign-in.js";

/** What a console route does: a signed-in API call, the sign-in itself, or a static asset. */
type Action =
  | { kind: "api"; handler: api.ApiHandler; clearsCookie?: boolean }
  | { kind: "sign-in" }
  | { kind: "asset"; type: string; body: (ctx: Context) => string };

interface ConsoleRoute {
  /** Path segments after `/console`; `:` marks a parameter. */
  pattern: string[];
  methods: Record<string, Action>;
}

const page: Action = { kind: "asset", type: "text/html; charset=utf-8", body: (ctx) => consolePage(ctx.basePath) };

const ROUTES: ConsoleRoute[] = [
  { pattern: [], methods: { GET: page } },
  { pattern: [""], methods: { GET: page } },
  { pattern: ["assets", "console.js"], methods: { GET: { kind: "asset", type: "text/javascript; charset=utf-8", body: () => CONSOLE_JS } } },
  { pattern: ["assets", "console.css"], methods: { GET: { kind: "asset", type: "text/css; charset=utf-8", body: () => CONSOLE_CSS } } },
  { pattern: ["assets", "favicon.svg"], methods: { GET: { kind: "asset", type: "image/svg+xml", body: () => FAVICON_SVG } } },
  { pattern: ["api", "session"], methods: { GET: { kind: "api", handler: api.getSession }, POST: { kind: "sign-in" } } },
  { pattern: ["api", "session", "sign-out"], methods: { POST: { kind: "api", handler: api.signOut, clearsCookie: true } } },
  { pattern: ["api", "clients"], methods: { GET: { kind: "api", handler: api.listClients }, POST: { kind: "api", handler: api.createClient } } },
  { pattern: ["api", "clients", ":"], methods: { DELETE: { kind: "api", handler: api.deleteClient } } },
  { pattern: ["api", "clients", ":", "secret"], methods: { POST: { kind: "api", handler: api.regenerateSecret } } },
  { pattern: ["api", "accounts"], methods: { GET: { kind: "api", handler: api.getAccounts }, POST: { kind: "api", handler: api.createAccount } } },
  { pattern: ["api", "accounts", ":", "disable"], methods: { POST: { kind: "api", handler: api.disableAccount } } },
  { pattern: ["api", "accounts", ":", "enable"], methods: { POST: { kind: "api", handler: api.enableAccount } } },
  { pattern: ["api", "signing-keys"], methods: { GET: { kind: "api", handler: api.listSigningKeys }, POST: { kind: "api", handler: api.rotateSigningKey } } },
];

/**
 * No inline script or style anywhere, nothing from another origin, no framing: the page's own
 * script and stylesheet are all it may load.
 */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/** Headers on every console response: nothing here may be cached or framed. */
const COMMON_HEADERS: Record<string, string> = {
  "cache-control": "no-store",
  pragma: "no-cache",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

function match(segments: string[]): { route: ConsoleRoute; params: string[] } | null {
  for (const route of ROUTES) {
    if (route.pattern.length !== segments.length) continue;
    const params: string[] = [];
    let ok = true;
    for (const [i, p] of route.pattern.entries()) {
      if (p === ":") {
        if (segments[i] === "") ok = false;
        else params.push(segments[i]!);
      } else if (p !== segments[i]) ok = false;
      if (!ok) break;
    }
    if (ok) return { route, params };
  }
  return null;
}

/**
 * The route of a console path (`/console` or `/console/...`); segments are percent-decoded one by
 * one so a client id containing `/` (sent as %2F) stays one segment. Null when there is none.
 */
function find(path: string): { route: ConsoleRoute; params: string[] } | null {
  const rest = path.slice("/console".length);
  let segments: string[];
  try {
    segments = rest === "" ? [] : rest.slice(1).split("/").map(decodeURIComponent);
  } catch {
    return null;
  }
  return match(segments);
}

/** Whether the console answers a path (`/console` or `/console/...`) with anything but its 404. */
export function consoleOwns(path: string): boolean {
  return find(path) !== null;
}

async function run(ctx: Context, request: ConsoleRequest): Promise<PlainResponse> {
  const found = find(request.path);
  if (!found) throw new ApiError(404, ApiErrorCode.notFound, "Not found.");
  const method = request.method;
  // Own properties only: a method named `constructor` or `__proto__` must not reach Object.prototype.
  const action = Object.hasOwn(found.route.methods, method) ? found.route.methods[method] : undefined;
  if (!action) {
    const methods = Object.keys(found.route.methods);
    const allow = (methods.includes("GET") ? [...methods, "HEAD"] : methods).join(", ");
    return json(405, { error: ApiErrorCode.methodNotAllowed, message: `Use ${allow} for this endpoint.` }, { allow });
  }
  if (action.kind === "asset") {
    const headers: Record<string, string> = { "content-type": action.type };
    if (action.type.startsWith("text/html")) headers["content-security-policy"] = CSP;
    return plain(200, action.body(ctx), headers);
  }
  const changing = isStateChanging(method);
  if (changing) checkOrigin(ctx, request);
  if (action.kind === "sign-in") return signIn(ctx, request);
  let session;
  try {
    session = await requireSession(ctx, request);
  } catch (e) {
    // A session that is gone should not linger in the browser either.
    if (e instanceof ApiError && e.code === ApiErrorCode.consoleNotSignedIn && request.cookie !== null) {
      throw new ApiError(e.status, e.code, e.message, { "set-cookie": clearedCookie(ctx, request.url) });
    }
    throw e;
  }
  if (changing) await checkCsrf(session, request);
  const response = await action.handler(ctx, session, request, found.params);
  if (action.clearsCookie) response.headers["set-cookie"] = clearedCookie(ctx, request.url);
  return response;
}

/**
 * Serves the management console under `{basePath}/console`: the web page, its script and
 * stylesheet, and the admin JSON API under `/console/api`. Every response is `no-store`;
 * errors have the API's `{error, message}` shape.
 */
export async function consoleHandler(ctx: Context, request: ConsoleRequest): Promise<PlainResponse> {
  let response: PlainResponse;
  try {
    response = await run(ctx, request);
  } catch (error) {
    response = errorResponse(error, "api", ctx.logger);
  }
  for (const [k, v] of Object.entries(COMMON_HEADERS)) response.headers[k] = v;
  return response;
}
