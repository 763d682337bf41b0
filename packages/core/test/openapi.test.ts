/**
 * Issue 6: the OpenAPI 3.1 document. It is generated from the zod schemas; these tests check it is
 * a valid OpenAPI 3.1 document (an independent validator and Spectral's oas ruleset), that it says
 * what the spec says, follows the configured base URL, and describes every route.
 */
import { createHash } from "node:crypto";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Document, Spectral, type RulesetDefinition } from "@stoplight/spectral-core";
import * as Parsers from "@stoplight/spectral-parsers";
import { oas } from "@stoplight/spectral-rulesets";
import { describe, expect, it, vi } from "vitest";
import { ROUTE_PATHS } from "../src/app.js";
import { ASSERTION_ALGS, createPlantgate, type PlantgateOptions } from "../src/index.js";
import { requiredParameters, TOKEN_REQUESTS } from "../src/schemas/oauth.js";
import { GRANTS } from "../src/oauth/token-endpoint.js";
import { BASE } from "./helpers.js";
import { TEST_PAGE } from "./page-helpers.js";

interface OpenApi {
  openapi: string;
  info: { title: string; version: string; description: string };
  servers: { url: string }[];
  paths: Record<string, Record<string, { security: Record<string, string[]>[]; responses: Record<string, unknown>; parameters?: unknown[] }>>;
  components: { schemas: Record<string, { properties?: Record<string, unknown> }>; securitySchemes: Record<string, Record<string, unknown>> };
}

/** With a reference page (`docs`), so the document describes `/docs` too; see the test without one. */
async function fetchDocument(options: PlantgateOptions = {}, url = `${BASE}/openapi.json`) {
  const app = createPlantgate({ logger: { error() {}, warn() {} }, docs: TEST_PAGE, ...options });
  const res = await app.fetch(new Request(url));
  const text = await res.text();
  return { res, text, doc: JSON.parse(text) as OpenApi, app };
}

describe("GET /openapi.json", () => {
  it("serves an OpenAPI 3.1.0 document titled Plant Store, version 1.0.0, describing itself as a sample plant store", async () => {
    const { res, doc } = await fetchDocument();
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    // No baseUrl: the document names the request's origin (chosen by the Host header), so no shared cache may keep it.
    expect([res.headers.get("cache-control"), res.headers.get("vary")]).toEqual(["private, max-age=300", "Host"]);
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.title).toBe("Plant Store");
    expect(doc.info.version).toBe("1.0.0");
    expect(doc.info.description).toMatch(/^A sample plant store, used to demonstrate API description features/);
    expect(doc.servers).toEqual([{ url: BASE, description: "This server." }]);
  });

  it("is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator)", async () => {
    const { doc } = await fetchDocument();
    const validator = new Validator();
    const result = await validator.validate(doc as unknown as Parameters<Validator["validate"]>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    // The validator is live: a document without info.title is refused.
    const broken = JSON.parse(JSON.stringify(doc)) as { info: { title?: string } };
    delete broken.info.title;
    expect((await new Validator().validate(broken as unknown as Parameters<Validator["validate"]>[0])).valid).toBe(false);
  });

  // Spectral's run takes about 2 s alone and went past vitest's 5 s default on a loaded 2-core machine.
  it("Spectral's oas ruleset reports no errors and no warnings", { timeout: 30_000 }, async () => {
    const { text } = await fetchDocument();
    const spectral = new Spectral();
    // The ruleset's declared type trips the RulesetDefinition union; it is the published oas ruleset.
    spectral.setRuleset({ extends: [oas as RulesetDefinition] });
    // severity 0 = error, 1 = warning (2 info and 3 hint are advice, not findings).
    const lint = async (json: string) =>
      (await spectral.run(new Document(json, Parsers.Json, "openapi.json"))).filter((r) => r.severity <= 1).map((r) => `${r.code} at ${r.path.join(".")}: ${r.message}`);
    expect(await lint(text)).toEqual([]);
    // The ruleset is live: the same document without an operationId and with an undefined scheme is flagged.
    const broken = JSON.parse(text) as OpenApi;
    delete (broken.paths["/plants"]!.post! as { operationId?: string }).operationId;
    broken.paths["/plants"]!.post!.security = [{ nowhere: [] }];
    expect(await lint(JSON.stringify(broken))).toEqual([
      expect.stringMatching(/^operation-operationId at paths\.\/plants\.post/),
      expect.stringMatching(/^oas3-operation-security-defined at paths\.\/plants\.post\.security\.0\.nowhere/),
    ]);
  });

  it("describes every route of the app (and only those), the reference page's files included", async () => {
    const { doc } = await fetchDocument();
    expect(Object.keys(doc.paths).sort()).toEqual([...ROUTE_PATHS, "/docs", "/docs/assets/{asset}"].sort());
    expect(doc.paths["/docs/assets/{asset}"]!.get!.parameters).toEqual([
      { name: "asset", in: "path", required: true, schema: { type: "string", enum: Object.keys(TEST_PAGE.assets) } },
    ]);
    expect(Object.keys((doc.paths["/docs/assets/{asset}"]!.get!.responses["200"] as { content: object }).content)).toEqual([
      "text/javascript",
      "text/css",
      "application/octet-stream",
    ]);
  });

  it("without a reference page (no `docs` option) describes no /docs path", async () => {
    const { doc } = await fetchDocument({ docs: undefined });
    expect(Object.keys(doc.paths).sort()).toEqual([...ROUTE_PATHS].sort());
    const result = await new Validator().validate(doc as unknown as Parameters<Validator["validate"]>[0]);
    expect([result.valid, result.errors ?? []]).toEqual([true, []]);
  });

  it("id is integer/int64 with the exact int64 bounds, in the request and the response", async () => {
    const { text, doc } = await fetchDocument();
    const int64 = { type: "integer", format: "int64", minimum: expect.any(Number), maximum: expect.any(Number) };
    expect(doc.components.schemas.NewPlant!.properties!.id).toMatchObject(int64);
    expect(doc.components.schemas.Plant!.properties!.id).toMatchObject(int64);
    // JSON.parse rounds 2^63 - 1; the text must hold it exactly.
    expect(text.match(/"minimum":-9223372036854775808,"maximum":9223372036854775807/g)).toHaveLength(2);
  });

  it("the token endpoint takes a form body with the three grants; their required parameters are the ones the grants check", async () => {
    const { doc } = await fetchDocument();
    const op = doc.paths["/UserService/connect/token"]!.post! as unknown as { requestBody: { content: Record<string, unknown> } };
    expect(Object.keys(op.requestBody.content)).toEqual(["application/x-www-form-urlencoded"]);
    const request = doc.components.schemas.TokenRequest as unknown as { oneOf: { properties: { grant_type: { const: string } }; required: string[] }[] };
    expect(request.oneOf.map((g) => [g.properties.grant_type.const, g.required])).toEqual([
      ["client_credentials", ["grant_type"]],
      ["password", ["grant_type", "username", "password"]],
      ["refresh_token", ["grant_type", "refresh_token"]],
    ]);
    for (const [type, grant] of GRANTS) {
      expect(grant.required).toEqual(requiredParameters(type as keyof typeof TOKEN_REQUESTS));
      expect(["grant_type", ...grant.required]).toEqual(request.oneOf.find((g) => g.properties.grant_type.const === type)!.required);
    }
  });

  it("documents the answers the routes give: POST /plants's 400 as the specification words it, a 403 only where a scope is needed, the metadata's 503 only that of a server not ready", async () => {
    const { doc } = await fetchDocument();
    type Responses = Record<string, { description: string }>;
    const plants = doc.paths["/plants"]!.post! as unknown as { description: string; responses: Responses };
    // The specification's Errors section: "the error description is 'unexpected error'".
    expect(plants.responses["400"]!.description).toBe("unexpected error");
    expect(plants.description).toContain("A 400 is one of: invalid JSON (1001)");
    // By default POST /plants needs no scope (no 403 possible), GetAccountList one of two.
    expect(Object.keys(plants.responses)).toEqual(["200", "400", "401", "500", "503"]);
    const list = doc.paths["/rbac/ServerCommand/GetAccountList"]!.get! as unknown as { responses: Responses };
    expect(Object.keys(list.responses)).toEqual(["200", "400", "401", "403", "500", "503"]);
    const scoped = (await fetchDocument({ requiredScopes: { createPlant: ["Platform_AllAppsServerCommands"], listAccounts: [] } })).doc;
    expect(Object.keys((scoped.paths["/plants"]!.post! as unknown as { responses: Responses }).responses)).toEqual(["200", "400", "401", "403", "500", "503"]);
    expect(Object.keys((scoped.paths["/rbac/ServerCommand/GetAccountList"]!.get! as unknown as { responses: Responses }).responses)).toEqual(["200", "400", "401", "500", "503"]);
    const metadata = doc.paths["/.well-known/oauth-authorization-server"]!.get! as unknown as { responses: Responses };
    // The metadata reads no storage (no storage 503, listed until 2026-12-01), but a server that is
    // not ready answers 503 on every path (undocumented until 2026-12-02).
    expect(Object.keys(metadata.responses)).toEqual(["200", "500", "503"]);
    expect(metadata.responses["503"]!.description).toBe(
      "The server is not ready: still starting (an embedding server such as the example servers), or a Worker whose start failed (1503); retry after Retry-After seconds.",
    );
    expect((doc.components.schemas.NewPlant!.properties!.id as { description: string }).description).toContain("a fraction or an exponent (`1.0`, `1e2`)");
  });

  it("the metadata schema describes every member the metadata document sends (the three *_signing_alg_values_supported undescribed until 2026-12-02)", async () => {
    const { doc, app } = await fetchDocument();
    const sent = (await (await app.fetch(new Request(`${BASE}/.well-known/oauth-authorization-server`))).json()) as Record<string, unknown>;
    const described = doc.components.schemas.AuthorizationServerMetadata!.properties!;
    expect(Object.keys(described).sort()).toEqual(Object.keys(sent).sort());
    // The algorithms a client assertion may be signed with, the same three lists.
    for (const member of ["token_endpoint_auth_signing_alg_values_supported", "revocation_endpoint_auth_signing_alg_values_supported", "introspection_endpoint_auth_signing_alg_values_supported"]) {
      expect(described[member], member).toMatchObject({ type: "array", items: { type: "string" } });
      expect((described[member] as { description: string }).description, member).toContain("private_key_jwt");
      expect(sent[member], member).toEqual([...ASSERTION_ALGS]);
    }
  });

  it("the document and the reference page answer 500 when their ETag's digest fails (tried again by the next request), and document it (until 2026-12-02 only 200 and 304 were)", async () => {
    const { doc } = await fetchDocument();
    type Responses = Record<string, unknown>;
    const statuses = (path: string) => Object.keys((doc.paths[path]!.get! as unknown as { responses: Responses }).responses);
    // And the 503 of a server that is not ready (since 2026-12-02).
    expect([statuses("/openapi.json"), statuses("/docs"), statuses("/docs/assets/{asset}")]).toEqual([["200", "304", "500", "503"], ["200", "304", "500", "503"], ["200", "304", "404", "500", "503"]]);
    const app = createPlantgate({ logger: { error() {}, warn() {} }, docs: TEST_PAGE });
    const digest = vi.spyOn(crypto.subtle, "digest").mockRejectedValueOnce(new Error("digest unavailable"));
    try {
      const res = await app.fetch(new Request(`${BASE}/openapi.json`));
      expect([res.status, await res.json()]).toEqual([500, { error: 1500, message: "The server encountered an unexpected error." }]);
    } finally {
      digest.mockRestore();
    }
    expect((await app.fetch(new Request(`${BASE}/openapi.json`))).status).toBe(200);
  });

  it("GetAccountList documents page and pageSize with the configured bounds", async () => {
    const { doc } = await fetchDocument({ maxPageSize: 50, defaultPageSize: 10 });
    expect(doc.paths["/rbac/ServerCommand/GetAccountList"]!.get!.parameters).toEqual([
      { name: "page", in: "query", required: false, description: "The page to return, from 1.", schema: { type: "integer", minimum: 1, maximum: 2147483647, default: 1 } },
      { name: "pageSize", in: "query", required: false, description: "Accounts per page.", schema: { type: "integer", minimum: 1, maximum: 50, default: 10 } },
    ]);
  });

  it("has the bearer scheme on the plant store and the account list, and an oauth2 scheme whose flows use the token endpoint", async () => {
    const { doc } = await fetchDocument();
    expect(doc.components.securitySchemes.bearerAuth).toEqual({
      type: "http",
      scheme: "bearer",
      bearerFormat: "JWT",
      description: "An access token from the token endpoint (RFC 6750).",
    });
    const tokenUrl = `${BASE}/UserService/connect/token`;
    expect(doc.components.securitySchemes.oauth2).toMatchObject({
      type: "oauth2",
      flows: {
        clientCredentials: { tokenUrl, scopes: { Platform_UserAPIs: expect.any(String), Platform_AllAppsServerCommands: expect.any(String) } },
        password: { tokenUrl, refreshUrl: tokenUrl, scopes: { Platform_UserAPIs: expect.any(String), Platform_AllAppsServerCommands: expect.any(String), offline_access: expect.any(String) } },
      },
    });
    expect(doc.paths["/plants"]!.post!.security).toEqual([{ bearerAuth: [] }, { oauth2: [] }]);
    expect(doc.paths["/rbac/ServerCommand/GetAccountList"]!.get!.security).toEqual([
      { bearerAuth: [] },
      { oauth2: ["Platform_UserAPIs"] },
      { oauth2: ["Platform_AllAppsServerCommands"] },
    ]);
    expect(doc.paths["/.well-known/jwks.json"]!.get!.security).toEqual([]);
  });

  it("token_type_hint is a string (unknown hints are accepted and ignored, RFC 7009 §2.1), not an enum", async () => {
    const { doc } = await fetchDocument();
    for (const name of ["RevocationRequest", "IntrospectionRequest"]) {
      expect([name, doc.components.schemas[name]!.properties!.token_type_hint]).toEqual([
        name,
        {
          type: "string",
          description:
            "Where to look first (RFC 7009 §2.1, RFC 7662 §2.1). Known values: access_token and refresh_token; any other value is accepted and ignored, and a token not found under the hinted kind is looked for under the other.",
        },
      ]);
    }
  });

  it("has a strong ETag per base URL (SHA-256 of its bytes): If-None-Match naming it is a 304 with Cache-Control, Vary and the ETag; another Host's tag is the 200", async () => {
    const etagOf = (text: string) => `"${createHash("sha256").update(text, "utf8").digest("base64url")}"`;
    const app = createPlantgate({ logger: { error() {}, warn() {} }, docs: TEST_PAGE });
    const a = await app.fetch(new Request(`${BASE}/openapi.json`));
    const text = await a.text();
    const tag = etagOf(text);
    expect([a.status, Object.fromEntries(a.headers)]).toEqual([
      200,
      { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)), "cache-control": "private, max-age=300", vary: "Host", etag: tag },
    ]);
    for (const [method, field] of [
      ["GET", tag],
      ["HEAD", `W/${tag}`],
      ["GET", `"x", ${tag}`],
      ["GET", "*"],
    ] as const) {
      const r = await app.fetch(new Request(`${BASE}/openapi.json`, { method, headers: { "if-none-match": field } }));
      expect([method, field, r.status, Object.fromEntries(r.headers), await r.text()]).toEqual([
        method,
        field,
        304,
        { "cache-control": "private, max-age=300", vary: "Host", etag: tag },
        "",
      ]);
    }
    // Another Host is another document (its servers and token URL), so another tag.
    const other = await app.fetch(new Request("http://other.example.test/openapi.json", { headers: { "if-none-match": tag } }));
    const otherText = await other.text();
    expect([other.status, other.headers.get("etag"), otherText.includes('"url":"http://other.example.test"')]).toEqual([200, etagOf(otherText), true]);
    expect(etagOf(otherText)).not.toBe(tag);
    // Malformed: ignored, the whole document.
    for (const field of [tag.slice(1, -1), `*, ${tag}`, `${tag};`]) {
      const r = await app.fetch(new Request(`${BASE}/openapi.json`, { headers: { "if-none-match": field } }));
      expect([field, r.status, await r.text()]).toEqual([field, 200, text]);
    }
    // After 20 other Hosts pushed it out of the cache, the same bytes and tag again.
    for (let i = 0; i < 20; i++) await (await app.fetch(new Request(`http://h${i}.example.test/openapi.json`))).arrayBuffer();
    const again = await app.fetch(new Request(`${BASE}/openapi.json`, { headers: { "if-none-match": tag } }));
    expect([again.status, again.headers.get("etag")]).toEqual([304, tag]);
  });

  it("with a configured base URL, one tag whatever the Host, and a public 304", async () => {
    const app = createPlantgate({ logger: { error() {}, warn() {} }, baseUrl: "https://public.example.com" });
    const a = await app.fetch(new Request("http://internal:8080/openapi.json"));
    const tag = a.headers.get("etag")!;
    const r = await app.fetch(new Request("http://10.0.0.7/openapi.json", { headers: { "if-none-match": tag } }));
    expect([r.status, Object.fromEntries(r.headers), await r.text()]).toEqual([304, { "cache-control": "public, max-age=300", etag: tag }, ""]);
  });

  it("follows the configured issuer, base URL and base path", async () => {

    const { res, doc } = await fetchDocument({ basePath: "/api", baseUrl: "https://public.example.com/api" }, "http://internal:8080/api/openapi.json");
    expect(res.status).toBe(200);
    // With a configured baseUrl the document is the same for every request: publicly cacheable.
    expect([res.headers.get("cache-control"), res.headers.get("vary")]).toEqual(["public, max-age=300", null]);
    expect(doc.servers).toEqual([{ url: "https://public.example.com/api", description: "This server." }]);
    expect((doc.components.securitySchemes.oauth2 as { flows: { password: { tokenUrl: string } } }).flows.password.tokenUrl).toBe(
      "https://public.example.com/api/UserService/connect/token",
    );
    const derived = await fetchDocument({ basePath: "/auth" }, "http://127.0.0.1:9000/auth/openapi.json");
    expect(derived.doc.servers).toEqual([{ url: "http://127.0.0.1:9000/auth", description: "This server." }]);
    expect((await derived.app.fetch(new Request("http://127.0.0.1:9000/openapi.json"))).status).toBe(404);
  });

  it("is built once per base URL: the same text for repeated requests, another for another origin", async () => {
    const app = createPlantgate({});
    const get = async (origin: string) => (await app.fetch(new Request(`${origin}/openapi.json`))).text();
    const a = await get("http://a.example");
    expect(await get("http://a.example")).toBe(a);
    const b = await get("http://b.example");
    expect(b).not.toBe(a);
    expect(b.replaceAll("http://b.example", "http://a.example")).toBe(a);
  });

  it("contains no empty schema (a zod schema without a JSON Schema would become one)", async () => {
    const { doc } = await fetchDocument();
    const empties: string[] = [];
    const walk = (node: unknown, path: string, isSchema: boolean) => {
      if (node === null || typeof node !== "object") return;
      if (isSchema && !Array.isArray(node) && Object.keys(node).length === 0) empties.push(path);
      for (const [k, v] of Object.entries(node)) {
        const childIsSchema = k === "schema" || (path.endsWith(".properties") && !Array.isArray(node)) || k === "items" || /^(allOf|anyOf|oneOf)$/.test(path.split(".").pop()!);
        walk(v, `${path}.${k}`, childIsSchema);
      }
    };
    walk(doc, "$", false);
    for (const [name, s] of Object.entries(doc.components.schemas)) walk(s, `components.schemas.${name}`, true);
    expect(empties).toEqual([]);
  });

  it("HEAD /openapi.json: 200 without a body", async () => {
    const app = createPlantgate({});
    const res = await app.fetch(new Request(`${BASE}/openapi.json`, { method: "HEAD" }));
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("");
  });
});
