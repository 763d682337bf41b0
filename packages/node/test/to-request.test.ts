import { connect as connectHttp2, createServer as createHttp2Server } from "node:http2";
import { IncomingMessage } from "node:http";
import { connect as connectTcp, type AddressInfo, type Socket } from "node:net";
import { PassThrough, Readable } from "node:stream";
import fetch from "node-fetch";
import { describe, expect, it } from "vitest";
import { createRequestListener, refusedRequestAnswer, toExchange, toRequest, type FetchApp } from "../src/index.js";
import { echoApp, listenPlain, open, portOf, rawExchange, readResponse, start, type Echo } from "./support.js";

/**
 * A real IncomingMessage subclass whose `httpVersionMajor` is `major` whatever Node's parser read,
 * as an IncomingMessage shim has it: serverless-http (Express on AWS Lambda) sets the string "1", a
 * hand-built `new IncomingMessage(socket)` leaves null.
 */
function withMajor(major: unknown): typeof IncomingMessage {
  return class ShimmedRequest extends IncomingMessage {
    constructor(socket: Socket) {
      super(socket);
      // Node's parser assigns its number after construction: this keeps the shim's value.
      Object.defineProperty(this, "httpVersionMajor", { get: () => major, set: () => {}, configurable: true });
    }
  };
}

/** HTTP/2's connection preface, as a client with prior knowledge opens a connection (RFC 9113 §3.4). */
const H2_PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

async function rawEcho(url: string, head: string): Promise<Echo> {
  const { status, body } = await rawExchange(url, head);
  expect(status).toBe(200);
  return JSON.parse(body.toString()) as Echo;
}

describe("toRequest: URL", () => {
  it("preserves path and query string exactly", async () => {
    const { url } = await start(echoApp);
    const path = "/a/b%2Fc/?x=1&x=2&empty=&sp=%20+plus&enc=%E2%9C%93&raw=a:b@c;d";
    const response = await fetch(`${url}${path}`);
    const echo = (await response.json()) as Echo;
    expect(echo.url).toBe(`${url}${path}`);
  });

  it("keeps a path starting with // on the request's own host", async () => {
    const { url } = await start(echoApp);
    const echo = await rawEcho(url, "GET //evil.example/x?y HTTP/1.1\r\nHost: good.example\r\nConnection: close\r\n\r\n");
    expect(echo.url).toBe("http://good.example//evil.example/x?y");
  });

  it("never hands a target with raw non-ASCII bytes to the app (Node rejects it first)", async () => {
    let called = false;
    const { url } = await start({
      async fetch() {
        called = true;
        return new Response("no");
      },
    });
    const head = Buffer.concat([
      Buffer.from("GET /caf"),
      Buffer.from([0xc3, 0xa9]),
      Buffer.from(" HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n"),
    ]);
    const { status } = await rawExchange(url, head, { untilClose: true });
    expect(status).toBe(400);
    expect(called).toBe(false);
  });

  it("keeps characters the URL parser leaves alone and normalises the rest like any Request", async () => {
    const { url } = await start(echoApp);
    const echo = await rawEcho(url, "GET /a/b/c%2e%2E/{x}?q={y}|%7c/../\\ HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n");
    // Same result as new Request(<that URL>).url: braces in the path encoded, the query (dot
    // segments and a backslash in it too) and existing escapes untouched. (A dot segment or a
    // backslash in the path is refused: embed-path-normalisation.test.ts.)
    expect(echo.url).toBe("http://example.com/a/b/c%2e%2E/%7Bx%7D?q={y}|%7c/../\\");
  });

  it("uses the Host header, including its port", async () => {
    const { url } = await start(echoApp);
    const echo = await rawEcho(url, "GET /p?q=1 HTTP/1.1\r\nHost: Auth.Example.com:8443\r\nConnection: close\r\n\r\n");
    expect(echo.url).toBe("http://auth.example.com:8443/p?q=1");
  });

  it.each([
    ["a path", "example.com/evil"],
    ["userinfo", "user@example.com"],
    ["whitespace", "exa mple.com"],
    ["an out-of-range port", "example.com:99999"],
    ["a non-numeric port", "example.com:http"],
    ["an invalid IPv4 address", "999.1.1.1"],
    ["a query", "example.com?x"],
    ["an empty value", ""],
  ])("answers 400 invalid_request, without calling the app, to a Host header with %s (RFC 9112 §3.2)", async (_label, host) => {
    let called = false;
    const { url } = await start({ fetch: async () => { called = true; return new Response("reached"); } });
    const { status, body } = await rawExchange(url, `GET /p?q HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`, { untilClose: true });
    expect([status, body.toString(), called]).toEqual([400, '{"error":"invalid_request","error_description":"The request cannot be processed."}', false]);
  });

  it("answers 400 invalid_request to a repeated Host header (RFC 9112 §3.2), instead of reading either", async () => {
    const { url } = await start(echoApp);
    const { status, body } = await rawExchange(url, "GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\nConnection: close\r\n\r\n", { untilClose: true });
    expect([status, body.toString()]).toEqual([400, '{"error":"invalid_request","error_description":"The request cannot be processed."}']);
  });

  it("answers 400 invalid_request in plantgate's shape to an HTTP/1.1 request without a Host header (RFC 9112 §3.2)", async () => {
    const { url } = await start(echoApp);
    const { status, headers, body } = await rawExchange(url, "GET /p HTTP/1.1\r\nConnection: close\r\n\r\n", { untilClose: true });
    expect([status, headers.filter(([name]) => name === "content-type" || name === "cache-control"), body.toString()]).toEqual([
      400, [["content-type", "application/json"], ["cache-control", "no-store"]], '{"error":"invalid_request","error_description":"The request cannot be processed."}',
    ]);
  });

  it("accepts a fully qualified name ending in a dot, and an empty port (RFC 3986 §3.2.3)", async () => {
    const { url } = await start(echoApp);
    const echo = await rawEcho(url, "GET /p HTTP/1.1\r\nHost: Example.com.:8080\r\nConnection: close\r\n\r\n");
    expect(echo.url).toBe("http://example.com.:8080/p");
    expect((await rawEcho(url, "GET /q HTTP/1.1\r\nHost: example.com:\r\nConnection: close\r\n\r\n")).url).toBe("http://example.com/q");
  });

  it("falls back to http://localhost when there is no Host header (HTTP/1.0)", async () => {
    const { url } = await start(echoApp);
    const { status, body } = await rawExchange(url, "GET /old HTTP/1.0\r\n\r\n", { untilClose: true });
    expect(status).toBe(200);
    expect((JSON.parse(body.toString()) as Echo).url).toBe("http://localhost/old");
  });

  it("accepts an IPv6 literal host", async () => {
    const { url } = await start(echoApp);
    const echo = await rawEcho(url, "GET / HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n");
    expect(echo.url).toBe("http://[::1]:8080/");
  });

  it("uses the authority of an absolute-form target (RFC 9112 §3.2.2)", async () => {
    const { url } = await start(echoApp);
    const echo = await rawEcho(
      url,
      "GET http://target.example:81/abs?q=1 HTTP/1.1\r\nHost: header.example\r\nConnection: close\r\n\r\n",
    );
    expect(echo.url).toBe("http://target.example:81/abs?q=1");
  });

  it("answers 421 to an absolute-form target naming the other scheme (RFC 9110 §7.4; `https://b:443/x` over plain TCP was served as http://b/x), and keeps the port of one naming its own (RFC 9112 §3.3)", async () => {
    const misdirected = '{"error":"invalid_request","error_description":"The request\'s target is not served on this connection."}';
    const { url } = await start(echoApp);
    for (const target of ["https://b:443/x", "HTTPS://b/x", "https://b:8443/x?y=1"]) {
      const { status, statusText, headers, body } = await rawExchange(url, `GET ${target} HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n`, { untilClose: true });
      const header = Object.fromEntries(headers);
      expect([target, status, statusText, header["content-type"], header["cache-control"], body.toString()]).toEqual([target, 421, "Misdirected Request", "application/json", "no-store", misdirected]);
    }
    for (const [target, served] of [
      ["http://b:443/x", "http://b:443/x"],
      ["http://b:80/x", "http://b/x"],
      ["HTTP://B/x?y=1", "http://b/x?y=1"],
    ]) {
      expect([target, (await rawEcho(url, `GET ${target} HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n`)).url]).toEqual([target, served]);
    }
    // With trustProxy the scheme to match is the trusted proxy's X-Forwarded-Proto.
    const proxied = await start(echoApp, { trustProxy: true });
    const forwarded = (target: string) => `GET ${target} HTTP/1.1\r\nHost: internal\r\nX-Forwarded-Proto: https\r\nConnection: close\r\n\r\n`;
    expect((await rawEcho(proxied.url, forwarded("https://b:443/x"))).url).toBe("https://b/x");
    const plainTarget = await rawExchange(proxied.url, forwarded("http://b/x"), { untilClose: true });
    expect([plainTarget.status, plainTarget.body.toString()]).toEqual([421, misdirected]);
    // A configured origin is the URL's whatever the target names, as whatever the Host says.
    const fixed = await start(echoApp, { origin: "https://auth.example.com" });
    expect((await rawEcho(fixed.url, "GET http://b/x HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")).url).toBe("https://auth.example.com/x");
  });

  it("answers 505 to a request Node reads with a major version other than 1 (HTTP/0.9, a request line without a version included; HTTP/2.0 and later in HTTP/1 text framing), in plantgate's shape with Connection: close (they were served); HTTP/1.0 without Host and HTTP/1.1 are still served", async () => {
    const body = '{"error":"invalid_request","error_description":"The request\'s HTTP version is not supported; send it as HTTP/1.1."}';
    const { url } = await start(echoApp);
    /** Everything the server sends until it closes the connection, its Date left out. */
    const answer = async (data: string) => {
      const { status, statusText, headers, body } = await rawExchange(url, data, { untilClose: true });
      return [data, status, statusText, headers.filter(([name]) => name !== "date"), body.toString()];
    };
    // Through Node's response (the listener refuses before the app is asked)...
    const headers = [["content-type", "application/json"], ["content-length", String(body.length)], ["cache-control", "no-store"], ["connection", "close"]];
    // ...and as answerMalformedRequests writes it, for what Node's parser itself refuses (HTTP/3.0).
    const parserHeaders = [["content-type", "application/json"], ["cache-control", "no-store"], ["content-length", String(body.length)], ["connection", "close"]];
    const refused = (data: string, head = false, raw = false) => [data, 505, "HTTP Version Not Supported", raw ? parserHeaders : headers, head ? "" : body];
    const cases = [
      // Node's parser takes a request line without a version for HTTP/0.9's and waits for headers.
      refused("GET /plants\r\n\r\n"),
      refused("GET http://b/plants\r\nHost: b\r\n\r\n"),
      refused("HEAD /plants\r\n\r\n", true),
      refused("GET /plants HTTP/0.9\r\n\r\n"),
      refused("HEAD /plants HTTP/0.9\r\n\r\n", true),
      refused("GET /plants HTTP/2.0\r\nHost: b\r\n\r\n"),
      refused("HEAD /plants HTTP/2.0\r\nHost: b\r\n\r\n", true),
      // Node would keep this one open: the refusal closes it all the same.
      refused("GET /plants HTTP/2.0\r\nHost: b\r\nConnection: keep-alive\r\n\r\n"),
      // The version comes before the Host (missing: none is required before HTTP/1.1) and the scheme.
      refused("GET https://b/plants HTTP/2.0\r\n\r\n"),
      // The upload is read and dropped.
      refused("POST /plants HTTP/2.0\r\nHost: b\r\nContent-Length: 5\r\n\r\nhello"),
      // Node's parser refuses HTTP/3.0 and later itself (any version but 0.9, 1.0, 1.1 and 2.0).
      refused("GET /plants HTTP/3.0\r\nHost: b\r\n\r\n", false, true),
      refused("HEAD /plants HTTP/3.0\r\nHost: b\r\n\r\n", true, true),
      refused("POST /plants HTTP/9.1\r\nHost: b\r\nContent-Length: 5\r\n\r\nhello", false, true),
      // Empty lines before a request line are ignored (RFC 9112 §2.2).
      refused("\r\nGET /plants HTTP/3.0\r\nHost: b\r\n\r\n", false, true),
      refused("\r\nHEAD /plants HTTP/3.0\r\nHost: b\r\n\r\n", true, true),
      // HTTP/2's prior-knowledge preface (curl --http2-prior-knowledge), alone and with the client's
      // SETTINGS frame behind it: Node's parser stops at it (HPE_PAUSED_H2_UPGRADE; it was the 400).
      refused(H2_PREFACE, false, true),
      refused(`${H2_PREFACE}\x00\x00\x00\x04\x00\x00\x00\x00\x00`, false, true),
    ];
    expect(await Promise.all(cases.map(([data]) => answer(data as string)))).toEqual(cases);
    // HTTP/1.2 is major version 1, which Node's parser refuses as malformed: its 400.
    const malformed = await rawExchange(url, "GET /plants HTTP/1.2\r\nHost: b\r\n\r\n", { untilClose: true });
    expect([malformed.status, malformed.body.toString()]).toEqual([400, '{"error":"invalid_request","error_description":"The request cannot be processed."}']);
    // Node's parser stops so at a PRI line of any version: HTTP/1.1's is no other major version.
    const pri = await rawExchange(url, "PRI * HTTP/1.1\r\n\r\nSM\r\n\r\n", { untilClose: true });
    expect([pri.status, pri.body.toString()]).toEqual([400, '{"error":"invalid_request","error_description":"The request cannot be processed."}']);
    // A client that goes on with its HTTP/2 frames once the answer has begun (a HEADERS frame, as
    // curl's after the preface) and keeps its own end open till then: its bytes are read, and the
    // connection ends when the client's does, without a reset.
    const h2 = await new Promise<[string, string[]]>((resolve) => {
      const socket = connectTcp({ port: portOf(url), host: "127.0.0.1", allowHalfOpen: true });
      let received = "";
      const events: string[] = [];
      socket.setEncoding("latin1");
      socket.once("data", () => {
        socket.write(Buffer.from([0, 0, 4, 1, 5, 0, 0, 0, 1, 0x82, 0x84, 0x86, 0x41]));
        setTimeout(() => socket.end(), 50);
      });
      socket.on("data", (chunk: string) => (received += chunk));
      socket.on("end", () => events.push("end"));
      socket.on("error", (error: NodeJS.ErrnoException) => events.push(`error ${error.code}`));
      socket.on("close", () => resolve([received.replace(/\r\ndate: [^\r]*/i, ""), events]));
      socket.write(H2_PREFACE);
    });
    const parserAnswer = `HTTP/1.1 505 HTTP Version Not Supported\r\n${parserHeaders.map(([name, value]) => `${name}: ${value}\r\n`).join("")}\r\n${body}`;
    expect(h2).toEqual([parserAnswer, ["end"]]);
    // HTTP/1.0 needs no Host (localhost stands in); HTTP/1.1 is served as ever.
    const old = await rawExchange(url, "GET /plants HTTP/1.0\r\n\r\n", { untilClose: true });
    expect([old.status, (JSON.parse(old.body.toString()) as Echo).url]).toEqual([200, "http://localhost/plants"]);
    expect((await rawEcho(url, "GET /plants HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")).url).toBe("http://b/plants");
    // A version-less line with no blank line after it is no whole request to Node's parser, which
    // waits for headers: the headers timeout's 408, not the 505 (the README says so).
    const waiting = await start(echoApp, { headersTimeout: 500 });
    const timedOut = await rawExchange(waiting.url, "GET /plants\r\n", { untilClose: true });
    expect([timedOut.status, timedOut.body.toString()]).toEqual([408, '{"error":"invalid_request","error_description":"The request did not arrive in time."}']);
    // Behind an HTTP/1.1 request on a kept connection: that one is served, then the refusal and the close.
    const socket = await open(url);
    try {
      const first = readResponse(socket);
      socket.write("GET /first HTTP/1.1\r\nHost: b\r\n\r\nGET /plants HTTP/2.0\r\nHost: b\r\n\r\n");
      expect([(await first).status, JSON.parse((await first).body.toString()).url]).toEqual([200, "http://b/first"]);
      const second = await readResponse(socket, { untilClose: true });
      expect([second.status, second.headers.filter(([name]) => name !== "date"), second.body.toString()]).toEqual([505, headers, body]);
    } finally {
      socket.destroy();
    }
  });

  it("serves node:http2's compatibility requests (real HTTP/2, major version 2) at their :authority (RFC 9113 §8.3.1, HTTP/2's Host; until 2026-12-01 every one was served as localhost); a Host beside it naming another is the 400 a bad Host is", async () => {
    const server = createHttp2Server(createRequestListener(echoApp) as unknown as Parameters<typeof createHttp2Server>[1]);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as AddressInfo).port;
    const client = connectHttp2(`http://127.0.0.1:${port}`);
    const get = (headers: Record<string, string>) =>
      new Promise<[unknown, string]>((resolve, reject) => {
        const stream = client.request({ ":path": "/plants?x=1", ...headers });
        let status: unknown;
        let text = "";
        stream.on("response", (h) => (status = h[":status"]));
        stream.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
        stream.on("end", () => resolve([status, text]));
        stream.on("error", reject);
        stream.end();
      });
    const served = async (headers: Record<string, string>) => {
      const [status, text] = await get(headers);
      const echo = JSON.parse(text) as Echo;
      return [status, echo.method, echo.url, echo.headers.find(([name]) => name === "host")?.[1]];
    };
    const refused = [400, '{"error":"invalid_request","error_description":"The request cannot be processed."}'];
    try {
      // The client's own :authority (the address it connected to).
      expect(await served({})).toEqual([200, "GET", `http://127.0.0.1:${port}/plants?x=1`, `127.0.0.1:${port}`]);
      expect(await served({ ":authority": "auth.example.com" })).toEqual([200, "GET", "http://auth.example.com/plants?x=1", "auth.example.com"]);
      // A Host beside it naming the same (an intermediary may keep one), in another case.
      expect(await served({ ":authority": "auth.example.com", host: "AUTH.example.com" })).toEqual([200, "GET", "http://auth.example.com/plants?x=1", "AUTH.example.com"]);
      expect(await get({ ":authority": "auth.example.com", host: "evil.example" })).toEqual(refused);
      // The same authority written otherwise (RFC 3986 §6.2: a default or empty port) is the same.
      for (const [authority, host] of [["auth.example.com", "auth.example.com:80"], ["auth.example.com:80", "auth.example.com"], ["auth.example.com", "auth.example.com:"]]) {
        expect(await served({ ":authority": authority!, host: host! })).toEqual([200, "GET", "http://auth.example.com/plants?x=1", host]);
      }
      expect(await get({ ":authority": "auth.example.com", host: "auth.example.com:8080" })).toEqual(refused);
      // (An empty or malformed :authority is refused by nghttp2 before the listener: the stream is
      // reset with PROTOCOL_ERROR, Node's answer.)
    } finally {
      client.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("serves a request whose IncomingMessage subclass says its major version is the string \"1\" (serverless-http's) or null (a hand-built `new IncomingMessage(socket)`): only a number other than 1 is Node's parser's other version (both were refused 505)", async () => {
    const body = '{"error":"invalid_request","error_description":"The request\'s HTTP version is not supported; send it as HTTP/1.1."}';
    const listener = createRequestListener(echoApp);
    const answer = async (major: unknown, untilClose = false) => {
      const url = await listenPlain(listener as Parameters<typeof listenPlain>[0], { IncomingMessage: withMajor(major) });
      const got = await rawExchange(url, "POST /plants?x=1 HTTP/1.1\r\nHost: b\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", { untilClose });
      return [major, got.status, got.headers.filter(([name]) => name !== "date"), got.body.toString()];
    };
    const echo = JSON.stringify({
      method: "POST",
      url: "http://b/plants?x=1",
      headers: [["connection", "close"], ["content-length", "5"], ["host", "b"]],
      setCookie: [],
      body: Buffer.from("hello").toString("base64"),
    });
    const served = (major: unknown, framing: Array<[string, string]>) => [major, 200, [["content-type", "application/json"], ...framing], echo];
    // Such a subclass's number other than 1 is still refused.
    const refused = [2, 505, [["content-type", "application/json"], ["content-length", String(body.length)], ["cache-control", "no-store"], ["connection", "close"]], body];
    // Node's own response reads the version too: below 1 (null), it answers as to HTTP/1.0, its body
    // ending with the connection.
    expect([await answer("1"), await answer(null, true), await answer(2, true)]).toEqual([
      served("1", [["connection", "close"], ["transfer-encoding", "chunked"]]),
      served(null, [["connection", "close"]]),
      refused,
    ]);
  });

  it("answers 400 invalid_request to an absolute-form target with userinfo, as to a Host with userinfo (RFC 9110 §4.2.4), instead of serving its host", async () => {
    const { url } = await start(echoApp);
    for (const target of ["http://user:pass@target.example/abs", "http://user@target.example/abs", "HTTP://@target.example/abs"]) {
      const { status, body } = await rawExchange(url, `GET ${target} HTTP/1.1\r\nHost: header.example\r\nConnection: close\r\n\r\n`, { untilClose: true });
      expect([target, status, body.toString()]).toEqual([target, 400, '{"error":"invalid_request","error_description":"The request cannot be processed."}']);
    }
    // An @ in the path or query is no userinfo.
    expect((await rawEcho(url, "GET http://target.example/a@b?c=d@e HTTP/1.1\r\nHost: header.example\r\nConnection: close\r\n\r\n")).url).toBe("http://target.example/a@b?c=d@e");
  });

  it("ignores X-Forwarded-* without trustProxy", async () => {
    const { url } = await start(echoApp);
    const echo = await rawEcho(
      url,
      "GET /x HTTP/1.1\r\nHost: internal:3000\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: public.example\r\nConnection: close\r\n\r\n",
    );
    expect(echo.url).toBe("http://internal:3000/x");
  });

  it("honours the right-most X-Forwarded-Proto and X-Forwarded-Host values with trustProxy (the trusted proxy's own)", async () => {
    const { url } = await start(echoApp, { trustProxy: true });
    // A client wrote the first values; the proxy in front appended the last ones.
    const echo = await rawEcho(
      url,
      "GET /x?y=1 HTTP/1.1\r\nHost: internal:3000\r\nX-Forwarded-Proto: http, HTTPS\r\nX-Forwarded-Host: evil.example, public.example\r\nConnection: close\r\n\r\n",
    );
    expect(echo.url).toBe("https://public.example/x?y=1");
  });

  it("with trustProxy, a client-written X-Forwarded-Host line before the proxy's is not the one used", async () => {
    const { url } = await start(echoApp, { trustProxy: true });
    const echo = await rawEcho(
      url,
      "GET /x HTTP/1.1\r\nHost: internal:3000\r\nX-Forwarded-Host: evil.example\r\nX-Forwarded-Host: public.example\r\nConnection: close\r\n\r\n",
    );
    expect(echo.url).toBe("http://public.example/x");
  });

  it("with trustProxy, ignores unusable forwarded values", async () => {
    const { url } = await start(echoApp, { trustProxy: true });
    const echo = await rawEcho(
      url,
      "GET /x HTTP/1.1\r\nHost: internal:3000\r\nX-Forwarded-Proto: gopher\r\nX-Forwarded-Host: evil.example/path\r\nConnection: close\r\n\r\n",
    );
    expect(echo.url).toBe("http://internal:3000/x");
  });

  it("with trustProxy, an unusable forwarded host keeps the forwarded scheme on the Host header's host", async () => {
    const { url } = await start(echoApp, { trustProxy: true });
    const echo = await rawEcho(
      url,
      "GET /x HTTP/1.1\r\nHost: internal:3000\r\nX-Forwarded-Proto: https\r\nX-Forwarded-Host: bad host\r\nConnection: close\r\n\r\n",
    );
    expect(echo.url).toBe("https://internal:3000/x");
  });

  it("with a configured origin, still answers 400 to an invalid Host header", async () => {
    const { url } = await start(echoApp, { origin: "https://auth.example.com" });
    const { status } = await rawExchange(url, "GET /x HTTP/1.1\r\nHost: bad host\r\nConnection: close\r\n\r\n", { untilClose: true });
    expect(status).toBe(400);
  });

  it("prefers a configured origin over Host and forwarded headers", async () => {
    const { url } = await start(echoApp, { origin: "https://auth.example.com/ignored/path", trustProxy: true });
    const echo = await rawEcho(
      url,
      "GET /x?y HTTP/1.1\r\nHost: internal\r\nX-Forwarded-Host: other.example\r\nConnection: close\r\n\r\n",
    );
    expect(echo.url).toBe("https://auth.example.com/x?y");
  });

  it("answers 400 without calling the app for a method a Request cannot carry", async () => {
    let called = false;
    const { url } = await start({
      async fetch() {
        called = true;
        return new Response("no");
      },
    });
    const { status, body } = await rawExchange(
      url,
      "TRACE / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n",
    );
    expect(status).toBe(400);
    expect(body.toString()).toBe('{"error":"invalid_request","error_description":"The request cannot be processed."}');
    expect(called).toBe(false);
  });
});

describe("toRequest: headers", () => {
  it("copies repeated headers, combining them per Fetch and keeping Set-Cookie apart", async () => {
    const { url } = await start(echoApp);
    const echo = await rawEcho(
      url,
      [
        "GET / HTTP/1.1",
        "Host: example.com",
        "X-Multi: one",
        "Accept: text/plain",
        "x-multi: two, three",
        "Set-Cookie: a=1; Path=/",
        "Set-Cookie: b=2, c=3",
        // Sent as UTF-8; headers are byte strings, so each byte becomes one char.
        "X-Bytes: caf\u00e9",
        "Connection: close",
        "",
        "",
      ].join("\r\n"),
    );
    expect(echo.headers).toEqual([
      ["accept", "text/plain"],
      ["connection", "close"],
      ["host", "example.com"],
      ["set-cookie", "a=1; Path=/"],
      ["set-cookie", "b=2, c=3"],
      ["x-bytes", "caf\u00c3\u00a9"],
      ["x-multi", "one, two, three"],
    ]);
    expect(echo.setCookie).toEqual(["a=1; Path=/", "b=2, c=3"]);
  });
});

/**
 * An IncomingMessage shim built as serverless-http 4.0.0's `ServerlessRequest` builds one (Express on
 * AWS Lambda; @vendia/ and @codegenie/serverless-express alike): a real IncomingMessage over a
 * PassThrough socket, `headers` set (lowercased names, a number where the shim computed one),
 * `rawHeaders` left empty, the version as the strings "1" and "1", the body pushed through `_read`.
 * packages/express/test/serverless-http.test.ts drives the real package.
 */
class ShimRequest extends IncomingMessage {
  constructor(init: { method: string; url: string; headers: Record<string, unknown>; body?: string; major?: unknown; minor?: unknown }) {
    const socket = new PassThrough() as PassThrough & { encrypted?: boolean; remoteAddress?: string };
    socket.encrypted = true;
    socket.remoteAddress = "203.0.113.7";
    super(socket as unknown as Socket);
    const body = init.body === undefined ? undefined : Buffer.from(init.body);
    Object.assign(this, {
      complete: true,
      httpVersion: "1.1",
      httpVersionMajor: init.major === undefined ? "1" : init.major,
      httpVersionMinor: init.minor === undefined ? "1" : init.minor,
      method: init.method,
      headers: init.headers,
      url: init.url,
    });
    this._read = () => {
      if (body !== undefined) this.push(body);
      this.push(null);
    };
  }
}

describe("toRequest: an IncomingMessage shim (empty rawHeaders, headers set)", () => {
  it("reads its headers from `headers`: a number as its string, an array as one field per value, cookie values joined with \"; \" (Node's rule), null and undefined as no value, pseudo-headers left out (it had no headers at all)", async () => {
    const incoming = new ShimRequest({
      method: "POST",
      url: "/plants?x=1",
      headers: {
        host: "api.example",
        "content-type": "application/x-www-form-urlencoded",
        "content-length": 29,
        authorization: "Basic YTpi",
        accept: ["application/json", "text/plain"],
        cookie: ["a=1", "b=2"],
        "x-none": undefined,
        "x-null": null,
        ":authority": "api.example",
      },
      body: "grant_type=client_credentials",
    });
    const request = toRequest(incoming);
    expect([request.method, request.url, [...request.headers], await request.text()]).toEqual([
      "POST",
      "https://api.example/plants?x=1",
      [
        ["accept", "application/json, text/plain"],
        ["authorization", "Basic YTpi"],
        ["content-length", "29"],
        ["content-type", "application/x-www-form-urlencoded"],
        ["cookie", "a=1; b=2"],
        ["host", "api.example"],
      ],
      "grant_type=client_credentials",
    ]);
    expect(toExchange(new ShimRequest({ method: "GET", url: "/", headers: { host: "api.example" } })).clientIp).toBe("203.0.113.7");

    // Whenever rawHeaders has any (Node's own requests), `headers` is not read.
    const both = new ShimRequest({ method: "GET", url: "/", headers: { host: "object.example", "x-object": "1" } });
    both.rawHeaders = ["Host", "raw.example", "X-Raw", "1"];
    const fromRaw = toRequest(both);
    expect([fromRaw.url, [...fromRaw.headers]]).toEqual(["https://raw.example/", [["host", "raw.example"], ["x-raw", "1"]]]);
  });

  it("refuses two Host values as two Host lines are refused (400), rather than keeping the first as Node's `headers` would, and a header Headers refuses", () => {
    const refusals = [
      { host: ["a.example"] },
      { host: ["a.example", "b.example"] },
      { host: "a.example, b.example" },
      { host: "api.example", "x-bad": "line\nbreak" },
      { host: "api.example", "bad name": "x" },
    ].map((headers) => {
      try {
        return toRequest(new ShimRequest({ method: "GET", url: "/", headers })).url;
      } catch (error) {
        return refusedRequestAnswer(error).status;
      }
    });
    expect(refusals).toEqual(["https://a.example/", 400, 400, 400, 400]);
  });

  it("takes the version as the strings \"1\" and \"1\" for HTTP/1.1 (a Host required: it was served for localhost as HTTP/1.0); \"1\" and \"0\" and null stay without that requirement, and numbers are read as ever", () => {
    const url = (major: unknown, minor: unknown) => {
      try {
        return toRequest(new ShimRequest({ method: "GET", url: "/p", headers: { accept: "*/*" }, major, minor })).url;
      } catch (error) {
        return error instanceof TypeError ? error.message : String(error);
      }
    };
    const missing = "Missing, repeated or invalid Host header.";
    expect([url("1", "1"), url("1", "0"), url(null, null), url(1, 1), url(1, 2), url(1, 0), url("1", 1)]).toEqual([
      missing,
      "https://localhost/p",
      "https://localhost/p",
      missing,
      missing,
      "https://localhost/p",
      "https://localhost/p",
    ]);
  });
});

describe("toRequest: body", () => {
  it("round-trips a binary body byte for byte, including bytes invalid as UTF-8", async () => {
    const { url } = await start(echoApp);
    const bytes = Buffer.concat([
      Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
      Buffer.from([0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1, 0xf0, 0x28, 0x8c, 0xbc, 0xff, 0xfe, 0xfd, 0x00]),
    ]);
    const response = await fetch(`${url}/upload?x=1`, {
      method: "PUT",
      body: bytes,
      headers: { "content-type": "application/octet-stream" },
    });
    expect(response.status).toBe(200);
    const echo = (await response.json()) as Echo;
    expect(echo.method).toBe("PUT");
    expect(Buffer.from(echo.body ?? "", "base64").equals(bytes)).toBe(true);
  });

  it("streams a chunked upload through to a streamed response unchanged", async () => {
    const { url } = await start({ fetch: async (request) => new Response(request.body) });
    const chunks = Array.from({ length: 64 }, (_, i) => Buffer.alloc(64 * 1024, i));
    const expected = Buffer.concat(chunks);
    const response = await fetch(`${url}/`, {
      method: "POST",
      body: Readable.from(chunks),
    });
    expect(response.status).toBe(200);
    const received = Buffer.from(await response.arrayBuffer());
    expect(received.length).toBe(expected.length);
    expect(received.equals(expected)).toBe(true);
  });

  it("delivers the upload incrementally instead of buffering it", async () => {
    let firstChunk: Uint8Array | undefined;
    let release!: () => void;
    const clientMayContinue = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { url } = await start({
      async fetch(request) {
        const reader = request.body!.getReader();
        const first = await reader.read();
        firstChunk = first.value;
        release();
        let total = first.value?.byteLength ?? 0;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          total += value.byteLength;
        }
        return new Response(String(total));
      },
    });
    const response = await fetch(`${url}/`, {
      method: "POST",
      body: Readable.from(
        (async function* () {
          yield Buffer.from("first");
          // The app must see the first chunk while the client still holds the rest.
          await clientMayContinue;
          yield Buffer.from("second");
        })(),
      ),
    });
    expect(await response.text()).toBe("11");
    expect(Buffer.from(firstChunk!).toString()).toBe("first");
    expect(firstChunk!.constructor).toBe(Uint8Array);
  });

  it("gives GET and HEAD requests a null body", async () => {
    const seen: Array<[string, boolean]> = [];
    const { url } = await start({
      async fetch(request) {
        seen.push([request.method, request.body === null]);
        return new Response("x");
      },
    });
    await fetch(`${url}/`);
    await fetch(`${url}/`, { method: "HEAD" });
    expect(seen).toEqual([
      ["GET", true],
      ["HEAD", true],
    ]);
  });

  it("gives an empty POST an empty body", async () => {
    const { url } = await start(echoApp);
    const response = await fetch(`${url}/`, { method: "POST" });
    const echo = (await response.json()) as Echo;
    expect(echo.method).toBe("POST");
    expect(echo.body).toBe("");
  });

  /** echoApp behind a middleware that reads the IncomingMessage to its end first (as express.json() does). */
  async function behindReader(onError: (error: unknown) => void): Promise<string> {
    const { createRequestListener } = await import("../src/index.js");
    const listener = createRequestListener(echoApp, { onError });
    return listenPlain((req, res) => {
      const parts: Buffer[] = [];
      req.on("data", (chunk: Buffer) => parts.push(chunk));
      req.on("end", () => listener(req, res));
    });
  }

  it("fails the body with a PlantgateBodyConsumedError (a HostFaultError) when middleware already took its bytes", async () => {
    const { HostFaultError } = await import("@plantgate/core");
    const { PlantgateBodyConsumedError } = await import("../src/index.js");
    const errors: unknown[] = [];
    const url = await behindReader((error) => errors.push(error));
    const response = await fetch(`${url}/`, { method: "POST", body: '{"a":1}', headers: { "content-type": "application/json" } });
    // The listener's 500 for an app that failed: the bytes are gone, never an empty body.
    expect([response.status, await response.text()]).toEqual([
      500,
      '{"error":"server_error","error_description":"The server encountered an unexpected error."}',
    ]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(PlantgateBodyConsumedError);
    expect(errors[0]).toBeInstanceOf(HostFaultError);
  });

  it("gives an empty body when middleware read an empty body to its end (nothing was taken)", async () => {
    const errors: unknown[] = [];
    const url = await behindReader((error) => errors.push(error));
    const response = await fetch(`${url}/`, { method: "POST", body: "", headers: { "content-type": "application/json" } });
    const echo = (await response.json()) as Echo;
    expect(echo.body).toBe("");
    expect(echo.headers).toContainEqual(["content-length", "0"]);
    expect(errors).toEqual([]);
  });
});

describe("toRequest: signal", () => {
  it("does not abort the signal of a request that completes normally", async () => {
    let signal: AbortSignal | undefined;
    const app: FetchApp = {
      async fetch(request) {
        signal = request.signal;
        return new Response(await request.text());
      },
    };
    const { url } = await start(app);
    const response = await fetch(`${url}/`, { method: "POST", body: "hello" });
    expect(await response.text()).toBe("hello");
    expect(signal?.aborted).toBe(false);
  });
});
