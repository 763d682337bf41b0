import type { JsonValue } from "../util/json.js";

/**
 * One console request as the console sees it: plain values taken from the HTTP request by the
 * dispatcher (`app.ts`), and a reader for the JSON body (media type checked, size capped).
 */
export interface ConsoleRequest {
  /** `HEAD` already counts as `GET`. */
  method: string;
  url: URL;
  /** The path after the base path: `/console` or `/console/...`. */
  path: string;
  /** The Cookie, Origin, Sec-Fetch-Site and X-CSRF-Token headers; null when absent. */
  cookie: string | null;
  origin: string | null;
  fetchSite: string | null;
  csrfToken: string | null;
  /** The client's address as resolved through `trustedProxies`, for the sign-in throttle. */
  clientIp: string | undefined;
  /** Whether the request says it has a body (a Content-Type, or a Content-Length other than 0). */
  hasBody: boolean;
  /** Reads the body as JSON (the console's media type policy, the app's size limit). */
  readJson(): Promise<JsonValue>;
}
