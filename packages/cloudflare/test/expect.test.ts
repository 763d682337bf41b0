/**
 * RFC 9110 §10.1.1 on the Worker, in workerd: an `Expect` that does not name `100-continue` is 417
 * in plantgate's shape, by Node's rule, which @plantgate/node keeps (README, error codes); one that
 * names it is served. Until 2026-12-01 workerd passed any expectation on and the Worker served the request (a
 * token) where Node refused it.
 */
import { request } from "node:http";
import { expect, it } from "vitest";
import { workerPerTest } from "./support.js";

const worker = workerPerTest();

function post(base: string, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { method: "POST", headers: { ...headers, "content-length": String(Buffer.byteLength(body)) } }, (res) => {
      let text = "";
      res.on("data", (c: Buffer) => (text += c.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

it("a token request with an Expect other than 100-continue is refused 417, as @plantgate/node refuses it; 100-continue is served", async () => {
  const { base } = await worker.start(`import { createWorker } from "../src/index.ts"; export default createWorker();`, {
    d1: true,
    bindings: { PLANTGATE_BOOTSTRAP_CLIENT_ID: "c1", PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "0123456789abcdef0123", PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" },
  });
  const headers = {
    "content-type": "application/x-www-form-urlencoded",
    authorization: `Basic ${Buffer.from("c1:0123456789abcdef0123").toString("base64")}`,
  };
  for (const expectation of ["foo", "200-ok", "101-continue"]) {
    const answer = await post(base, "/UserService/connect/token", { ...headers, expect: expectation }, "grant_type=client_credentials");
    expect({ status: answer.status, type: answer.headers["content-type"], cache: answer.headers["cache-control"], text: answer.text }, expectation).toEqual({
      status: 417,
      type: "application/json",
      cache: "no-store",
      text: JSON.stringify({ error: "invalid_request", error_description: "The Expect header's expectation is not supported." }),
    });
  }
  // Node's rule: a value naming 100-continue anywhere is served.
  for (const expectation of ["100-Continue", "100-continue, foo"]) {
    const served = await post(base, "/UserService/connect/token", { ...headers, expect: expectation }, "grant_type=client_credentials");
    expect(served.status, `${expectation}: ${served.text}`).toBe(200);
    expect(JSON.parse(served.text)).toMatchObject({ token_type: "Bearer" });
  }
});
