/**
 * Helpers for the API-surface tests (bearer, plants, accounts, routes). Kept apart from helpers.ts,
 * which the token-endpoint tests share, so neither file's edits can disturb the other.
 */
import { base64url, importJWK, SignJWT, type JWTPayload } from "jose";
import type { Plantgate } from "../src/index.js";
import { BASE } from "./helpers.js";

export const PLANTS_URL = `${BASE}/plants`;
export const ACCOUNTS_URL = `${BASE}/rbac/ServerCommand/GetAccountList`;

/** POSTs a body to /plants; `token: null` sends no Authorization header, `contentType: null` no Content-Type. */
export function postPlant(
  app: Plantgate,
  body: BodyInit,
  opts: { token?: string | null; authorization?: string; contentType?: string | null; url?: string } = {},
): Promise<Response> {
  const headers = new Headers();
  const auth = opts.authorization ?? (opts.token ? `Bearer ${opts.token}` : undefined);
  if (auth !== undefined) headers.set("authorization", auth);
  const ct = opts.contentType === undefined ? "application/json" : opts.contentType;
  if (ct !== null) headers.set("content-type", ct);
  const init: RequestInit & { duplex?: "half" } = { method: "POST", headers, body };
  if (body instanceof ReadableStream) init.duplex = "half";
  return app.fetch(new Request(opts.url ?? PLANTS_URL, init));
}

/** GETs the account list with a raw query string (without the leading `?`). */
export function getAccounts(app: Plantgate, token: string | null, query = "", url = ACCOUNTS_URL): Promise<Response> {
  const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  return app.fetch(new Request(query === "" ? url : `${url}?${query}`, { headers }));
}

/** Status, the headers tests look at, the raw text and (when it parses) the JSON body. */
export async function read(res: Response) {
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return {
    status: res.status,
    contentType: res.headers.get("content-type"),
    wwwAuthenticate: res.headers.get("www-authenticate"),
    text,
    body,
  };
}

const dec = new TextDecoder();
const enc = new TextEncoder();

/** The three parts of a compact JWS, with header and payload decoded. */
export function splitJwt(token: string) {
  const [h, p, s] = token.split(".") as [string, string, string];
  return {
    header: JSON.parse(dec.decode(base64url.decode(h))) as Record<string, unknown>,
    payload: JSON.parse(dec.decode(base64url.decode(p))) as JWTPayload & Record<string, unknown>,
    encodedHeader: h,
    encodedPayload: p,
    signature: s,
  };
}

export const b64url = (value: unknown) => base64url.encode(enc.encode(JSON.stringify(value)));

/**
 * The app's own signing key, read through the public `app.storage` (what any storage backend holds).
 * Lets a test sign tokens that differ from real ones in exactly one respect (typ, a claim).
 */
export async function ourSigningKey(app: Plantgate) {
  await app.jwks(); // make sure a key exists
  const [record] = await app.storage.signingKeys.list();
  if (!record) throw new Error("no signing key");
  return { kid: record.kid, alg: record.alg, key: await importJWK(JSON.parse(record.privateJwk), record.alg) };
}

/** Signs `payload` with the app's own key and the given protected header (alg and kid filled in). */
export async function signWithOurKey(app: Plantgate, payload: JWTPayload, header: Record<string, unknown> = { typ: "at+jwt" }) {
  const { kid, alg, key } = await ourSigningKey(app);
  return new SignJWT(payload).setProtectedHeader({ alg, kid, ...header }).sign(key);
}
