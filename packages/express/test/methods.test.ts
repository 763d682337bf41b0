/**
 * Finding 5 of the security review: methods a Web Request cannot carry get the same 400 through
 * Express as through the Node listener, never Express's error page with a stack trace (which its
 * default handler shows unless NODE_ENV=production). Of TRACE, TRACK and CONNECT only TRACE
 * reaches a request listener: Node's parser answers TRACK with its own bare 400, and closes a
 * CONNECT when the server has no 'connect' listener.
 */
import { connect } from "node:net";
import express from "express";
import { describe, expect, it } from "vitest";
import { plantgate } from "../src/index.js";
import { listen, plantgateApp } from "./support.js";

/** One raw request; the whole answer until the server closes (Connection: close). */
function raw(origin: string, request: string): Promise<string> {
  const port = Number(new URL(origin).port);
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("end", () => resolve(Buffer.concat(chunks).toString("latin1")));
    socket.write(request);
  });
}

const BODY = '{"error":"invalid_request","error_description":"The request cannot be processed."}';

describe("methods a Web Request cannot carry", () => {
  for (const [method, target] of [
    ["TRACE", "/auth/.well-known/jwks.json"],
    ["TRACE", "/auth/plants"],
  ] as const) {
    it(`${method} ${target} -> 400 invalid_request from the adapter, no stack trace`, async () => {
      const previous = process.env.NODE_ENV;
      process.env.NODE_ENV = "development";
      try {
        const app = express();
        app.use("/auth", plantgate(await plantgateApp()));
        const origin = await listen(app);
        const answer = await raw(origin, `${method} ${target} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n`);
        const [head, body] = answer.split("\r\n\r\n");
        const lines = head!.split("\r\n");
        expect(lines[0]).toBe("HTTP/1.1 400 Bad Request");
        const headers = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]));
        expect({ type: headers["content-type"], cache: headers["cache-control"], body }).toEqual({
          type: "application/json",
          cache: "no-store",
          body: BODY,
        });
      } finally {
        process.env.NODE_ENV = previous;
      }
    });
  }
});

describe("RFC 9112 §3.2: a repeated or invalid Host header", () => {
  it("-> 400 invalid_request from the adapter, for a path plantgate answers", async () => {
    const app = express();
    app.use("/auth", plantgate(await plantgateApp()));
    const origin = await listen(app);
    const answer = await raw(origin, "GET /auth/.well-known/jwks.json HTTP/1.1\r\nhost: a.example\r\nhost: b.example\r\nconnection: close\r\n\r\n");
    const [head, body] = answer.split("\r\n\r\n");
    expect([head!.split("\r\n")[0], body]).toEqual(["HTTP/1.1 400 Bad Request", BODY]);
  });

  it("a bad Host on a path of the host app's own goes on to its routes (plantgate mounted at /)", async () => {
    const app = express();
    app.use(plantgate(await plantgateApp()));
    app.get("/mine", (_req, res) => void res.type("text").send("host app"));
    const origin = await listen(app);
    const answer = await raw(origin, "GET /mine HTTP/1.1\r\nhost: a example\r\nconnection: close\r\n\r\n");
    const [head, body] = answer.split("\r\n\r\n");
    expect([head!.split("\r\n")[0], body]).toEqual(["HTTP/1.1 200 OK", "host app"]);
  });

  it.each([["a path", "a.example/x"], ["whitespace", "a example"], ["an empty value", ""]])(
    "-> 400 invalid_request from the adapter for a Host header with %s, for a path plantgate answers",
    async (_label, host) => {
      const app = express();
      app.use("/auth", plantgate(await plantgateApp()));
      const origin = await listen(app);
      const answer = await raw(origin, `GET /auth/.well-known/jwks.json HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`);
      const [head, body] = answer.split("\r\n\r\n");
      expect([head!.split("\r\n")[0], body]).toEqual(["HTTP/1.1 400 Bad Request", BODY]);
    },
  );
});

describe("RFC 9112 §6.1: a transfer coding other than chunked", () => {
  it("-> 501 invalid_request from the adapter, the body not read as the form (Node's parser takes `gzip, chunked`)", async () => {
    const app = express();
    app.use("/auth", plantgate(await plantgateApp()));
    const origin = await listen(app);
    const answer = await raw(
      origin,
      "POST /auth/UserService/connect/token HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/x-www-form-urlencoded\r\ntransfer-encoding: gzip, chunked\r\nconnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    );
    const [head, body] = answer.split("\r\n\r\n");
    expect([head!.split("\r\n")[0], body]).toEqual(["HTTP/1.1 501 Not Implemented", '{"error":"invalid_request","error_description":"The request\'s transfer coding is not supported."}']);
  });
});

describe("RFC 9112 §3.2.2: absolute-form request targets, as on the Node listener", () => {
  it("a repeated Host or a transfer coding other than chunked -> the adapter's 400/501, not next() (the path was read as /http://...)", async () => {
    const app = express();
    app.use("/auth", plantgate(await plantgateApp()));
    app.use((_req, res) => void res.status(404).type("text").send("host app"));
    const origin = await listen(app);
    const port = new URL(origin).port;
    const twoHosts = await raw(origin, `GET http://127.0.0.1:${port}/auth/.well-known/jwks.json HTTP/1.1\r\nhost: a.example\r\nhost: b.example\r\nconnection: close\r\n\r\n`);
    const [head, body] = twoHosts.split("\r\n\r\n");
    expect([head!.split("\r\n")[0], body]).toEqual(["HTTP/1.1 400 Bad Request", BODY]);
    const coded = await raw(
      origin,
      `POST http://127.0.0.1:${port}/auth/UserService/connect/token HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/x-www-form-urlencoded\r\ntransfer-encoding: gzip, chunked\r\nconnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n`,
    );
    const [codedHead, codedBody] = coded.split("\r\n\r\n");
    expect([codedHead!.split("\r\n")[0], codedBody]).toEqual(["HTTP/1.1 501 Not Implemented", '{"error":"invalid_request","error_description":"The request\'s transfer coding is not supported."}']);
  });

  it("another scheme's absolute form (`ftp://x/auth/...`) on a path plantgate answers -> the listener's 400 JSON, not the host app's 404; its other paths stay the host app's", async () => {
    for (const mount of ["/", "/auth"]) {
      const app = express();
      app.use(mount, plantgate(await plantgateApp()));
      app.use((_req, res) => void res.status(404).type("text").send("host app"));
      const origin = await listen(app);
      const token = await raw(
        origin,
        "POST ftp://x/auth/UserService/connect/token HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: 29\r\nconnection: close\r\n\r\ngrant_type=client_credentials",
      );
      const [head, body] = token.split("\r\n\r\n");
      expect([mount, head!.split("\r\n")[0], body]).toEqual([mount, "HTTP/1.1 400 Bad Request", BODY]);
      const other = await raw(origin, "GET ftp://x/elsewhere HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n");
      const [otherHead, otherBody] = other.split("\r\n\r\n");
      expect([mount, otherHead!.split("\r\n")[0], otherBody]).toEqual([mount, "HTTP/1.1 404 Not Found", "host app"]);
    }
  });

  it("a target whose authority has userinfo (`http://user:pass@host/auth/...`) -> the listener's 400 on a path plantgate answers, as a Host with userinfo is; the host app's own paths go on", async () => {
    const app = express();
    app.use(plantgate(await plantgateApp()));
    app.use((_req, res) => void res.status(404).type("text").send("host app"));
    const origin = await listen(app);
    const answer = await raw(origin, "GET http://user:pass@auth.example.com/auth/.well-known/oauth-authorization-server HTTP/1.1\r\nhost: other.example\r\nconnection: close\r\n\r\n");
    const [head, body] = answer.split("\r\n\r\n");
    expect([head!.split("\r\n")[0], body]).toEqual(["HTTP/1.1 400 Bad Request", BODY]);
    const other = await raw(origin, "GET http://user:pass@auth.example.com/elsewhere HTTP/1.1\r\nhost: other.example\r\nconnection: close\r\n\r\n");
    const [otherHead, otherBody] = other.split("\r\n\r\n");
    expect([otherHead!.split("\r\n")[0], otherBody]).toEqual(["HTTP/1.1 404 Not Found", "host app"]);
  });

  it("the target's authority is the host, over the Host header; a trusted X-Forwarded-Host still comes first", async () => {
    const app = express();
    app.set("trust proxy", "loopback");
    app.use("/auth", plantgate(await plantgateApp()));
    const origin = await listen(app);
    const issuerOf = async (extra: string) => {
      const answer = await raw(origin, `GET http://auth.example.com/auth/.well-known/oauth-authorization-server HTTP/1.1\r\nhost: other.example\r\n${extra}connection: close\r\n\r\n`);
      const [head, body] = answer.split("\r\n\r\n");
      expect(head!.split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
      return (JSON.parse(body!) as { issuer: string }).issuer;
    };
    expect(await issuerOf("")).toBe("http://auth.example.com/auth");
    expect(await issuerOf("x-forwarded-host: proxy.example\r\n")).toBe("http://proxy.example/auth");
  });

  it("a target naming the other scheme (`https://...` over plain TCP; with trust proxy, the other than X-Forwarded-Proto's) -> the listener's 421 on a path plantgate answers (it was served as http://...); the host app's own paths go on", async () => {
    const misdirected = '{"error":"invalid_request","error_description":"The request\'s target is not served on this connection."}';
    const app = express();
    app.set("trust proxy", "loopback");
    app.use("/auth", plantgate(await plantgateApp()));
    app.use((_req, res) => void res.status(404).type("text").send("host app"));
    const origin = await listen(app);
    const ask = async (target: string, extra = "") => {
      const [head, body] = (await raw(origin, `GET ${target} HTTP/1.1\r\nhost: other.example\r\n${extra}connection: close\r\n\r\n`)).split("\r\n\r\n");
      return [target, head!.split("\r\n")[0], body];
    };
    const metadata = "/auth/.well-known/oauth-authorization-server";
    expect(await ask(`https://auth.example.com:443${metadata}`)).toEqual([`https://auth.example.com:443${metadata}`, "HTTP/1.1 421 Misdirected Request", misdirected]);
    expect(await ask(`http://auth.example.com${metadata}`, "x-forwarded-proto: https\r\n")).toEqual([`http://auth.example.com${metadata}`, "HTTP/1.1 421 Misdirected Request", misdirected]);
    expect(await ask("https://auth.example.com/elsewhere")).toEqual(["https://auth.example.com/elsewhere", "HTTP/1.1 404 Not Found", "host app"]);
    const [, served, body] = await ask(`https://auth.example.com:443${metadata}`, "x-forwarded-proto: https\r\n");
    expect([served, (JSON.parse(body!) as { issuer: string }).issuer]).toEqual(["HTTP/1.1 200 OK", "https://auth.example.com/auth"]);
  });
});
