/**
 * Node-only part of the HTTP suite: requests whose client half-closes the connection (sends FIN)
 * right after the request, and then reads the answer, as `nc -N`, some HTTP/1.0 clients and scripts
 * that end their socket do. RFC 9112 §9.6: "A half-closed TCP connection does not delimit a request
 * message, nor does it imply that the client is no longer interested in a response." Each must get
 * its whole answer: an answer that is not ready the moment the FIN arrives (a password hash, a
 * store write) was lost on Node's http server before 2026-11-30 (the connection closed with no
 * answer). Nothing is retried, and a reset or an empty close is a failure (see {@link rawUpload}).
 *
 * Runner-independent: a runner registers {@link describeHalfClosedRequests} through
 * `HttpSuiteTarget.moreTests`, and it runs against that runner's server.
 */
import { describe, expect, it } from "vitest";
import { rawUpload, type RawAnswer } from "./raw-upload.js";
import { ACCOUNTS_PATH, PLANTS_PATH, TOKEN_PATH, type RunningTarget } from "./suite.js";

const FORM = "application/x-www-form-urlencoded";

function basic(id: string, secret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, "+");
  return `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString("base64")}`;
}

/** A token answer's body, checked whole but for the token itself. */
function tokenBody(answer: RawAnswer): { access_token: string } {
  expect({ status: answer.status, type: answer.headers.get("content-type"), cacheControl: answer.headers.get("cache-control") }, answer.text).toEqual({
    status: 200,
    type: "application/json",
    cacheControl: "no-store",
  });
  const body = JSON.parse(answer.text) as { access_token: string };
  expect(body).toEqual({
    access_token: expect.any(String),
    token_type: "Bearer",
    expires_in: 7200,
    scope: "Platform_UserAPIs Platform_AllAppsServerCommands",
  });
  return body;
}

/** Registers the half-closed cases; `srv` gives the running target once the suite started it. */
export function describeHalfClosedRequests(srv: () => RunningTarget): void {
  let nextId = 9_000_000_000_000n + BigInt(Math.floor(Math.random() * 1_000_000)) * 1000n;
  const halfClosed = (path: string, body: string, headers: Record<string, string>, connectionClose = true, method = "POST") =>
    rawUpload(`${srv().baseUrl}${path}`, body, { method, headers, halfClose: true, connectionClose, timeoutMs: 30_000 });
  const clientToken = async () =>
    tokenBody(
      await halfClosed(TOKEN_PATH, "grant_type=client_credentials", { authorization: basic(srv().clientId, srv().clientSecret), "content-type": FORM }),
    ).access_token;

  describe("requests from a client that half-closes once its request is sent", () => {
    it("client credentials: the token", async () => {
      await clientToken();
    });

    it("the password grant (its hash takes a while): the token, with and without Connection: close", async () => {
      const form = `grant_type=password&username=${encodeURIComponent(srv().username)}&password=${encodeURIComponent(srv().password)}`;
      const headers = { authorization: basic(srv().clientId, srv().clientSecret), "content-type": FORM };
      tokenBody(await halfClosed(TOKEN_PATH, form, headers));
      tokenBody(await halfClosed(TOKEN_PATH, form, headers, false));
    });

    it("a wrong client secret: 401 invalid_client, whole", async () => {
      const answer = await halfClosed(TOKEN_PATH, "grant_type=client_credentials", { authorization: basic(srv().clientId, "wrong-secret"), "content-type": FORM });
      expect({ status: answer.status, challenge: answer.headers.get("www-authenticate"), text: answer.text }).toEqual({
        status: 401,
        challenge: 'Basic realm="plantgate", charset="UTF-8"',
        text: `{"error":"invalid_client","error_description":"Client authentication failed."}`,
      });
    });

    it("POST /plants with a bearer token: stored and echoed", async () => {
      const id = (nextId += 1n).toString();
      const answer = await halfClosed(PLANTS_PATH, `{"id":${id},"name":"Half-closed"}`, { authorization: `Bearer ${await clientToken()}`, "content-type": "application/json" });
      expect({ status: answer.status, text: answer.text }).toEqual({ status: 200, text: `{"id":${id},"name":"Half-closed"}` });
    });

    it("GetAccountList (a GET without a body) with a bearer token: the first page", async () => {
      const token = await clientToken();
      const answer = await halfClosed(ACCOUNTS_PATH, "", { authorization: `Bearer ${token}` }, false, "GET");
      expect(answer.status, answer.text).toBe(200);
      const page = JSON.parse(answer.text) as { accounts: unknown[]; page: number; pageSize: number };
      expect(Object.keys(page).sort()).toEqual(["accounts", "page", "pageSize", "total", "totalPages"]);
      expect({ page: page.page, pageSize: page.pageSize, accounts: page.accounts.length }).toEqual({ page: 1, pageSize: 20, accounts: 20 });
    });
  });
}
