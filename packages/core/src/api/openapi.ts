/**
 * The OpenAPI 3.1 document, generated from the zod schemas in `schemas/` (zod 4's JSON Schema
 * output, draft 2020-12, the dialect OpenAPI 3.1 uses) and the operation list in
 * `schemas/operations.ts`. Nothing here describes a body by hand.
 */
import * as z from "zod/mini";
import { notModified, strongEtag } from "../http/conditional.js";
import { plain, type PlainResponse } from "../http/respond.js";
import type { Context, OpenApiText, Urls } from "../context.js";
import { NARROWED_ERRORS } from "../schemas/errors.js";
import { EXACT_NUMBER_MARKER, INT64_JSON_SCHEMA, isInt64Schema } from "../schemas/int64.js";
import { COMPONENTS, createOperations, type Operation, type OperationResponse, type OperationSecurity } from "../schemas/operations.js";

type Json = Record<string, unknown>;

const TITLE = "Plant Store";
const VERSION = "1.0.0";
const DESCRIPTION = [
  "A sample plant store, used to demonstrate API description features: an int64 id that round-trips",
  "exactly, a documented error body for every cause, an OAuth 2.0 token endpoint with the",
  "client_credentials, password and refresh_token grants, and a paged account listing behind a bearer",
  "token. Served by plantgate and generated from the same zod schemas its handlers validate with.",
].join(" ");

/** Options for zod's JSON Schema output: OpenAPI 3.1's dialect, and int64 for our custom schemas. */
function jsonSchemaParams(io: "input" | "output") {
  return {
    target: "draft-2020-12" as const,
    io,
    // "any" lets the override below describe our custom schemas. zod also visits steps that do not
    // reach the output (a transform's input side), so a stray unrepresentable schema is caught by
    // the test that finds no empty schema in the document, not here.
    unrepresentable: "any" as const,
    override(ctx: { zodSchema: z.core.$ZodType; jsonSchema: Json }) {
      if (isInt64Schema(ctx.zodSchema)) Object.assign(ctx.jsonSchema, INT64_JSON_SCHEMA);
    },
  };
}

function strip(schema: Json): Json {
  const { $schema: _s, $id: _i, ...rest } = schema;
  return rest;
}

/** The named schemas, one registry per side (request bodies describe inputs, responses outputs). */
function components(): { schemas: Json; refs: Map<z.core.$ZodType, string> } {
  const refs = new Map<z.core.$ZodType, string>();
  const schemas: Json = {};
  for (const io of ["input", "output"] as const) {
    const registry = z.registry<{ id: string }>();
    for (const [name, c] of Object.entries(COMPONENTS)) {
      if (c.io !== io) continue;
      registry.add(c.schema, { id: name });
      refs.set(c.schema, `#/components/schemas/${name}`);
    }
    const out = z.toJSONSchema(registry, { ...jsonSchemaParams(io), uri: (id) => `#/components/schemas/${id}` }) as { schemas: Record<string, Json> };
    for (const [name, schema] of Object.entries(out.schemas)) schemas[name] = strip(schema);
  }
  return { schemas, refs };
}

function schemaOf(schema: z.core.$ZodType, io: "input" | "output", refs: Map<z.core.$ZodType, string>): Json {
  const ref = refs.get(schema);
  if (ref) return { $ref: ref };
  const inline = strip(z.toJSONSchema(schema, jsonSchemaParams(io)) as Json);
  const base = NARROWED_ERRORS.get(schema);
  return base ? { allOf: [{ $ref: `#/components/schemas/${base}` }, inline] } : inline;
}

function parameters(shape: z.ZodMiniObject | undefined, where: "query" | "path", refs: Map<z.core.$ZodType, string>): Json[] {
  if (!shape) return [];
  return Object.entries(shape.shape as Record<string, z.core.$ZodType>).map(([name, member]) => {
    const schema = schemaOf(member, "output", refs);
    const { description, ...rest } = schema;
    // A parameter with a default may be left out.
    const optional = where === "query" && ("default" in rest || z.safeParse(member, undefined).success);
    return { name, in: where, required: !optional, ...(description ? { description } : {}), schema: rest };
  });
}

function response(r: OperationResponse, refs: Map<z.core.$ZodType, string>): Json {
  const content = r.content ?? (r.body ? { [r.contentType ?? "application/json"]: r.body } : undefined);
  return {
    description: r.description,
    ...(r.headers
      ? {
          headers: Object.fromEntries(
            Object.entries(r.headers).map(([name, h]) => [name, { description: h.description, required: h.required ?? false, schema: schemaOf(h.schema, "output", refs) }]),
          ),
        }
      : {}),
    ...(content ? { content: Object.fromEntries(Object.entries(content).map(([type, s]) => [type, { schema: schemaOf(s, "output", refs) }])) } : {}),
  };
}

function security(s: OperationSecurity): Json[] {
  switch (s.kind) {
    case "none":
      return [];
    case "client":
      // {}: client_secret_post and private_key_jwt carry the credentials in the body, which no scheme describes.
      return [{ clientBasic: [] }, {}];
    case "bearer":
      // bearerAuth cannot name scopes (Spectral: only oauth2/openIdConnect may); the description does.
      return s.scopes.length === 0 ? [{ bearerAuth: [] }, { oauth2: [] }] : [{ bearerAuth: [] }, ...s.scopes.map((scope) => ({ oauth2: [scope] }))];
  }
}

function operation(op: Operation, refs: Map<z.core.$ZodType, string>): Json {
  const params = [...parameters(op.pathParams, "path", refs), ...parameters(op.query, "query", refs)];
  const scopesNote = op.security.kind === "bearer" && op.security.scopes.length > 0 ? ` Needs an access token with one of the scopes: ${op.security.scopes.join(", ")}.` : "";
  return {
    operationId: op.operationId,
    summary: op.summary,
    description: (op.description ?? op.summary) + scopesNote,
    tags: op.tags,
    security: security(op.security),
    ...(params.length ? { parameters: params } : {}),
    ...(op.requestBody
      ? {
          requestBody: {
            required: true,
            ...(op.requestBody.description ? { description: op.requestBody.description } : {}),
            content: { [op.requestBody.contentType]: { schema: schemaOf(op.requestBody.schema, "input", refs) } },
          },
        }
      : {}),
    responses: Object.fromEntries(Object.entries(op.responses).map(([status, r]) => [status, response(r, refs)])),
  };
}

const TAGS = [
  { name: "Plant store", description: "The sample plant store." },
  { name: "OAuth 2.0", description: "Token endpoint (RFC 6749), JWKS and authorization server metadata (RFC 8414)." },
  { name: "Accounts", description: "The users of the password grant." },
  { name: "API description", description: "This document and its reference page." },
];

/** The document without what depends on the base URL: built once per app. */
function baseDocument(ctx: Context): Json {
  const { schemas, refs } = components();
  const paths: Record<string, Json> = {};
  const ops = createOperations({
    maxPageSize: ctx.maxPageSize,
    defaultPageSize: ctx.defaultPageSize,
    requiredScopes: ctx.requiredScopes,
    docsAssets: ctx.docs?.assetTypes ?? null,
  });
  for (const op of ops) (paths[op.path] ??= {})[op.method] = operation(op, refs);
  return {
    openapi: "3.1.0",
    info: {
      title: TITLE,
      version: VERSION,
      description: DESCRIPTION,
      contact: { name: "plantgate" },
      license: { name: "MIT", identifier: "MIT" },
    },
    tags: TAGS,
    paths,
    components: { schemas, securitySchemes: {} },
  };
}

function securitySchemes(ctx: Context, urls: Urls): Json {
  const tokenUrl = `${urls.baseUrl}/UserService/connect/token`;
  const scopes = {
    [ctx.scopes.userApis]: "The user APIs (e.g. GetAccountList).",
    [ctx.scopes.serverCommands]: "Server commands of all apps (e.g. GetAccountList).",
    [ctx.scopes.offlineAccess]: "A refresh token (password grant only).",
  };
  return {
    bearerAuth: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "An access token from the token endpoint (RFC 6750)." },
    oauth2: {
      type: "oauth2",
      description: "Tokens from this server's token endpoint.",
      flows: {
        clientCredentials: { tokenUrl, scopes: { [ctx.scopes.userApis]: scopes[ctx.scopes.userApis]!, [ctx.scopes.serverCommands]: scopes[ctx.scopes.serverCommands]! } },
        password: { tokenUrl, refreshUrl: tokenUrl, scopes },
      },
    },
    clientBasic: {
      type: "http",
      scheme: "basic",
      description:
        "OAuth client authentication (client_secret_basic; RFC 6749 App. B encoding). client_secret_post sends client_id and client_secret in the body instead; private_key_jwt sends client_assertion_type and client_assertion (RFC 7523 §2.2).",
    },
  };
}

/** Serializes, writing the marked int64 bounds as bare, exact JSON numbers. */
function serialize(document: Json): string {
  const marker = JSON.stringify(EXACT_NUMBER_MARKER).slice(1, -1).replace(/\\/g, "\\\\");
  return JSON.stringify(document).replace(new RegExp(`"${marker}(-?\\d+)"`, "g"), "$1");
}

/** Base URLs come from the request's origin when not configured: bound the cache against Host-header junk. */
const MAX_CACHED_URLS = 16;

/**
 * The OpenAPI 3.1 document for one base URL, as JSON text.
 *
 * @example
 * const text = openApiDocument(ctx, urlsFor(ctx, request));
 * JSON.parse(text).info.title; // "Plant Store"
 */
export function openApiDocument(ctx: Context, urls: Urls): string {
  const { openapi, info, components, ...rest } = (ctx.openApi.base ??= baseDocument(ctx)) as { openapi: string; info: Json; components: Json };
  return serialize({
    openapi,
    info,
    servers: [{ url: urls.baseUrl, description: "This server." }],
    ...rest,
    components: { ...components, securitySchemes: securitySchemes(ctx, urls) },
  });
}

/**
 * The document's bytes and strong ETag (SHA-256) for one base URL: made once per app and base URL
 * (kept in `ctx.openApi`, at most {@link MAX_CACHED_URLS} base URLs, the oldest dropped first).
 */
function openApiText(ctx: Context, urls: Urls): Promise<OpenApiText> {
  const cache = ctx.openApi.byUrl;
  let entry = cache.get(urls.baseUrl);
  if (entry === undefined) {
    const bytes = new TextEncoder().encode(openApiDocument(ctx, urls));
    entry = strongEtag(bytes).then((etag) => ({ bytes, etag }));
    // A failed digest is not kept: the next request tries again.
    entry.catch(() => cache.get(urls.baseUrl) === entry && cache.delete(urls.baseUrl));
    if (cache.size >= MAX_CACHED_URLS) cache.delete(cache.keys().next().value!);
    cache.set(urls.baseUrl, entry);
  }
  return entry;
}

/**
 * `GET /openapi.json`. Without a configured `baseUrl` the document names the request's own origin,
 * which a client can choose with the Host header: a shared cache must then not keep one copy for
 * everyone, so the response is `private` and varies by Host. Each base URL's document has its own
 * strong ETag; an If-None-Match naming it (or `*`) is a 304 without content (RFC 9110 §13.1.2).
 */
export async function openApiResponse(ctx: Context, urls: Urls, ifNoneMatch: string | null): Promise<PlainResponse> {
  const caching: Record<string, string> =
    ctx.baseUrl !== undefined ? { "cache-control": "public, max-age=300" } : { "cache-control": "private, max-age=300", vary: "Host" };
  const { bytes, etag } = await openApiText(ctx, urls);
  if (notModified(ifNoneMatch, etag)) return plain(304, null, { ...caching, etag });
  return plain(200, bytes, { "content-type": "application/json", ...caching, etag });
}
