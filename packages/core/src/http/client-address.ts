import type { Context } from "../context.js";
import { resolveClientIp, UNIX_SOCKET_PEER } from "../security/client-ip.js";
import type { HandleInfo } from "./handle-info.js";

/** Apps already warned that a request came with no client address. */
const warned = new WeakSet<Context>();

/**
 * The client address of one request (see {@link resolveClientIp}): the adapter's `clientIp`, or
 * behind a trusted proxy the address its `X-Forwarded-For` vouches for. Without one, the request
 * shares the per-address brute-force budgets (client authentication's across client ids, console
 * sign-in's across usernames) with every other request without one, so anyone sending wrong
 * client ids locks every client out for the window: the first such request of an app (with the
 * brute-force defence on) is a warn line naming the cause and the fix. Until 2026-12-03 nothing
 * said so. Not for a request whose client has gone (its signal aborted): a Node peer that
 * disconnected before the adapter read its address has none, however well the adapter is wired.
 * On a request with an address, one comparison; without one, a set lookup.
 */
export function requestClientIp(ctx: Context, request: Request, info: HandleInfo | undefined): string | undefined {
  const unixSocket = info?.unixSocket === true;
  const ip = clientAddressOf(ctx, request, info);
  if (ip === undefined && ctx.throttle.windowMs > 0 && !warned.has(ctx) && !request.signal.aborted) {
    warned.add(ctx);
    const [why, fix] = !unixSocket
      ? [
          "the adapter passed no clientIp; on Cloudflare Workers, the request had no IP address in CF-Connecting-IP",
          "pass the peer's address as clientIp (README, Embedding); on Cloudflare Workers only requests through Cloudflare's edge carry one (a service binding's or a test's do not)",
        ]
      : !ctx.trustedProxy(UNIX_SOCKET_PEER, 0)
        ? [
            'over a Unix socket, and trustedProxies neither lists "unix" nor is a hop count, so its X-Forwarded-For is not believed',
            'list "unix" in trustedProxies if the proxy in front sets X-Forwarded-For (README, Client IP behind proxies)',
          ]
        : ["over a trusted Unix socket, with no X-Forwarded-For or a malformed last entry", "have the proxy in front set X-Forwarded-For (README, Client IP behind proxies)"];
    ctx.logger.warn(
      `plantgate: a request came with no client address (${why}), so it shares one client-authentication budget (across client ids) and one console sign-in budget (across usernames) with every other request without one, and the per-address lock-outs cannot tell such callers apart: anyone sending wrong client ids locks every client out of client authentication until the window ends; ${fix}. Said once.`,
    );
  }
  return ip;
}

/** The client address of one request as {@link requestClientIp} finds it, without its warning (a span's `client.address`). */
export function clientAddressOf(ctx: Context, request: Request, info: HandleInfo | undefined): string | undefined {
  return resolveClientIp(ctx.trustedProxy, info?.clientIp, request.headers.get("x-forwarded-for"), info?.unixSocket === true);
}
