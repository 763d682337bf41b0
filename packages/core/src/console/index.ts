import { ApiError, ApiErrorCode } from "../errors/index.js";
import { errorResponse, json, type PlainResponse } from "../http/respond.js";
import type { Context } from "../context.js";
import type { ServedPage } from "../pages/static-page.js";
import * as api from "./api.js";
import { listEvents } from "./events.js";
import type { ConsoleRequest } from "./request.js";
import { SCRUBBED } from "../telemetry/request.js";
import { checkCsrf, checkOrigin, clearedCookie, isStateChanging, requireSession, slideExpiry } from "./session.js";
import { signIn } from "./sign-in.js";

/** What a console API route does: a signed-in API call, or the sign-in itself. */
type Action = { kind: "api"; handler: api.ApiHandler; clearsCookie?: boolean } | { kind: "sign-in" };

interface ConsoleRoute {
  /** Path segments after `/console`; `:` marks a parameter. */
  pattern: string[];
  methods: Record<string, Action>;
}

const ROUTES: ConsoleRoute[] = [
  { pattern: ["api", "session"], methods: { GET: { kind: "api", handler: api.getSession }, POST: { kind: "sign-in" } } },
  { pattern: ["api", "session", "sign-out"], methods: { POST: { kind: "api", handler: api.signOut, clearsCookie: true } } },
  { pattern: ["api", "session", "sign-out-everywhere"], methods: { POST: { kind: "api", handler: api.signOutEverywhere, clearsCookie: true } } },
  { pattern: ["api", "clients"], methods: { GET: { kind: "api", handler: api.listClients }, POST: { kind: "api", handler: api.createClient } } },
  { pattern: ["api", "clients", ":"], methods: { DELETE: { kind: "api", handler: api.deleteClient } } },
  { pattern: ["api", "clients", ":", "secret"], methods: { POST: { kind: "api", handler: api.regenerateSecret } } },
  { pattern: ["api", "clients", ":", "secrets"], methods: { POST: { kind: "api", handler: api.addSecret } } },
  { pattern: ["api", "clients", ":", "secrets", ":"], methods: { DELETE: { kind: "api", handler: api.revokeSecret } } },
  { pattern: ["api", "accounts"], methods: { GET: { kind: "api", handler: api.getAccounts }, POST: { kind: "api", handler: api.createAccount } } },
  { pattern: ["api", "accounts", ":", "disable"], methods: { POST: { kind: "api", handler: api.disableAccount } } },
  { pattern: ["api", "accounts", ":", "enable"], methods: { POST: { kind: "api", handler: api.enableAccount } } },
  { pattern: ["api", "events"], methods: { GET: { kind: "api", handler: listEvents } } },
  {
    pattern: ["api", "signing-keys"],
    methods: {
      GET: { kind: "api", handler: api.listSigningKeys },
      POST: { kind: "api", handler: api.rotateSigningKey },
      // ?kid=: any kid, those a path segment cannot carry ("", ".", "..") included.
      DELETE: { kind: "api", handler: api.revokeSigningKeyByQuery },
    },
  },
  // Both fit /signing-keys/reencrypt: POST is the action, DELETE revokes a key named reencrypt
  // (a configured key is stored under its own kid, any string). Until 2026-11-30 the first route
  // took the path whole and such a key could not be revoked from the console.
  { pattern: ["api", "signing-keys", "reencrypt"], methods: { POST: { kind: "api", handler: api.reencryptSigningKeys } } },
  { pattern: ["api", "signing-keys", ":"], methods: { DELETE: { kind: "api", handler: api.revokeSigningKey } } },
];

/** Headers on every console response: nothing here may be cached or framed. */
const COMMON_HEADERS: Record<string, string> = {
  "cache-control": "no-store",
  pragma: "no-cache",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

/**
 * The routes a path fits, in table order, each with its parameters. A literal segment and a
 * parameter can both fit one path: the request's method picks among them (see {@link choose}).
 */
function matches(segments: string[]): { route: ConsoleRoute; params: string[] }[] {
  const found: { route: ConsoleRoute; params: string[] }[] = [];
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
    if (ok) found.push({ route, params });
  }
  return found;
}

/**
 * The first fitting route that has the method, with its action; else the methods of every
 * fitting route, for the 405's Allow.
 */
function choose(found: { route: ConsoleRoute; params: string[] }[], method: string): { action: Action; params: string[] } | { allow: string[] } {
  for (const { route, params } of found) {
    // Own properties only: a method named `constructor` or `__proto__` must not reach Object.prototype.
    if (Object.hasOwn(route.methods, method)) return { action: route.methods[method]!, params };
  }
  return { allow: [...new Set(found.flatMap(({ route }) => Object.keys(route.methods)))] };
}

function methodNotAllowed(methods: string[]): PlainResponse {
  const allow = (methods.includes("GET") ? [...methods, "HEAD"] : methods).join(", ");
  return json(405, { error: ApiErrorCode.methodNotAllowed, message: `Use ${allow} for this endpoint.` }, { allow });
}

/**
 * The segments of a console path (`/console` or `/console/...`), percent-decoded one by one so a
 * client id containing `/` (sent as %2F) stays one segment; null when one does not decode.
 */
function segmentsOf(path: string): string[] | null {
  const rest = path.slice("/console".length);
  try {
    return rest === "" ? [] : rest.slice(1).split("/").map(decodeURIComponent);
  } catch {
    return null;
  }
}

/**
 * The page's own paths, when a page was given (`console.page`): the document at `/console` and
 * `/console/`, its files at `/console/assets/{name}`. Without a page they are the usual 404.
 */
function pageFile(page: ServedPage | null, segments: string[]): PlainResponse | null {
  if (!page) return null;
  if (segments.length === 0 || (segments.length === 1 && segments[0] === "")) return page.document();
  if (segments.length === 2 && segments[0] === "assets") return page.asset(segments[1]!);
  return null;
}

/**
 * A console path (`/console` or `/console/...`) as a span's `url.path` may carry it: the path itself
 * when every segment is the console's own fixed text (a route's literal segments, the page's
 * document and its known assets), a route's parameters (client ids, secret ids, usernames, kids)
 * replaced by `REDACTED`, and null when no route or file fits (the caller then uses the mount's
 * template). A parameter is whatever the request put there: an id that names nothing may be a
 * secret sent to the wrong place, and the span is made before any look-up could tell (the audit
 * events name only ids that exist, for the same reason).
 */
export function consoleSpanPath(page: ServedPage | null, path: string): string | null {
  const segments = segmentsOf(path);
  if (segments === null) return null;
  if (page && (segments.length === 0 || (segments.length === 1 && segments[0] === ""))) return path;
  if (page && segments.length === 2 && segments[0] === "assets" && Object.hasOwn(page.assetTypes, segments[1]!)) return path;
  const [first] = matches(segments);
  if (!first) return null;
  if (!first.route.pattern.includes(":")) return path;
  const raw = path.slice("/console/".length).split("/");
  return `/console/${first.route.pattern.map((p, i) => (p === ":" ? SCRUBBED : raw[i])).join("/")}`;
}

/** Whether the console (with this page, or none) answers a path (`/console` or `/console/...`) with anything but its 404. */
export function consoleOwns(page: ServedPage | null, path: string): boolean {
  const segments = segmentsOf(path);
  return segments !== null && (pageFile(page, segments) !== null || matches(segments).length > 0);
}

async function run(ctx: Context, request: ConsoleRequest): Promise<PlainResponse> {
  const segments = segmentsOf(request.path);
  if (!segments) throw new ApiError(404, ApiErrorCode.notFound, "Not found.");
  const method = request.method;
  const file = pageFile(ctx.console!.page, segments);
  if (file) return method === "GET" ? file : methodNotAllowed(["GET"]);
  const found = matches(segments);
  if (found.length === 0) throw new ApiError(404, ApiErrorCode.notFound, "Not found.");
  const chosen = choose(found, method);
  if ("allow" in chosen) return methodNotAllowed(chosen.allow);
  const { action, params } = chosen;
  const changing = isStateChanging(method);
  if (changing) checkOrigin(ctx, request);
  if (action.kind === "sign-in") return signIn(ctx, request);
  let session;
  try {
    session = await requireSession(ctx, request);
  } catch (e) {
    // A session that is gone should not linger in the browser either: the 401 of an ended one, and
    // the 403 of an account that lost the admin role, which ended all its sessions (until
    // 2026-12-02 that answer left the dead cookie in the browser for its Max-Age).
    if (e instanceof ApiError && (e.code === ApiErrorCode.consoleNotSignedIn || e.code === ApiErrorCode.consoleNotAdmin) && request.cookie !== null) {
      throw new ApiError(e.status, e.code, e.message, { "set-cookie": clearedCookie(ctx, request.url) });
    }
    throw e;
  }
  if (changing) await checkCsrf(session, request);
  // The idle timeout's window starts again (sign-out, here or everywhere, ends the session instead).
  if (!action.clearsCookie) await slideExpiry(ctx, session);
  const response = await action.handler(ctx, session, request, params);
  if (action.clearsCookie) response.headers["set-cookie"] = clearedCookie(ctx, request.url);
  return response;
}

/**
 * Serves the management console under `{basePath}/console`: the admin JSON API under
 * `/console/api`, and the web page with its files when `console.page` was given. Every response
 * is `no-store`; errors have the API's `{error, message}` shape.
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
