/**
 * A host that called `req.setEncoding()` before handing the request to plantgate (a logging or
 * framework layer that sets it without reading) makes Node deliver strings: plantgate's body readers
 * took each string for a zero-byte chunk, so the body read as EMPTY and the client got a 400
 * blaming its request ("The grant_type parameter is required."). The README: "Never make up an
 * empty body instead: plantgate would take it for what the client sent." Now a lossless encoding's
 * strings (latin1/binary, hex, base64, base64url) are turned back into the exact bytes, and any
 * other encoding's (utf8 replaced what it could not decode) is the host fault of a body already
 * consumed: plantgate's documented 500 (README, "A body something else read first").
 */
import { createHash, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createPlantgate } from "@plantgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { createRequestListener, type FetchApp, type HandleApp } from "../src/index.js";

const servers: Array<ReturnType<typeof createServer>> = [];
afterEach(() => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    server.close();
  }
});

/** A server that sets `encoding` on each request, then hands it to `listener`. */
async function withEncoding(encoding: BufferEncoding, listener: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer((req, res) => {
    req.setEncoding(encoding);
    listener(req, res);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const SERVER_ERROR = '{"error":"server_error","error_description":"The server encountered an unexpected error."}';
const LOSSLESS = ["latin1", "binary", "hex", "base64", "base64url"] as const;
const LOSSY = ["utf8", "utf-8", "utf16le", "ascii"] as const;

async function plantgateWithClient() {
  const errors: unknown[] = [];
  const pg = createPlantgate({ basePath: "/auth", passwordHashIterations: 1000, logger: { error: (...args: unknown[]) => errors.push(args), warn() {} } as unknown as Console });
  const { clientSecret } = await pg.admin.createClient({ clientId: "c1" });
  return { pg, clientSecret, errors };
}

function tokenRequest(base: string, clientSecret: string, body: string): Promise<Response> {
  return fetch(`${base}/auth/UserService/connect/token`, {
    method: "POST",
    headers: { authorization: `Basic ${btoa(`c1:${clientSecret}`)}`, "content-type": "application/x-www-form-urlencoded" },
    body,
  });
}

describe("req.setEncoding() before the listener", () => {
  for (const encoding of LOSSLESS) {
    it(`${encoding}: a client-credentials token request gets its token, and a plant's int64 id stays exact`, async () => {
      const { pg, clientSecret } = await plantgateWithClient();
      const base = await withEncoding(encoding, createRequestListener(pg));
      const res = await tokenRequest(base, clientSecret, "grant_type=client_credentials");
      const token = (await res.json()) as Record<string, unknown>;
      expect({ status: res.status, keys: Object.keys(token).sort(), token_type: token.token_type }).toEqual({
        status: 200,
        keys: ["access_token", "expires_in", "scope", "token_type"],
        token_type: "Bearer",
      });
      const plant = await fetch(`${base}/auth/plants`, {
        method: "POST",
        headers: { authorization: `Bearer ${token.access_token as string}`, "content-type": "application/json" },
        body: '{"id":9007199254740993,"name":"Fern é ☃"}',
      });
      expect({ status: plant.status, body: await plant.text() }).toEqual({ status: 200, body: '{"id":9007199254740993,"name":"Fern é ☃"}' });
    });
  }

  for (const encoding of LOSSY) {
    it(`${encoding}: a token request is plantgate's documented 500 (a host fault), not the client's 400`, async () => {
      const { pg, clientSecret, errors } = await plantgateWithClient();
      const base = await withEncoding(encoding, createRequestListener(pg));
      const res = await tokenRequest(base, clientSecret, "grant_type=client_credentials");
      expect({ status: res.status, type: res.headers.get("content-type"), cache: res.headers.get("cache-control"), body: await res.text() }).toEqual({
        status: 500,
        type: "application/json",
        cache: "no-store",
        body: SERVER_ERROR,
      });
      expect(JSON.stringify(errors)).toContain("PlantgateBodyConsumedError");
      // The connection is still usable: the next request on it is answered.
      const again = await fetch(`${base}/auth/.well-known/jwks.json`);
      expect(again.status).toBe(200);
    });

    it(`${encoding}: an empty body is still the empty body the client sent (its 400)`, async () => {
      const { pg, clientSecret } = await plantgateWithClient();
      const base = await withEncoding(encoding, createRequestListener(pg));
      const res = await tokenRequest(base, clientSecret, "");
      expect({ status: res.status, body: await res.text() }).toEqual({
        status: 400,
        body: '{"error":"invalid_request","error_description":"The grant_type parameter is required."}',
      });
    });
  }

  // A large body arrives in many chunks: each string chunk must turn back into its own bytes
  // (base64 carries a remainder of up to 2 bytes over to the next chunk, flushed at the end).
  const bytes = randomBytes(3 * 1024 * 1024 + 1);
  const digest = createHash("sha256").update(bytes).digest("hex");
  const hashOf = (body: Uint8Array | null) => ({ size: body?.byteLength, sha256: body === null ? null : createHash("sha256").update(body).digest("hex") });
  const viaStream: FetchApp = { fetch: async (request) => Response.json(hashOf(new Uint8Array(await request.arrayBuffer()))) };
  const viaReadBody: HandleApp = {
    handle: async (_request, info) => {
      const body = new TextEncoder().encode(JSON.stringify(hashOf((await info!.readBody!(Infinity)) ?? null)));
      return { status: 200, headers: { "content-type": "application/json", "content-length": String(body.byteLength) }, body };
    },
  };
  for (const encoding of LOSSLESS) {
    for (const [name, app] of [["request.arrayBuffer()", viaStream], ["info.readBody", viaReadBody]] as const) {
      it(`${encoding}: a 3 MiB binary upload read through ${name} arrives byte for byte`, async () => {
        const base = await withEncoding(encoding, createRequestListener(app));
        const res = await fetch(`${base}/upload`, { method: "POST", body: bytes });
        expect(await res.json()).toEqual({ size: bytes.byteLength, sha256: digest });
      });
    }
  }
  for (const [name, app] of [["request.arrayBuffer()", viaStream], ["info.readBody", viaReadBody]] as const) {
    it(`utf8: reading through ${name} fails with the PlantgateBodyConsumedError (the listener's 500)`, async () => {
      const seen: unknown[] = [];
      const base = await withEncoding("utf8", createRequestListener(app, { onError: (error) => seen.push(error) }));
      const res = await fetch(`${base}/upload`, { method: "POST", body: bytes });
      expect({ status: res.status, body: await res.text() }).toEqual({ status: 500, body: SERVER_ERROR });
      expect(seen.map((error) => [(error as Error).name, (error as { code?: string }).code, (error as Error).message])).toEqual([
        [
          "PlantgateBodyConsumedError",
          "PLANTGATE_BODY_CONSUMED",
          "plantgate: the request body was decoded to utf8 (req.setEncoding()) before plantgate read it, and its bytes cannot be recovered; do not set an encoding on the requests plantgate answers",
        ],
      ]);
    });
  }
});
