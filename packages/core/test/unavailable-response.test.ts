/** unavailableResponse: the 503 an embedding server gives before its app is ready, in each endpoint's shape. */
import { describe, expect, it } from "vitest";
import { INTROSPECTION_PATH, REVOCATION_PATH, TOKEN_PATH, unavailableResponse } from "../src/index.js";

const text = (body: Uint8Array | null) => new TextDecoder().decode(body ?? new Uint8Array());

describe("unavailableResponse", () => {
  it("on the token, revocation and introspection paths (under any base path): RFC 6749 §5.2's shape with no-store, no-cache and Retry-After", () => {
    for (const path of [TOKEN_PATH, REVOCATION_PATH, INTROSPECTION_PATH, `/auth${TOKEN_PATH}`]) {
      const answer = unavailableResponse(path, "The server is starting; retry shortly.", 1);
      expect([path, answer.status, answer.headers, text(answer.body)]).toEqual([
        path,
        503,
        { "content-type": "application/json", "content-length": "96", "cache-control": "no-store", pragma: "no-cache", "retry-after": "1" },
        '{"error":"temporarily_unavailable","error_description":"The server is starting; retry shortly."}',
      ]);
    }
  });

  it("anywhere else: the API's {error: 1503, message} with no-store and Retry-After (5 s unless given)", () => {
    for (const path of ["/plants", "/.well-known/jwks.json", `${TOKEN_PATH}/x`, "", "/console/api/session"]) {
      const answer = unavailableResponse(path, "The service is temporarily unavailable; retry later.");
      expect([path, answer.status, answer.headers, text(answer.body)]).toEqual([
        path,
        503,
        { "content-type": "application/json", "content-length": "79", "cache-control": "no-store", "retry-after": "5" },
        '{"error":1503,"message":"The service is temporarily unavailable; retry later."}',
      ]);
    }
  });
});
