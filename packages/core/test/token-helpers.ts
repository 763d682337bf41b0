/**
 * Helpers for the token-endpoint suites (token-*.test.ts). Kept apart from helpers.ts, which other
 * suites share, so nothing here can change their behaviour.
 */
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet, type JWTPayload } from "jose";
import { expect } from "vitest";
import { BASE, basic, type Harness } from "./helpers.js";
import type { Plantgate } from "../src/index.js";

export const TOKEN_URL = `${BASE}/UserService/connect/token`;
export const FORM = "application/x-www-form-urlencoded";

/** The www-authenticate value of a 401 invalid_client (RFC 6749 §5.2). */
export const BASIC_CHALLENGE = 'Basic realm="plantgate", charset="UTF-8"';

/** RFC 6749 §5.2: error_description is limited to %x20-21 / %x23-5B / %x5D-7E. */
export const ERROR_DESCRIPTION_CHARS = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A successful token response body (RFC 6749 §5.1). */
export interface TokenBody {
  access_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
  refresh_token?: string;
}

/**
 * application/x-www-form-urlencoded encoding of one component (the WHATWG serializer: everything but
 * ALPHA / DIGIT / "*-._" is percent-encoded as UTF-8, space becomes "+"), as RFC 6749 App. B asks.
 */
export function formEncode(value: string): string {
  return new URLSearchParams([["", value]]).toString().slice(1);
}

/** `Authorization: Basic` with the RFC 6749 §2.3.1 / App. B encoding of id and secret. */
export function basicAppB(id: string, secret: string): string {
  return "Basic " + btoa(`${formEncode(id)}:${formEncode(secret)}`);
}

/** POST to the token endpoint with an arbitrary content type and raw body. */
export function rawTokenRequest(app: Plantgate, body: string | Uint8Array, headers: Record<string, string> = {}) {
  return app.fetch(new Request(TOKEN_URL, { method: "POST", headers, body: body as BodyInit }));
}

/** Authorization header of the harness client. */
export const auth = (h: Harness) => ({ authorization: basic(h.clientId, h.clientSecret) });

/** Asserts the headers every token-endpoint response carries (RFC 6749 §5.1, §5.2). */
export function expectTokenHeaders(res: Response): void {
  expect(res.headers.get("content-type")).toMatch(/^application\/json(?:;|$)/);
  expect(res.headers.get("cache-control")).toBe("no-store");
  expect(res.headers.get("pragma")).toBe("no-cache");
}

/**
 * Asserts a whole RFC 6749 §5.2 error response: status, the no-store headers, the Basic challenge
 * exactly on 401 (and never otherwise), the full body, and the §5.2 description charset.
 * Returns the raw body text.
 */
export async function expectTokenError(
  res: Response,
  status: number,
  body: { error: string; error_description: string },
): Promise<string> {
  const text = await res.text();
  const actual = JSON.parse(text) as { error_description?: unknown };
  expect({ status: res.status, body: actual }).toEqual({ status, body });
  expectTokenHeaders(res);
  if (status === 401) expect(res.headers.get("www-authenticate")).toBe(BASIC_CHALLENGE);
  else expect(res.headers.get("www-authenticate")).toBeNull();
  expect(actual.error_description).toMatch(ERROR_DESCRIPTION_CHARS);
  return text;
}

/** Asserts a 200 token response with the no-store headers and returns its body. */
export async function expectTokenSuccess(res: Response): Promise<TokenBody> {
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expectTokenHeaders(res);
  expect(res.headers.get("www-authenticate")).toBeNull();
  return JSON.parse(text) as TokenBody;
}

/** The public JWK Set, fetched from the app itself. */
export async function fetchJwks(app: Plantgate): Promise<JSONWebKeySet> {
  const res = await app.fetch(new Request(`${BASE}/.well-known/jwks.json`));
  expect(res.status).toBe(200);
  return (await res.json()) as JSONWebKeySet;
}

/**
 * Verifies an access token as a resource server would (RFC 9068 §4): signature against the served
 * JWKS, ES256 only, typ at+jwt, issuer and audience, at the harness clock's time.
 */
export async function verifyAt(h: Harness, token: string, expected: { issuer?: string; audience?: string } = {}) {
  const jwks = await fetchJwks(h.app);
  const header = decodeProtectedHeader(token);
  const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks), {
    algorithms: ["ES256"],
    typ: "at+jwt",
    issuer: expected.issuer ?? BASE,
    audience: expected.audience ?? BASE,
    currentDate: new Date(h.clock.now()),
  });
  expect(protectedHeader).toEqual(header);
  return { header: protectedHeader, payload: payload as JWTPayload & { client_id: string; scope: string }, jwks };
}

/** A password grant for the harness user, as a raw Response. */
export function passwordRequest(h: Harness, extra: Record<string, string> = {}, headers: Record<string, string> = auth(h)) {
  return rawTokenRequest(
    h.app,
    new URLSearchParams({ grant_type: "password", username: h.username, password: h.password, ...extra }).toString(),
    { "content-type": FORM, ...headers },
  );
}

/** A password grant from the client address `ip`, as a raw Response (a wrong password unless given). */
export function passwordGrantFrom(app: Plantgate, h: Harness, username: string, ip: string, password = "wrong-password", headers: Record<string, string> = auth(h)) {
  return app.fetch(
    new Request(TOKEN_URL, {
      method: "POST",
      headers: { "content-type": FORM, ...headers },
      body: new URLSearchParams({ grant_type: "password", username, password }).toString(),
    }),
    { clientIp: ip },
  );
}

/** A refresh_token grant as a raw Response. */
export function refreshRequest(h: Harness, refreshToken: string, extra: Record<string, string> = {}, headers: Record<string, string> = auth(h)) {
  return rawTokenRequest(h.app, new URLSearchParams({ grant_type: "refresh_token", refresh_token: refreshToken, ...extra }).toString(), {
    "content-type": FORM,
    ...headers,
  });
}

/** A refresh token from a fresh password grant with offline_access. */
export async function freshRefreshToken(h: Harness, scope = "Platform_UserAPIs offline_access"): Promise<string> {
  const body = await expectTokenSuccess(await passwordRequest(h, { scope }));
  expect(body.refresh_token).toEqual(expect.any(String));
  return body.refresh_token!;
}

/** The invalid_grant body of every rejected refresh token (one message for every cause). */
export const INVALID_REFRESH = { error: "invalid_grant", error_description: "The refresh token is invalid, expired or revoked." };

export const DAY = 24 * 3600 * 1000;
