import type { IncomingMessage } from "node:http";

/** The request headers in wire order, combined per Fetch rules. */
export function headersFromRaw(raw: readonly string[]): Headers {
  const headers = new Headers();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    // HTTP/2 compatibility objects list pseudo-headers (":path"), which are
    // not header names and would make Headers throw.
    if (name.startsWith(":")) continue;
    headers.append(name, raw[i + 1] as string);
  }
  return headers;
}

/** Whether something else already read from `incoming` (its body is then gone). */
export function isConsumed(incoming: IncomingMessage): boolean {
  // readableDidRead is set as soon as anyone reads or attaches 'data'; handing
  // over the remainder of a partly read body would corrupt it silently.
  return incoming.readableEnded || incoming.readableDidRead || incoming.destroyed;
}

/** An absolute-form target whose authority holds an `@` (userinfo, empty or not). */
const USERINFO = /^https?:\/\/[^/?#]*@/i;

/** The request target split for the URL. */
export interface Target {
  /** Path and query, always starting with "/". */
  path: string;
  /** Host from an absolute-form target (proxy-style requests). */
  authority?: string;
  /** Whether an absolute-form target names `https` (else `http`); undefined for the origin form. */
  secure?: boolean;
}

/** Splits an origin-form or absolute-form request target; throws TypeError for anything else (`OPTIONS *`, userinfo). */
export function parseTarget(target: string): Target {
  if (target.startsWith("/")) return { path: target };
  if (/^https?:\/\//i.test(target)) {
    // RFC 9110 §4.2.4: userinfo in an http(s) URI received is an error. Refused as in a Host value
    // (until 2026-11-30 the URL parser dropped it and the host after it was served).
    if (USERINFO.test(target)) throw new TypeError("Unsupported request target.");
    const url = new URL(target);
    return { path: `${url.pathname}${url.search}`, authority: url.host, secure: url.protocol === "https:" };
  }
  throw new TypeError("Unsupported request target.");
}
