/**
 * Every error answer of the app is `Cache-Control: no-store`, as written on the socket by the Node
 * adapter: the API routes' (plants, GetAccountList, the JWKS, unknown paths) as GetAccountList's
 * 200 and the API's 429 and 503 already were, the token, revocation and introspection endpoints'
 * with `Pragma: no-cache` too (RFC 6749 §5.1, §5.2). Until 2026-12-02 the API's 400, 401, 403,
 * 404, 405, 500 and storage 503 carried no Cache-Control: a 401 or 403 with its WWW-Authenticate
 * challenge, or GetAccountList's 400, could be kept by a cache between client and server, and a
 * 404 or 405 is cacheable by default (RFC 9110 §15.1).
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, StorageError, type Storage } from "@plantgate/core";
import { rawExchange, start } from "./support.js";

const CLIENT_ID = "cache-client";
const CLIENT_SECRET = "cache-client-secret-0123456789";
const BASIC = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64")}`;
const ACCOUNTS = "/rbac/ServerCommand/GetAccountList";
const FORM = "application/x-www-form-urlencoded";

/** The app on a real port; `failing` makes every account list a StorageError (503) or a plain Error (500). */
async function served(failing?: "storage" | "bug") {
  const memory = createMemoryStorage();
  const storage: Storage = failing
    ? {
        ...memory,
        accounts: {
          ...memory.accounts,
          async list() {
            throw failing === "storage" ? new StorageError("down") : new Error("bug");
          },
        },
      }
    : memory;
  // GetAccountList takes one scope only, so the client's other scope gets the 403.
  const app = createPlantgate({ storage, passwordHashIterations: 1000, logger: { error() {}, warn() {} }, requiredScopes: { listAccounts: ["Platform_UserAPIs"] } });
  await app.admin.createClient({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET });
  const { url } = await start(app);
  return url;
}

/** One request on a fresh connection: status and every header but Date (its value varies), in wire order. */
async function exchange(url: string, method: string, path: string, headers: Record<string, string> = {}, body = "") {
  const lines = Object.entries({ host: "as.example.test", ...headers, ...(body || method === "POST" ? { "content-length": String(Buffer.byteLength(body)) } : {}) })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  const res = await rawExchange(url, `${method} ${path} HTTP/1.1\r\n${lines}\r\n${body}`);
  return { status: res.status, headers: res.headers.filter(([name]) => name !== "date"), body: res.body.toString() };
}

/** An access token of the client with `scope`. */
async function token(url: string, scope: string): Promise<string> {
  const res = await exchange(url, "POST", "/UserService/connect/token", { authorization: BASIC, "content-type": FORM }, `grant_type=client_credentials&scope=${scope}`);
  return (JSON.parse(res.body) as { access_token: string }).access_token;
}

const KEEP = [["connection", "keep-alive"], ["keep-alive", "timeout=5"]];
/** An API error answer, whole: `{error, message}`, the route's own headers (`more`), then no-store. */
const api = (status: number, error: number, message: string, more: string[][] = []) => {
  const body = JSON.stringify({ error, message });
  return { status, headers: [["content-type", "application/json"], ["content-length", String(Buffer.byteLength(body))], ...more, ["cache-control", "no-store"], ...KEEP], body };
};

describe("Cache-Control on error answers (over node:http)", () => {
  it("the API routes' 400, 401, 403, 404 and 405 are no-store, as GetAccountList's 200", async () => {
    const url = await served();
    const lister = await token(url, "Platform_UserAPIs");
    const other = await token(url, "Platform_AllAppsServerCommands");
    const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
    const cases: Array<[Awaited<ReturnType<typeof exchange>>, ReturnType<typeof api>]> = [
      [await exchange(url, "GET", ACCOUNTS), api(401, 1201, "An access token is required.", [["www-authenticate", 'Bearer realm="plantgate"']])],
      [
        await exchange(url, "GET", ACCOUNTS, { authorization: "Bearer a b" }),
        api(401, 1204, "The Authorization header must be 'Bearer <token>'.", [["www-authenticate", `Bearer realm="plantgate", error="invalid_request", error_description="The Authorization header must be 'Bearer <token>'."`]]),
      ],
      [await exchange(url, "GET", `${ACCOUNTS}?page=0`, bearer(lister)), api(400, 1101, "page must be an integer from 1 to 2147483647.")],
      [await exchange(url, "POST", ACCOUNTS), api(405, 1405, "Use GET, HEAD for this endpoint.", [["allow", "GET, HEAD"]])],
      [
        await exchange(url, "POST", "/plants", { authorization: "Bearer nope", "content-type": "application/json" }, "{}"),
        api(401, 1202, "The access token is invalid or expired.", [["www-authenticate", 'Bearer realm="plantgate", error="invalid_token", error_description="The access token is invalid or expired."']]),
      ],
      [await exchange(url, "POST", "/plants", { ...bearer(lister), "content-type": "application/json" }, "{"), api(400, 1001, "The body is not valid JSON: unexpected end of JSON input.")],
      [await exchange(url, "GET", "/nope"), api(404, 1404, "Not found.")],
      [await exchange(url, "DELETE", "/.well-known/jwks.json"), api(405, 1405, "Use GET, HEAD for this endpoint.", [["allow", "GET, HEAD"]])],
    ];
    // A token without the route's scope: a 403 with its challenge.
    cases.push([
      await exchange(url, "GET", ACCOUNTS, bearer(other)),
      api(403, 1203, "This operation needs one of the scopes: Platform_UserAPIs.", [["www-authenticate", 'Bearer realm="plantgate", error="insufficient_scope", scope="Platform_UserAPIs"']]),
    ]);
    for (const [res, want] of cases) expect(res).toEqual(want);
    // The success it now matches.
    const ok = await exchange(url, "GET", ACCOUNTS, bearer(lister));
    expect(ok.status).toBe(200);
    expect(ok.headers).toEqual([["content-type", "application/json"], ["content-length", String(Buffer.byteLength(ok.body))], ["cache-control", "no-store"], ...KEEP]);
  });

  it("the API's 500 and storage 503 are no-store", async () => {
    const down = await served("storage");
    const t503 = await token(down, "Platform_UserAPIs");
    expect(await exchange(down, "GET", ACCOUNTS, { authorization: `Bearer ${t503}` })).toEqual(
      api(503, 1503, "The service is temporarily unavailable; retry later.", [["retry-after", "5"]]),
    );
    const bug = await served("bug");
    const t500 = await token(bug, "Platform_UserAPIs");
    expect(await exchange(bug, "GET", ACCOUNTS, { authorization: `Bearer ${t500}` })).toEqual(api(500, 1500, "The server encountered an unexpected error."));
  });

  it("the token, revocation and introspection endpoints' errors stay no-store with Pragma (RFC 6749 §5.1, §5.2)", async () => {
    const url = await served();
    const oauth = (status: number, body: string, more: string[][] = []) => ({
      status,
      headers: [["content-type", "application/json"], ["content-length", String(Buffer.byteLength(body))], ["cache-control", "no-store"], ["pragma", "no-cache"], ...more, ...KEEP],
      body,
    });
    const unauthenticated = '{"error":"invalid_client","error_description":"Client authentication is required (HTTP Basic, client_id and client_secret, or a client assertion)."}';
    const wrongMethod = '{"error":"invalid_request","error_description":"Use POST for this endpoint."}';
    for (const path of ["/UserService/connect/token", "/UserService/connect/revocation", "/UserService/connect/introspect"]) {
      expect(await exchange(url, "POST", path, { "content-type": FORM }, "token=x&grant_type=client_credentials"), path).toEqual(
        oauth(401, unauthenticated, [["www-authenticate", 'Basic realm="plantgate", charset="UTF-8"']]),
      );
      expect(await exchange(url, "GET", path), path).toEqual({
        status: 405,
        headers: [["content-type", "application/json"], ["content-length", String(wrongMethod.length)], ["allow", "POST"], ["cache-control", "no-store"], ["pragma", "no-cache"], ...KEEP],
        body: wrongMethod,
      });
    }
  });
});
