/**
 * The Worker's own refusals (answered before plantgate's app: an `Expect` other than 100-continue,
 * `Content-Length` beside `Transfer-Encoding`, and, under a compatibility date that keeps workerd's
 * legacy URL parser, a URL that parser cannot read) side by side with @plantgate/node's answers to
 * the same requests (the last: to a request a Web Request cannot carry, `TRACE`, the same 400):
 * status, body and the headers a client or cache reads (`Content-Type`, `Cache-Control`, `Pragma`)
 * are the same. Until 2026-12-02 the legacy-URL 400 said `application/json; charset=utf-8`.
 */
import { connect } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate } from "@plantgate/core";
// @plantgate/node, from its source (as the CLI's tests reach storage-sql's): not a dependency of this package.
import { serve, type ServeResult } from "../../node/src/index.js";
import { workerPerTest } from "./support.js";

const worker = workerPerTest();
let node: ServeResult;
beforeAll(async () => {
  node = await serve(createPlantgate({ storage: createMemoryStorage(), passwordHashIterations: 1000, logger: { error() {}, warn() {} } }), { port: 0, host: "127.0.0.1" });
});
afterAll(() => node.close());

/** Writes `text` on a fresh socket; the first answer's status, the headers compared and the body (by its Content-Length). */
function answer(base: string, text: string): Promise<{ status: string; "content-type": string | null; "cache-control": string | null; pragma: string | null; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let out = "";
    const done = () => {
      const end = out.indexOf("\r\n\r\n");
      if (end < 0) return false;
      const head = out.slice(0, end).split("\r\n");
      const header = (name: string) => head.find((l) => l.toLowerCase().startsWith(`${name}:`))?.slice(name.length + 1).trim() ?? null;
      const length = Number(header("content-length"));
      if (out.length < end + 4 + length) return false;
      socket.destroy();
      resolve({ status: head[0]!.slice(0, 12), "content-type": header("content-type"), "cache-control": header("cache-control"), pragma: header("pragma"), body: out.slice(end + 4, end + 4 + length) });
      return true;
    };
    socket.on("data", (chunk: Buffer) => {
      out += chunk.toString("latin1");
      done();
    });
    socket.on("error", reject);
    socket.on("close", () => done() || reject(new Error(`no whole answer: ${JSON.stringify(out)}`)));
    socket.write(text);
  });
}

const form = "grant_type=client_credentials";
const token = (host: string, extra: string, body: string) => `POST /UserService/connect/token HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/x-www-form-urlencoded\r\n${extra}\r\n${body}`;
const ENTRY = `import { createWorker } from "../src/index.ts"; export default createWorker();`;

it("an Expect other than 100-continue (417) and Content-Length beside Transfer-Encoding (400): the Worker's answer is the Node adapter's", { timeout: 30_000 }, async () => {
  const { base } = await worker.start(ENTRY, { d1: true });
  const chunked = `${form.length.toString(16)}\r\n${form}\r\n0\r\n\r\n`;
  const requests = {
    expect: (host: string) => token(host, `Content-Length: ${form.length}\r\nExpect: foo\r\n`, form),
    framing: (host: string) => token(host, `Content-Length: ${chunked.length}\r\nTransfer-Encoding: chunked\r\n`, chunked),
  };
  for (const [name, request] of Object.entries(requests)) {
    const fromWorker = await answer(base, request(new URL(base).host));
    const fromNode = await answer(node.url, request(new URL(node.url).host));
    expect(fromWorker, name).toEqual(fromNode);
  }
  expect(await answer(base, requests.expect(new URL(base).host))).toEqual({
    status: "HTTP/1.1 417",
    "content-type": "application/json",
    "cache-control": "no-store",
    pragma: null,
    body: '{"error":"invalid_request","error_description":"The Expect header\'s expectation is not supported."}',
  });
});

it("a URL workerd's legacy URL parser cannot read (compatibility date before 2022-10-31): the Worker's 400 is the Node adapter's for a request a Web Request cannot carry (it said charset=utf-8)", { timeout: 30_000 }, async () => {
  const { base } = await worker.start(ENTRY, { d1: true, compatibilityDate: "2022-10-30" });
  const fromWorker = await answer(base, `GET /.well-known/jwks.json?q=%ZZ HTTP/1.1\r\nHost: ${new URL(base).host}\r\n\r\n`);
  const fromNode = await answer(node.url, `TRACE / HTTP/1.1\r\nHost: ${new URL(node.url).host}\r\n\r\n`);
  expect(fromWorker).toEqual({
    status: "HTTP/1.1 400",
    "content-type": "application/json",
    "cache-control": "no-store",
    pragma: null,
    body: '{"error":"invalid_request","error_description":"The request cannot be processed."}',
  });
  expect(fromWorker).toEqual(fromNode);
});
