/**
 * `req.setEncoding()` called by a middleware in front of plantgate (one that sets it without reading)
 * made Node deliver strings, which plantgate's body readers took for zero-byte chunks: the body read
 * as empty and a valid token request got the client's 400 "The grant_type parameter is required.".
 * Now a lossless encoding's strings are turned back into the bytes, and a lossy one's (utf8) is the
 * host fault of a consumed body: plantgate's documented 500 (README, Express, "Mount order").
 */
import express from "express";
import { describe, expect, it } from "vitest";
import { plantgate } from "../src/index.js";
import { basic, clientToken, listen, plantgateApp } from "./support.js";

async function hostApp(encoding: BufferEncoding): Promise<string> {
  const pg = await plantgateApp();
  const app = express();
  app.use((req, _res, next) => {
    req.setEncoding(encoding);
    next();
  });
  app.use(plantgate(pg));
  return `${await listen(app)}/auth`;
}

function tokenRequest(base: string, body: string): Promise<Response> {
  return fetch(`${base}/UserService/connect/token`, {
    method: "POST",
    headers: { authorization: basic(), "content-type": "application/x-www-form-urlencoded" },
    body,
  });
}

describe("Express: req.setEncoding() before plantgate", () => {
  for (const encoding of ["latin1", "hex", "base64"] as const) {
    it(`${encoding}: the token request gets its token, and a plant's int64 id stays exact`, async () => {
      const base = await hostApp(encoding);
      const access = await clientToken(base);
      const plant = await fetch(`${base}/plants`, {
        method: "POST",
        headers: { authorization: `Bearer ${access}`, "content-type": "application/json" },
        body: '{"id":9223372036854775807,"name":"Monstera é"}',
      });
      expect({ status: plant.status, body: await plant.text() }).toEqual({ status: 200, body: '{"id":9223372036854775807,"name":"Monstera é"}' });
    });
  }

  for (const encoding of ["utf8", "utf16le"] as const) {
    it(`${encoding}: the token request is plantgate's 500, not the client's 400; an empty body stays the client's 400`, async () => {
      const base = await hostApp(encoding);
      const res = await tokenRequest(base, "grant_type=client_credentials");
      expect({ status: res.status, type: res.headers.get("content-type"), cache: res.headers.get("cache-control"), body: await res.text() }).toEqual({
        status: 500,
        type: "application/json",
        cache: "no-store",
        body: '{"error":"server_error","error_description":"The server encountered an unexpected error."}',
      });
      const empty = await tokenRequest(base, "");
      expect({ status: empty.status, body: await empty.text() }).toEqual({
        status: 400,
        body: '{"error":"invalid_request","error_description":"The grant_type parameter is required."}',
      });
    });
  }
});
