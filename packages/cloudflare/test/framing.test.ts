/**
 * RFC 9112 §6.1/§6.3 on the Worker, in workerd: a request with both `Transfer-Encoding: chunked` and
 * `Content-Length` is ambiguous framing (the request-smuggling shape). @plantgate/node refuses it
 * 400 in plantgate's shape with `Connection: close` (README, "What never reaches a listener"), and
 * workerd does not refuse it: it reads the body as chunked, hands the Worker both headers, and keeps
 * the connection open; the bytes after the chunked body are then served as a request of their own.
 * The Worker sees both headers and refuses the request as Node does (until 2026-12-01 it issued a
 * token), as it refuses an Expect other than 100-continue.
 */
import { connect } from "node:net";
import { expect, it } from "vitest";
import { workerPerTest } from "./support.js";

const worker = workerPerTest();

/** Writes `text` on a fresh socket and gathers what comes back for `ms`. */
function raw(base: string, text: string, ms = 2000): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let out = "";
    socket.on("data", (chunk: Buffer) => (out += chunk.toString("latin1")));
    socket.on("error", () => {});
    socket.on("close", () => resolve(out));
    socket.write(text);
    setTimeout(() => {
      socket.destroy();
      resolve(out);
    }, ms);
  });
}

const BASIC = `Basic ${Buffer.from("c1:0123456789abcdef0123").toString("base64")}`;

/** The default Worker on D1, with the client `BASIC` names bootstrapped. */
const startWorker = () =>
  worker.start(`import { createWorker } from "../src/index.ts"; export default createWorker();`, {
    d1: true,
    bindings: { PLANTGATE_BOOTSTRAP_CLIENT_ID: "c1", PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "0123456789abcdef0123", PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" },
  });

it("a token request with both Content-Length and Transfer-Encoding: chunked is refused 400 invalid_request, as @plantgate/node refuses it (workerd issued a token)", async () => {
  const { base } = await startWorker();
  const host = new URL(base).host;
  const form = "grant_type=client_credentials";
  const chunked = `${form.length.toString(16)}\r\n${form}\r\n0\r\n\r\n`;
  // A front end framing by Content-Length sees one request whose body is the chunked bytes and the
  // "smuggled" request behind them; a back end framing by Transfer-Encoding sees two requests.
  const smuggled = `GET /.well-known/jwks.json HTTP/1.1\r\nHost: ${host}\r\n\r\n`;
  const wire = await raw(
    base,
    `POST /UserService/connect/token HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/x-www-form-urlencoded\r\nAuthorization: ${BASIC}\r\n` +
      `Content-Length: ${chunked.length + smuggled.length}\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}${smuggled}`,
  );
  // The first answer only: workerd then reads the bytes after the chunked body as a request of its
  // own and answers it (the JWKS, here) whatever the Worker answers the first, since it ignores a
  // Worker's `Connection: close`; no Worker code can stop that (README).
  const first = wire.slice(0, wire.indexOf("HTTP/1.1", 1) > 0 ? wire.indexOf("HTTP/1.1", 1) : undefined);
  expect({ status: first.slice(0, 12), token: first.includes('"access_token"') }).toEqual({ status: "HTTP/1.1 400", token: false });
  expect(first.slice(first.indexOf("\r\n\r\n") + 4)).toBe('{"error":"invalid_request","error_description":"The request cannot be processed."}');
  expect(first).toMatch(/\r\ncache-control: no-store\r\n/i);
}, 30_000);

it("a Transfer-Encoding other than exactly chunked (chunked twice, in one line or in two) is refused 400 invalid_request as Node refuses it (workerd issued a token); an empty line before chunked reaches the Worker as chunked alone", async () => {
  const { base } = await startWorker();
  const host = new URL(base).host;
  const form = "grant_type=client_credentials";
  const chunked = `${form.length.toString(16)}\r\n${form}\r\n0\r\n\r\n`;
  const head = `POST /UserService/connect/token HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/x-www-form-urlencoded\r\nAuthorization: ${BASIC}\r\nConnection: close\r\n`;
  const answers: Record<string, { status: string; token: boolean; body: string }> = {};
  for (const [name, lines] of [
    ["one line", "Transfer-Encoding: chunked, chunked\r\n"],
    ["two lines", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"],
    ["empty first", "Transfer-Encoding:\r\nTransfer-Encoding: chunked\r\n"],
  ] as const) {
    const wire = await raw(base, `${head}${lines}\r\n${chunked}`);
    answers[name] = { status: wire.slice(0, 12), token: wire.includes('"access_token"'), body: wire.slice(wire.indexOf("\r\n\r\n") + 4) };
  }
  const refused = { status: "HTTP/1.1 400", token: false, body: '{"error":"invalid_request","error_description":"The request cannot be processed."}' };
  expect({ "one line": answers["one line"], "two lines": answers["two lines"] }).toEqual({ "one line": refused, "two lines": refused });
  // An empty Transfer-Encoding line before `chunked`: workerd hands the Worker `chunked` alone, so
  // no Worker code can tell it (Node answers 501): served, as the README says.
  expect({ status: answers["empty first"]!.status, token: answers["empty first"]!.token }).toEqual({ status: "HTTP/1.1 200", token: true });
  // The same request with one Transfer-Encoding: chunked is served (a token).
  const served = await raw(base, `${head}Transfer-Encoding: chunked\r\n\r\n${chunked}`);
  expect({ status: served.slice(0, 12), token: served.includes('"access_token"') }).toEqual({ status: "HTTP/1.1 200", token: true });
}, 30_000);
