/** Helpers for the management-console tests: requests with cookie, CSRF token and origin. */
import { createMemoryStorage, sha256, type Plantgate, type PlantgateOptions, type Storage } from "../src/index.js";
import { BASE, harness, type Harness } from "./helpers.js";

export const CONSOLE = `${BASE}/console`;
export const ADMIN = { username: "root", password: "root-password-1" } as const;
export const NO_STORE_HEADERS = { "cache-control": "no-store", pragma: "no-cache" } as const;

export interface ConsoleHarness extends Harness {
  /** Account ids whose admin role is withheld by the storage wrapper (as if removed in the database). */
  demoted: Set<string>;
  storage: Storage;
  adminId: string;
}

/**
 * A harness with the console on and an admin `root`. The storage is the memory store with one
 * twist a real deployment can have: an account's roles can change underneath a live session
 * (an operator editing the database), which the Admin API cannot do; `demoted` does it.
 */
export async function consoleHarness(options: PlantgateOptions = {}): Promise<ConsoleHarness> {
  const memory = createMemoryStorage();
  const demoted = new Set<string>();
  const storage: Storage = {
    ...memory,
    accounts: {
      ...memory.accounts,
      get: async (id) => {
        const a = await memory.accounts.get(id);
        return a && demoted.has(id) ? { ...a, roles: a.roles.filter((r) => r !== "admin") } : a;
      },
    },
  };
  const h = await harness({ storage, console: { enabled: true }, ...options });
  const admin = await h.app.admin.createAccount({ ...ADMIN, roles: ["admin"], displayName: "Root" });
  return { ...h, demoted, storage, adminId: admin.id };
}

export interface CallOptions {
  body?: unknown;
  /** Raw body text (wins over `body`). */
  raw?: string;
  cookie?: string | null;
  csrf?: string | null;
  origin?: string | null;
  fetchSite?: string | null;
  contentType?: string | null;
  clientIp?: string;
  base?: string;
}

/** One console request; by default a same-origin browser call (Origin + Sec-Fetch-Site: same-origin). */
export function call(app: Plantgate, method: string, path: string, o: CallOptions = {}): Promise<Response> {
  const base = o.base ?? BASE;
  const headers = new Headers();
  const origin = o.origin === undefined ? new URL(base).origin : o.origin;
  if (origin !== null && method !== "GET" && method !== "HEAD") headers.set("origin", origin);
  const site = o.fetchSite === undefined ? "same-origin" : o.fetchSite;
  if (site !== null) headers.set("sec-fetch-site", site);
  if (o.cookie) headers.set("cookie", o.cookie);
  if (o.csrf) headers.set("x-csrf-token", o.csrf);
  let body: string | undefined;
  if (o.raw !== undefined) body = o.raw;
  else if (o.body !== undefined) body = JSON.stringify(o.body);
  const ct = o.contentType === undefined ? (body !== undefined ? "application/json" : null) : o.contentType;
  if (ct !== null) headers.set("content-type", ct);
  return app.fetch(new Request(`${base}/console${path}`, { method, headers, body }), o.clientIp !== undefined ? { clientIp: o.clientIp } : undefined);
}

export interface SignedIn {
  /** `plantgate_console=<id>` for the Cookie header. */
  cookie: string;
  sessionId: string;
  csrf: string;
  setCookie: string;
  body: Record<string, unknown>;
}

/** Signs in through the API; throws unless it succeeds. */
export async function signIn(app: Plantgate, username: string = ADMIN.username, password: string = ADMIN.password, o: CallOptions = {}): Promise<SignedIn> {
  const res = await call(app, "POST", "/api/session", { body: { username, password }, ...o });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
  const setCookie = res.headers.get("set-cookie")!;
  const sessionId = /^plantgate_console=([^;]*);/.exec(setCookie)![1]!;
  const body = (await res.json()) as Record<string, unknown>;
  return { cookie: `plantgate_console=${sessionId}`, sessionId, csrf: body.csrfToken as string, setCookie, body };
}

/** Status, the headers that matter and the parsed body (null for an empty body). */
export async function read(res: Response) {
  const text = await res.text();
  return {
    status: res.status,
    body: text === "" ? null : (JSON.parse(text) as unknown),
    cacheControl: res.headers.get("cache-control"),
    setCookie: res.headers.get("set-cookie"),
    contentType: res.headers.get("content-type"),
  };
}

export const hashOf = sha256;
