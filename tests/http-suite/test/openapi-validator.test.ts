/**
 * The response validator the suite wraps around fetch (issue 6) must actually refuse responses
 * that do not match the document, so a green suite means every response matched.
 */
import { createPlantgate, unavailableResponse } from "@plantgate/core";
import { swaggerUi } from "@plantgate/docs";
import { beforeAll, describe, expect, it } from "vitest";
import { createResponseValidator, type ResponseValidator } from "../src/openapi-validator.js";

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
  status,
  headers: new Headers({ "content-type": "application/json", ...headers }),
  body: JSON.stringify(body),
});

describe("the suite's OpenAPI response validator", () => {
  let v: ResponseValidator;
  beforeAll(async () => {
    const app = createPlantgate({});
    v = createResponseValidator(await (await app.fetch(new Request("http://x.test/openapi.json"))).text());
  });

  it("accepts documented responses", () => {
    const plant = { status: 200, headers: new Headers({ "content-type": "application/json" }), body: '{"id":9223372036854775807,"name":"Fern","tag":"x"}' };
    expect(v.check({ method: "POST", path: "/plants", ...plant })).toEqual([]);
    expect(v.check({ method: "POST", path: "/plants", ...json(400, { error: 1003, message: "id is required." }, { "cache-control": "no-store" }) })).toEqual([]);
    expect(
      v.check({ method: "POST", path: "/UserService/connect/token", ...json(401, { error: "invalid_client", error_description: "x" }, { "cache-control": "no-store", pragma: "no-cache", "www-authenticate": 'Basic realm="plantgate", charset="UTF-8"' }) }),
    ).toEqual([]);
    expect(v.check({ method: "GET", path: "/no/such", ...json(404, { error: 1404, message: "Not found." }) })).toEqual([]);
  });

  it("refuses a wrong body, an undocumented status or code, a missing required header, and an undocumented 200", () => {
    expect(v.check({ method: "POST", path: "/plants", ...json(200, { id: "1", name: "Fern" }) })).toHaveLength(1);
    expect(v.check({ method: "POST", path: "/plants", ...json(200, { id: 1, name: "Fern", secret: "x" }) })).toHaveLength(1);
    expect(v.check({ method: "POST", path: "/plants", ...json(400, { error: 1101, message: "wrong code for this route" }, { "cache-control": "no-store" }) })).toHaveLength(1);
    // Every API error answer is no-store.
    expect(v.check({ method: "POST", path: "/plants", ...json(400, { error: 1003, message: "id is required." }) })).toEqual([
      "POST /plants 400: required header Cache-Control is missing",
    ]);
    expect(v.check({ method: "POST", path: "/plants", ...json(418, { error: 1001, message: "x" }) })).toEqual([
      "POST /plants: status 418 is not documented (documented: 200, 400, 401, 500, 503)",
    ]);
    expect(v.check({ method: "POST", path: "/UserService/connect/token", ...json(400, { error: "invalid_request", error_description: "x" }) })).toEqual([
      "POST /UserService/connect/token 400: required header Cache-Control is missing",
      "POST /UserService/connect/token 400: required header Pragma is missing",
    ]);
    expect(v.check({ method: "GET", path: "/secret", ...json(200, {}) })).toEqual(["GET /secret is not in the document but answered 200"]);
    expect(v.check({ method: "GET", path: "/docs", status: 200, headers: new Headers({ "content-type": "text/plain" }), body: "x" })).toHaveLength(1);
  });

  it("documents on every operation the 503 a server that is not ready gives on every path (unavailableResponse)", async () => {
    // The example servers while they start (Retry-After: 1), the Worker after a failed start (5).
    const app = createPlantgate({ docs: swaggerUi() });
    const text = await (await app.fetch(new Request("http://x.test/openapi.json"))).text();
    const doc = JSON.parse(text) as { paths: Record<string, Record<string, { parameters?: Array<{ name: string; schema: { enum?: string[] } }> }>> };
    const withDocs = createResponseValidator(text);
    const seen: string[] = [];
    for (const [template, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        // A real path for a template (the reference page's asset names are an enum).
        const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => op.parameters!.find((p) => p.name === name)!.schema.enum![0]!);
        for (const [message, retry] of [["The server is starting; retry shortly.", 1], ["The service is temporarily unavailable; retry later.", undefined]] as const) {
          const answer = unavailableResponse(path, message, retry);
          const body = new TextDecoder().decode(answer.body!);
          expect(withDocs.check({ method: method.toUpperCase(), path, status: answer.status, headers: new Headers(answer.headers), body }), `${method} ${path}`).toEqual([]);
        }
        seen.push(`${method} ${path}`);
      }
    }
    expect(seen).toHaveLength(10);
  });
});
