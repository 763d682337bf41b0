/**
 * Error typing: what the token endpoint says is an OAuthError, what an API says is an ApiError,
 * and no usable answer (fetch rejected, not JSON, wrong shape) is a NetworkError. All four are
 * PlantgateClientError; no message carries a secret.
 */
import { describe, expect, it } from "vitest";
import { ApiError, createClient, NetworkError, OAuthError, PlantgateClientError } from "../src/index.js";
import { BASE, CLIENT_SECRET, clientOn, fakeAccounts, fakeTokenEndpoint, newMock, rejectionOf, USER } from "./support.js";

function expectOnly(error: unknown, cls: typeof OAuthError | typeof ApiError | typeof NetworkError) {
  expect(error).toBeInstanceOf(PlantgateClientError);
  expect(error).toBeInstanceOf(Error);
  for (const other of [OAuthError, ApiError, NetworkError]) {
    if (other === cls) expect(error).toBeInstanceOf(other);
    else expect(error).not.toBeInstanceOf(other);
  }
  const text = `${(error as Error).message} ${(error as Error).stack ?? ""} ${JSON.stringify(error)}`;
  expect(text).not.toContain(CLIENT_SECRET);
  expect(text).not.toContain(USER.password);
}

describe("OAuthError", () => {
  it("carries the status, the RFC 6749 §5.2 code and description, and the grant", async () => {
    const fm = newMock();
    fm.post(
      "path:/UserService/connect/token",
      {
        status: 401,
        headers: { "www-authenticate": 'Basic realm="plantgate"' },
        body: { error: "invalid_client", error_description: "Client authentication failed.", error_uri: "https://example.test/e" },
      },
      { name: "token" },
    );
    const error = await rejectionOf(clientOn(fm, { credentials: USER }).listAccounts());
    expectOnly(error, OAuthError);
    expect(error).toMatchObject({
      name: "OAuthError",
      status: 401,
      error: "invalid_client",
      error_description: "Client authentication failed.",
      error_uri: "https://example.test/e",
      grantType: "password",
      message: "invalid_client: Client authentication failed.",
    });
  });

  it("has just the code as message when there is no description", async () => {
    const fm = newMock();
    fm.post("path:/UserService/connect/token", { status: 400, body: { error: "invalid_scope" } });
    const error = await rejectionOf(clientOn(fm).getAccessToken());
    expectOnly(error, OAuthError);
    expect(error).toMatchObject({ message: "invalid_scope", error_description: undefined, grantType: "client_credentials" });
  });
});

describe("ApiError", () => {
  it("carries the status and the {error, message} body", async () => {
    const fm = newMock();
    fakeTokenEndpoint(fm);
    fm.post("path:/plants", { status: 400, body: { error: 1006, message: "A plant with id 7 already exists." } });
    const error = await rejectionOf(clientOn(fm).createPlant({ id: 7n, name: "Fern" }));
    expectOnly(error, ApiError);
    expect(error).toMatchObject({
      name: "ApiError",
      status: 400,
      error: 1006,
      message: "A plant with id 7 already exists.",
      body: { error: 1006, message: "A plant with id 7 already exists." },
      wwwAuthenticate: null,
    });
  });

  it("covers every non-2xx status with that body (404, 405, 500, 503)", async () => {
    for (const [status, code] of [[404, 1404], [405, 1405], [500, 1500], [503, 1503]] as const) {
      const fm = newMock();
      fakeTokenEndpoint(fm);
      fm.get(`begin:${BASE}/rbac/`, { status, body: { error: code, message: "m" } });
      const error = await rejectionOf(clientOn(fm).listAccounts());
      expectOnly(error, ApiError);
      expect(error).toMatchObject({ status, error: code, retryAfter: null });
    }
  });

  it("carries the answer's Retry-After in seconds (delta-seconds, or an HTTP date counted from its Date), null without one", async () => {
    const cases: [Record<string, string>, number | null][] = [
      [{ "retry-after": "5" }, 5],
      [{ "retry-after": "Tue, 01 Dec 2026 12:00:30 GMT", date: "Tue, 01 Dec 2026 12:00:00 GMT" }, 30],
      [{ "retry-after": "Tue, 01 Dec 2026 12:00:30 GMT" }, null],
      [{ "retry-after": "soon" }, null],
      [{}, null],
    ];
    for (const [headers, retryAfter] of cases) {
      const fm = newMock();
      fakeTokenEndpoint(fm);
      fm.get(`begin:${BASE}/rbac/`, { status: 429, headers, body: { error: 1429, message: "Too many failed attempts." } });
      const error = await rejectionOf(clientOn(fm).listAccounts());
      expectOnly(error, ApiError);
      expect(error).toMatchObject({ status: 429, error: 1429, retryAfter });
    }
  });
});

describe("NetworkError", () => {
  it("a rejected fetch at the token endpoint: fetch_failed, no status, the cause kept", async () => {
    const fm = newMock();
    const cause = new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED 127.0.0.1:9") });
    fm.post("path:/UserService/connect/token", { throws: cause });
    const error = await rejectionOf(clientOn(fm).getAccessToken());
    expectOnly(error, NetworkError);
    expect(error).toMatchObject({ reason: "fetch_failed", status: null, cause });
    expect((error as Error).message).toBe("POST /UserService/connect/token failed: fetch failed (connect ECONNREFUSED 127.0.0.1:9)");
  });

  it("a rejected fetch at an API", async () => {
    const fm = newMock();
    fakeTokenEndpoint(fm);
    fm.get(`begin:${BASE}/rbac/`, { throws: new TypeError("network down") });
    const error = await rejectionOf(clientOn(fm).listAccounts({ page: 1, pageSize: 5 }));
    expectOnly(error, NetworkError);
    expect(error).toMatchObject({ reason: "fetch_failed" });
    expect((error as Error).message).toBe("GET /rbac/ServerCommand/GetAccountList failed: network down");
  });

  it("a body that cannot be read", async () => {
    const client = createClient({
      baseUrl: BASE,
      clientId: "c",
      clientSecret: CLIENT_SECRET,
      fetch: async () => ({ status: 200, headers: new Headers(), text: () => Promise.reject(new Error("socket hang up")) }),
    });
    const error = await rejectionOf(client.getAccessToken());
    expectOnly(error, NetworkError);
    expect(error).toMatchObject({ reason: "fetch_failed", status: 200 });
  });

  it("non-JSON from the token endpoint (a proxy's HTML error page)", async () => {
    const fm = newMock();
    fm.post("path:/UserService/connect/token", { status: 502, headers: { "content-type": "text/html" }, body: "<html>Bad Gateway</html>" });
    const error = await rejectionOf(clientOn(fm).getAccessToken());
    expectOnly(error, NetworkError);
    expect(error).toMatchObject({ reason: "not_json", status: 502 });
    expect((error as Error).message).toBe("token endpoint: HTTP 502 without an OAuth error body (text/html, not JSON)");
  });

  it("non-JSON from the token endpoint with a 4xx status other than 429: a body that is not JSON, as before (the message naming a missing OAuth error body is a 429's or 5xx's)", async () => {
    const fm = newMock();
    fm.post("path:/UserService/connect/token", { status: 400, headers: { "content-type": "text/html" }, body: "<html>Bad Request</html>" });
    const error = await rejectionOf(clientOn(fm).getAccessToken());
    expectOnly(error, NetworkError);
    expect(error).toMatchObject({ reason: "not_json", status: 400 });
    expect((error as Error).message).toBe("token endpoint: HTTP 400 with a body that is not JSON (text/html)");
  });

  it("non-JSON from an API, on success and on failure", async () => {
    for (const status of [200, 500]) {
      const fm = newMock();
      fakeTokenEndpoint(fm);
      fm.get(`begin:${BASE}/rbac/`, { status, body: "oops" });
      fm.post("path:/plants", { status, body: "" });
      const client = clientOn(fm);
      const listing = await rejectionOf(client.listAccounts());
      expectOnly(listing, NetworkError);
      expect(listing).toMatchObject({ reason: "not_json", status });
      const plant = await rejectionOf(client.createPlant({ id: 1n, name: "x" }));
      expectOnly(plant, NetworkError);
      expect(plant).toMatchObject({ reason: "not_json", status });
    }
  });

  it("JSON of the wrong shape: unexpected_response", async () => {
    const cases: [string, unknown][] = [
      ["200 without access_token", { token_type: "Bearer" }],
      ["token_type not Bearer", { access_token: "a", token_type: "mac", expires_in: 60 }],
      ["expires_in not a number", { access_token: "a", token_type: "Bearer", expires_in: "soon" }],
      ["refresh_token not a string", { access_token: "a", token_type: "Bearer", expires_in: 60, refresh_token: 5 }],
    ];
    for (const [what, body] of cases) {
      const fm = newMock();
      fm.post("path:/UserService/connect/token", { status: 200, body });
      const error = await rejectionOf(clientOn(fm).getAccessToken());
      expectOnly(error, NetworkError);
      expect(error, what).toMatchObject({ reason: "unexpected_response", status: 200 });
    }
    const fm = newMock();
    fm.post("path:/UserService/connect/token", { status: 400, body: { error: 1001, message: "an API error at the token path" } });
    expect(await rejectionOf(clientOn(fm).getAccessToken())).toMatchObject({ name: "NetworkError", reason: "unexpected_response", status: 400 });

    const api = newMock();
    fakeTokenEndpoint(api);
    api.get(`begin:${BASE}/rbac/`, { status: 400, body: { error: "bad", message: "not an int32 code" } });
    api.post("path:/plants", { status: 200, body: { id: 1.5, name: "x" } });
    const client = clientOn(api);
    expect(await rejectionOf(client.listAccounts())).toMatchObject({ name: "NetworkError", reason: "unexpected_response", status: 400 });
    expect(await rejectionOf(client.createPlant({ id: 1n, name: "x" }))).toMatchObject({ name: "NetworkError", reason: "unexpected_response" });
  });

  it("a page that is not an account page", async () => {
    const fm = newMock();
    fakeTokenEndpoint(fm);
    fm.get(`begin:${BASE}/rbac/`, { status: 200, body: { accounts: [], page: "1", pageSize: 20, total: 0, totalPages: 0 } });
    expect(await rejectionOf(clientOn(fm).listAccounts())).toMatchObject({ name: "NetworkError", reason: "unexpected_response" });
  });
});

describe("argument errors are TypeErrors, thrown at once", () => {
  const ok = { baseUrl: BASE, clientId: "c", clientSecret: "s" };
  it.each([
    ["baseUrl not a URL", { baseUrl: "not a url" }],
    ["baseUrl not http(s)", { baseUrl: "ftp://x.test" }],
    ["baseUrl with a query", { baseUrl: "https://x.test/?a=1" }],
    // Empty: URL's search and hash say "", but the ? or # stayed in the paths built on it.
    ["baseUrl with an empty query", { baseUrl: "https://x.test/api?" }],
    ["baseUrl with an empty fragment", { baseUrl: "https://x.test/api#" }],
    ["baseUrl at the root with an empty query", { baseUrl: "https://x.test/?" }],
    ["empty clientId", { clientId: "" }],
    ["empty clientSecret", { clientSecret: "" }],
    ["unknown auth", { auth: "jwt" }],
    ["scope with a quote", { scope: 'a"b' }],
    ["credentials without password", { credentials: { username: "u" } }],
    ["negative skew", { refreshSkewSeconds: -1 }],
    ["negative jitter", { refreshJitterSeconds: -1 }],
    ["jitter not a number", { refreshJitterSeconds: Number.NaN }],
    ["fetch not a function", { fetch: "fetch" }],
    ["tokenCache without set", { tokenCache: { get: async () => null } }],
  ])("%s", (_name, patch) => {
    expect(() => createClient({ ...ok, ...(patch as object) } as Parameters<typeof createClient>[0])).toThrow(TypeError);
  });

  it("plant arguments: a non-bigint id is a TypeError, an id outside int64 a RangeError, and nothing is sent", async () => {
    const fm = newMock();
    fakeTokenEndpoint(fm);
    fakeAccounts(fm);
    const client = clientOn(fm);
    await expect(client.createPlant({ id: 42 as unknown as bigint, name: "x" })).rejects.toThrow(TypeError);
    await expect(client.createPlant({ id: 2n ** 63n, name: "x" })).rejects.toThrow(RangeError);
    await expect(client.createPlant({ id: -(2n ** 63n) - 1n, name: "x" })).rejects.toThrow(RangeError);
    await expect(client.createPlant({ id: 1n, name: 5 as unknown as string })).rejects.toThrow(TypeError);
    expect(fm.callHistory.calls()).toHaveLength(0);
  });
});
