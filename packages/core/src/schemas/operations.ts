/**
 * The API's operations: the one list the OpenAPI document (`api/openapi.ts`) is generated from.
 *
 * To describe a new route, add an {@link Operation} to {@link createOperations} (path relative to
 * the base path, as in `app.ts`'s ROUTES; lower-case method; `security`; `query` / `requestBody`
 * zod schemas; every status the route can answer, each with its body schema and the headers that
 * matter). Validate the request with the same zod schema the entry names, so the document cannot
 * drift from the handler. A schema that should be a named component (`#/components/schemas/X`)
 * goes into {@link COMPONENTS} too; any other schema is inlined. Error bodies are narrowed to the
 * codes a status can carry with `apiErrorBody([...])` / `oauthErrorBody([...])`.
 *
 * @example
 * // in createOperations(), for a hypothetical client-authenticated form endpoint:
 * {
 *   path: "/UserService/connect/example", method: "post", operationId: "example",
 *   summary: "One line", description: "What it does.", tags: ["OAuth 2.0"], security: { kind: "client" },
 *   requestBody: { contentType: FORM, schema: ExampleRequestSchema },
 *   responses: { "200": { description: "Done.", body: ExampleResponseSchema, headers: NO_STORE_HEADERS }, ...clientEndpointErrors() },
 * },
 */
import * as z from "zod/mini";
import { ApiErrorCode, type ApiErrorNumber, type OAuthErrorCode } from "../errors/index.js";
import type { ProtectedRoute } from "../context.js";
import { accountListQuery, AccountPageSchema, AccountViewSchema } from "./accounts.js";
import { ApiErrorBody, apiErrorBody, OAuthErrorBody, oauthErrorBody } from "./errors.js";
import {
  AuthorizationServerMetadataSchema,
  IntrospectionRequestSchema,
  IntrospectionResponseSchema,
  JwksSchema,
  RevocationRequestSchema,
  TokenRequestSchema,
  TokenResponseSchema,
} from "./oauth.js";
import { meta } from "./meta.js";
import { NewPlantSchema, PlantSchema } from "./plants.js";

export const JSON_TYPE = "application/json";
export const FORM = "application/x-www-form-urlencoded";

/** A response header worth describing. */
export interface ResponseHeader {
  description: string;
  schema: z.core.$ZodType;
  /** Always present on this response. */
  required?: boolean;
}

/** One status of an operation. */
export interface OperationResponse {
  description: string;
  /** The body's schema (output side); omitted = no body. */
  body?: z.core.$ZodType;
  /** Default `application/json`. */
  contentType?: string;
  /** Instead of `body`/`contentType`: one schema per media type. */
  content?: Record<string, z.core.$ZodType>;
  headers?: Record<string, ResponseHeader>;
}

/** How a caller authenticates to an operation. */
export type OperationSecurity =
  /** An access token; with `scopes`, any one of them is needed (none = any valid token). */
  | { kind: "bearer"; scopes: readonly string[] }
  /** OAuth client authentication: HTTP Basic, client_secret_post or private_key_jwt (both in the form body). */
  | { kind: "client" }
  | { kind: "none" };

/** One route and method of the API. */
export interface Operation {
  /** Relative to the base path, as in `app.ts`. */
  path: string;
  method: "get" | "post" | "put" | "patch" | "delete";
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security: OperationSecurity;
  /** Path parameters (`{name}` in `path`): each member of the object is one parameter. */
  pathParams?: z.ZodMiniObject;
  /** Query parameters: each member of the object is one parameter (output side: types, bounds, defaults). */
  query?: z.ZodMiniObject;
  requestBody?: { contentType: string; schema: z.core.$ZodType; description?: string };
  responses: Record<string, OperationResponse>;
}

/** Named schemas: `#/components/schemas/{name}`. `io` says which side of a transform is described. */
export const COMPONENTS: Record<string, { schema: z.core.$ZodType; io: "input" | "output" }> = {
  NewPlant: { schema: NewPlantSchema, io: "input" },
  Plant: { schema: PlantSchema, io: "output" },
  Account: { schema: AccountViewSchema, io: "output" },
  AccountPage: { schema: AccountPageSchema, io: "output" },
  TokenRequest: { schema: TokenRequestSchema, io: "input" },
  TokenResponse: { schema: TokenResponseSchema, io: "output" },
  RevocationRequest: { schema: RevocationRequestSchema, io: "input" },
  IntrospectionRequest: { schema: IntrospectionRequestSchema, io: "input" },
  IntrospectionResponse: { schema: IntrospectionResponseSchema, io: "output" },
  Error: { schema: ApiErrorBody, io: "output" },
  OAuthError: { schema: OAuthErrorBody, io: "output" },
  JsonWebKeySet: { schema: JwksSchema, io: "output" },
  AuthorizationServerMetadata: { schema: AuthorizationServerMetadataSchema, io: "output" },
};

/** What the document depends on besides code: the configuration. */
export interface OperationSettings {
  maxPageSize: number;
  defaultPageSize: number;
  requiredScopes: Record<ProtectedRoute, readonly string[]>;
  /** The API reference page's assets (file name -> media type); null when there is no page. */
  docsAssets: Readonly<Record<string, string>> | null;
}

const text = (description: string, examples: string[]) => meta(z.string(), { examples, description });

const NO_STORE_HEADERS: Record<string, ResponseHeader> = {
  "Cache-Control": { description: "Token responses are never cached (RFC 6749 §5.1).", schema: z.literal("no-store"), required: true },
  Pragma: { description: "For HTTP/1.0 caches (RFC 6749 §5.1).", schema: z.literal("no-cache"), required: true },
};
/** On every `{error, message}` error answer: no cache keeps it (a challenge, a 400 about one request, a 404). */
const ERROR_NO_STORE: Record<string, ResponseHeader> = {
  "Cache-Control": { description: "Error answers are never cached.", schema: z.literal("no-store"), required: true },
};
const RETRY_AFTER: ResponseHeader = { description: "Seconds to wait before retrying.", schema: z.string().check(z.regex(/^\d+$/)), required: true };
const BEARER_CHALLENGE: ResponseHeader = {
  description: "RFC 6750 §3: `Bearer realm=\"plantgate\"`, with `error=\"invalid_token\"` when a token was sent and `error=\"invalid_request\"` when the header names the Bearer scheme without being `Bearer <token>`.",
  schema: text("The challenge.", ['Bearer realm="plantgate", error="invalid_token", error_description="The access token is invalid or expired."']),
  required: true,
};

/**
 * 401 / 403 / 500 / 503 of an API route behind a bearer token; the 403 only when the route needs a
 * scope (`scopes`, from `requiredScopes`): with none, every valid token passes, and the document
 * listed a 403 no request could get until 2026-12-01.
 */
function bearerResponses(scopes: readonly string[]): Record<string, OperationResponse> {
  return {
    "401": {
      description: "No access token (1201), a malformed Authorization header (1204), or an invalid or expired token (1202).",
      body: apiErrorBody([ApiErrorCode.missingToken, ApiErrorCode.invalidToken, ApiErrorCode.invalidAuthorizationHeader]),
      headers: { "WWW-Authenticate": BEARER_CHALLENGE, ...ERROR_NO_STORE },
    },
    ...(scopes.length === 0 ? {} : { "403": insufficientScope }),
    ...serverFailures(),
  };
}

const insufficientScope: OperationResponse = {
      description: "The token is valid but has none of the scopes the operation needs (1203).",
      body: apiErrorBody([ApiErrorCode.insufficientScope]),
      headers: {
        "WWW-Authenticate": {
          description: "RFC 6750 §3.1: `error=\"insufficient_scope\"` and the scopes that would do.",
          schema: text("The challenge.", ['Bearer realm="plantgate", error="insufficient_scope", scope="Platform_UserAPIs"']),
          required: true,
        },
        ...ERROR_NO_STORE,
      },
};

/**
 * Why any path can be a 503, storage or not: what `unavailableResponse` answers on every path while
 * an embedding server starts (the example servers) and after a Worker's start failed. Until
 * 2026-12-02 the routes that read no storage documented no 503 at all.
 */
const NOT_READY = "server is not ready: still starting (an embedding server such as the example servers), or a Worker whose start failed";

function serverFailures(): Record<string, OperationResponse> {
  return {
    "500": { description: "An unexpected failure (1500); nothing internal is disclosed.", body: apiErrorBody([ApiErrorCode.internal]), headers: ERROR_NO_STORE },
    "503": {
      description: `The storage is unavailable, or the ${NOT_READY} (1503); retry after Retry-After seconds.`,
      body: apiErrorBody([ApiErrorCode.storageUnavailable]),
      headers: { "Retry-After": RETRY_AFTER, ...ERROR_NO_STORE },
    },
  };
}

/** The 500 and 503 of a route that reads no storage: its 503 is only {@link NOT_READY}'s. */
function pageFailures(): Record<string, OperationResponse> {
  const { "500": internal, "503": unavailable } = serverFailures();
  return { "500": internal!, "503": { ...unavailable!, description: `The ${NOT_READY} (1503); retry after Retry-After seconds.` } };
}

const PLANT_400: readonly ApiErrorNumber[] = [
  ApiErrorCode.invalidJson,
  ApiErrorCode.notAnObject,
  ApiErrorCode.missingField,
  ApiErrorCode.wrongType,
  ApiErrorCode.outOfRange,
  ApiErrorCode.duplicateId,
  ApiErrorCode.bodyTooLarge,
  ApiErrorCode.unsupportedMediaType,
  ApiErrorCode.invalidValue,
];

const oauthError = (description: string, codes: readonly OAuthErrorCode[], headers: Record<string, ResponseHeader> = {}): OperationResponse => ({
  description,
  body: oauthErrorBody(codes),
  headers: { ...NO_STORE_HEADERS, ...headers },
});

/** The errors every client-authenticated OAuth endpoint shares (400 for the token endpoint is its own). */
function clientEndpointErrors(): Record<string, OperationResponse> {
  return {
    "400": oauthError("The request is malformed (RFC 6749 §5.2).", ["invalid_request"]),
    "401": oauthError("Client authentication failed.", ["invalid_client"], {
      "WWW-Authenticate": { description: "The scheme to authenticate with.", schema: z.literal('Basic realm="plantgate", charset="UTF-8"'), required: true },
    }),
    "429": oauthError("Too many failed attempts for this client or account, or (password grant) too many password checks at once in this instance; retry after Retry-After seconds.", ["temporarily_unavailable"], {
      "Retry-After": RETRY_AFTER,
    }),
    "500": oauthError("An unexpected failure.", ["server_error"]),
    "503": oauthError(`The storage is unavailable, or the ${NOT_READY}; retry after Retry-After seconds.`, ["temporarily_unavailable"], { "Retry-After": RETRY_AFTER }),
  };
}

/**
 * Every operation for one configuration, in document order.
 *
 * @example
 * const ops = createOperations({ maxPageSize: 100, defaultPageSize: 20, requiredScopes: { createPlant: [], listAccounts: ["Platform_UserAPIs"] } });
 */
export function createOperations(settings: OperationSettings): Operation[] {
  const operations: Operation[] = [
    {
      path: "/plants",
      method: "post",
      operationId: "addPlant",
      summary: "Add a plant to the store",
      description:
        "Creates a plant. The id is an int64 and is read losslessly (it round-trips exactly). Authentication is checked before the body is read. The body's media type is `application/json` or any `application/*+json`, UTF-8. A 400 is one of: invalid JSON (1001), not an object (1002), a missing (1003), mistyped (1004) or out-of-bounds (1009) member, an id outside int64 (1005), a duplicate id (1006), a body over the limit (1007), or another media type (1008).",
      tags: ["Plant store"],
      security: { kind: "bearer", scopes: settings.requiredScopes.createPlant },
      requestBody: { contentType: JSON_TYPE, schema: NewPlantSchema, description: "The plant (UTF-8 JSON, at most `maxBodyBytes`)." },
      responses: {
        "200": { description: "The plant as stored.", body: PlantSchema },
        // The specification's own words for this answer (its Errors section); the codes are in the
        // operation's description and the Error body's schema.
        "400": { description: "unexpected error", body: apiErrorBody(PLANT_400), headers: ERROR_NO_STORE },
        ...bearerResponses(settings.requiredScopes.createPlant),
      },
    },
    {
      path: "/UserService/connect/token",
      method: "post",
      operationId: "requestToken",
      summary: "Token endpoint (client_credentials, password, refresh_token)",
      description:
        "RFC 6749 token endpoint. The client authenticates by the one method it is registered for: HTTP Basic (RFC 6749 App. B encoding) or client_secret_post with one of its secrets, or private_key_jwt (RFC 7523 §2.2: client_assertion_type and client_assertion); never two at once. Failed client authentication is 401 invalid_client. Every parameter at most once.",
      tags: ["OAuth 2.0"],
      security: { kind: "client" },
      requestBody: { contentType: FORM, schema: TokenRequestSchema },
      responses: {
        "200": { description: "Tokens issued.", body: TokenResponseSchema, headers: NO_STORE_HEADERS },
        ...clientEndpointErrors(),
        "400": oauthError("The request, grant or scope is not acceptable (RFC 6749 §5.2).", [
          "invalid_request",
          "invalid_grant",
          "unauthorized_client",
          "unsupported_grant_type",
          "invalid_scope",
        ]),
      },
    },
    {
      path: "/UserService/connect/revocation",
      method: "post",
      operationId: "revokeToken",
      summary: "Revoke a token (RFC 7009)",
      description:
        "Revokes a refresh token (its whole family) or an access token (until it expires). An unknown, malformed, expired or already revoked token is a 200 that changes nothing. The client authenticates as at the token endpoint.",
      tags: ["OAuth 2.0"],
      security: { kind: "client" },
      requestBody: { contentType: FORM, schema: RevocationRequestSchema },
      responses: {
        "200": { description: "Revoked, or nothing to revoke (RFC 7009 §2.2); no body.", headers: NO_STORE_HEADERS },
        ...clientEndpointErrors(),
      },
    },
    {
      path: "/UserService/connect/introspect",
      method: "post",
      operationId: "introspectToken",
      summary: "Introspect a token (RFC 7662)",
      description: "Tells whether a token issued to the calling client is active, and its claims. Anyone else's token is `{\"active\": false}`.",
      tags: ["OAuth 2.0"],
      security: { kind: "client" },
      requestBody: { contentType: FORM, schema: IntrospectionRequestSchema },
      responses: {
        "200": { description: "The token's state.", body: IntrospectionResponseSchema, headers: NO_STORE_HEADERS },
        ...clientEndpointErrors(),
      },
    },
    {
      path: "/rbac/ServerCommand/GetAccountList",
      method: "get",
      operationId: "GetAccountList",
      summary: "List accounts, one page at a time",
      description:
        "Accounts are listed in creation order, oldest first. Pages are stable: an account keeps its place, new accounts are appended, so walking all pages sees each account once. A page past the end is empty.",
      tags: ["Accounts"],
      security: { kind: "bearer", scopes: settings.requiredScopes.listAccounts },
      query: accountListQuery(settings),
      responses: {
        "200": {
          description: "One page.",
          body: AccountPageSchema,
          headers: { "Cache-Control": { description: "Never cached.", schema: z.literal("no-store"), required: true } },
        },
        "400": {
          description: "page (1101) or pageSize (1102) is not an integer in range, or page or pageSize is given more than once (1103; other parameters are ignored).",
          body: apiErrorBody([ApiErrorCode.invalidPage, ApiErrorCode.invalidPageSize, ApiErrorCode.repeatedParameter]),
          headers: ERROR_NO_STORE,
        },
        ...bearerResponses(settings.requiredScopes.listAccounts),
      },
    },
    {
      path: "/.well-known/jwks.json",
      method: "get",
      operationId: "getJwks",
      summary: "The public keys that sign access tokens",
      tags: ["OAuth 2.0"],
      description: "The JWK Set (RFC 7517) with the public keys of the access tokens' signing keys; select by the token's `kid`.",
      security: { kind: "none" },
      responses: {
        "200": {
          description: "The JWK Set.",
          body: JwksSchema,
          headers: {
            "Cache-Control": {
              description: "May be cached for five minutes; `no-store` while the answering instance cannot re-read the keys (its set may lack a key stored since).",
              schema: z.enum(["public, max-age=300", "no-store"]),
              required: true,
            },
          },
        },
        ...serverFailures(),
      },
    },
    {
      path: "/.well-known/oauth-authorization-server",
      method: "get",
      operationId: "getAuthorizationServerMetadata",
      summary: "Authorization server metadata (RFC 8414)",
      description:
        "RFC 8414 §3.1: with a base path, also served at `/.well-known/oauth-authorization-server{basePath}`; with an `issuer` URL whose path is another (say `https://auth.example.com/tenant-a`), also at `/.well-known/oauth-authorization-server{issuer path}`.",
      tags: ["OAuth 2.0"],
      security: { kind: "none" },
      responses: {
        "200": {
          description: "The metadata.",
          body: AuthorizationServerMetadataSchema,
          headers: {
            "Cache-Control": {
              description:
                "With a configured base URL or issuer URL every URL in it derives from that and the document is the same for everyone: `public, max-age=300`. Without either, the URLs come from the request's origin, so it is `private, max-age=300` and varies by Host.",
              schema: z.enum(["public, max-age=300", "private, max-age=300"]),
              required: true,
            },
            Vary: { description: "`Host` when neither a base URL nor an issuer URL is configured; absent otherwise.", schema: z.literal("Host") },
          },
        },
        // The metadata reads no storage: its 503 is only a server that is not ready.
        ...pageFailures(),
      },
    },
    {
      path: "/openapi.json",
      method: "get",
      operationId: "getOpenApiDocument",
      summary: "This API description (OpenAPI 3.1)",
      description: "This document, generated from the schemas the handlers validate with; `servers` is this server's base URL.",
      tags: ["API description"],
      security: { kind: "none" },
      responses: {
        "200": {
          description: "The OpenAPI document.",
          headers: {
            "Cache-Control": {
              description:
                "With a configured base URL the document is the same for everyone: `public, max-age=300`. Without one, `servers` and the token URL come from the request's origin, so it is `private, max-age=300` and varies by Host.",
              schema: z.enum(["public, max-age=300", "private, max-age=300"]),
              required: true,
            },
            Vary: { description: "`Host` when no base URL is configured (then the document depends on it); absent otherwise.", schema: z.literal("Host") },
            ETag: {
              description: "A strong entity tag of the document's bytes (their SHA-256): one per base URL, the same on every server running this release with this configuration.",
              schema: z.string(),
              required: true,
            },
          },
          body: meta(z.looseObject({ openapi: z.literal("3.1.0") }), { description: "An OpenAPI 3.1 document." }),
        },
        "304": {
          description:
            "Not modified: the request's If-None-Match was `*` or named this base URL's ETag (weak comparison, RFC 9110 §13.1.2); no content, with the 200's ETag, Cache-Control and Vary.",
          headers: {
            ETag: { description: "The document's ETag.", schema: z.string(), required: true },
          },
        },
        // Its ETag is a digest of the bytes, and a failed digest is a 500 (tried again by the next
        // request); undocumented until 2026-12-02.
        ...pageFailures(),
      },
    },
  ];
  return settings.docsAssets ? [...operations, ...docsOperations(settings.docsAssets)] : operations;
}

/** `/docs` and its assets: described only when the app serves a reference page (the `docs` option). */
function docsOperations(docsAssets: Readonly<Record<string, string>>): Operation[] {
  const etag: ResponseHeader = {
    description: "A strong entity tag of the file's bytes (their SHA-256), the same on every server running this release with this configuration.",
    schema: z.string(),
    required: true,
  };
  const notModified: OperationResponse = {
    description:
      "Not modified: the request's If-None-Match was `*` or named this ETag (weak comparison, RFC 9110 §13.1.2); no content, with the 200's ETag, Cache-Control and security headers.",
    headers: { ETag: etag },
  };
  const page: Operation[] = [
    {
      path: "/docs",
      method: "get",
      operationId: "getApiReference",
      summary: "The API reference page (HTML)",
      description: "A browsable reference of this document, served with its assets by plantgate itself (no CDN).",
      tags: ["API description"],
      security: { kind: "none" },
      responses: { "200": { description: "The page.", contentType: "text/html", body: z.string(), headers: { ETag: etag } }, "304": notModified, ...pageFailures() },
    },
    {
      path: "/docs/assets/{asset}",
      method: "get",
      operationId: "getApiReferenceAsset",
      summary: "A script or style sheet of the API reference page",
      description: "Swagger UI's files (from the swagger-ui-dist npm package) and the page's own start-up script.",
      tags: ["API description"],
      security: { kind: "none" },
      pathParams: z.object({ asset: z.enum(Object.keys(docsAssets) as [string, ...string[]]) }),
      responses: {
        "200": {
          description: "The asset (long-cacheable).",
          content: Object.fromEntries(Object.values(docsAssets).map((type) => [type, z.string()])),
          headers: { ETag: etag },
        },
        "304": notModified,
        "404": { description: "No such asset (1404).", body: apiErrorBody([ApiErrorCode.notFound]), headers: ERROR_NO_STORE },
        ...pageFailures(),
      },
    },
  ];
  // A page without files has no asset path to describe (an empty enum is no schema).
  return Object.keys(docsAssets).length > 0 ? page : page.slice(0, 1);
}
