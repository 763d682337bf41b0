/**
 * The minimal Worker bundle in workerd under an old and a current compatibility date. Before
 * 2022-10-31 workerd keeps its legacy URL parser, which throws on URLs the standard one takes
 * (`?q=%ZZ`); core parses `request.url`, so such a request was a 500 on every route. The Worker
 * detects that parser once and answers those URLs 400 `invalid_request` instead.
 */
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleWorker } from "../src/bundle-worker.js";

let script: string;
beforeAll(async () => {
  script = (await bundleWorker("minimal")).script;
}, 60_000);

const running: Miniflare[] = [];
afterAll(async () => {
  await Promise.all(running.map((mf) => mf.dispose()));
});

async function workerOn(compatibilityDate: string): Promise<string> {
  const mf = new Miniflare({ modules: true, script, compatibilityDate, d1Databases: ["DB"], bindings: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" } });
  running.push(mf);
  return (await mf.ready).origin;
}

describe("compatibility dates", () => {
  it("2022-10-30 (the legacy URL parser): a URL that parser refuses is 400 invalid_request on every route, never a 500; other requests are served", async () => {
    const origin = await workerOn("2022-10-30");
    for (const path of ["/.well-known/jwks.json?q=%ZZ", "/UserService/connect/token?x=%E0%A4%A", "/rbac/ServerCommand/GetAccountList?page=%ZZ", "/openapi.json?%ZZ"]) {
      const res = await fetch(`${origin}${path}`, path.includes("connect/token") ? { method: "POST", body: "grant_type=client_credentials", headers: { "content-type": "application/x-www-form-urlencoded" } } : {});
      expect({ path, status: res.status, type: res.headers.get("content-type"), body: await res.json() }).toEqual({
        path,
        status: 400,
        // As the Node adapter's 400 (until 2026-12-02 it added "; charset=utf-8").
        type: "application/json",
        body: { error: "invalid_request", error_description: "The request cannot be processed." },
      });
    }
    const jwks = await fetch(`${origin}/.well-known/jwks.json`);
    expect(jwks.status).toBe(200);
    expect(((await jwks.json()) as { keys: unknown[] }).keys).toHaveLength(1);
  }, 60_000);

  it("a current date: the same URL is taken as the standard parser takes it (the JWKS served)", async () => {
    const origin = await workerOn("2026-04-26");
    const res = await fetch(`${origin}/.well-known/jwks.json?q=%ZZ`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { keys: unknown[] }).keys).toHaveLength(1);
  }, 60_000);
});
