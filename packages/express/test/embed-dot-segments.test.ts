/**
 * A host guard mounted on one of plantgate's paths (a rate limiter on the token endpoint, an
 * allow-list on the console) sees Express's raw path; the WHATWG URL parser behind every `Request`
 * resolves dot segments and reads `\` as `/`. A target such as `/auth/UserService/x/../connect/token`
 * (or with `%2e%2e`, `.`, `\`) went past the guard and was still served by plantgate as the token
 * endpoint. Such a target is now not plantgate's: the middleware calls `next()` (README, Express:
 * "Paths the URL parser reads as another path"), and the host app's own routes and 404 answer it.
 */
import express from "express";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { plantgate } from "../src/index.js";
import { basic, listen, plantgateApp } from "./support.js";

function rawRequest(origin: string, text: string): Promise<string> {
  const u = new URL(origin);
  return new Promise((resolve, reject) => {
    let out = "";
    const s = connect(Number(u.port), u.hostname, () => s.write(text));
    s.on("data", (d) => (out += d));
    s.on("error", reject);
    s.on("end", () => resolve(out));
  });
}

/** Status and body of a raw answer (Express answers with Content-Length here). */
function parse(answer: string): { status: number; contentType: string | undefined; body: string } {
  const [head, body = ""] = answer.split("\r\n\r\n");
  const contentType = /\r\ncontent-type: ([^\r]*)/i.exec(head!)?.[1];
  return { status: Number(head!.split(" ")[1]), contentType, body };
}

const FORM = "grant_type=client_credentials";
const tokenRequest = (target: string): string =>
  `POST ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: ${basic()}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${FORM.length}\r\nConnection: close\r\n\r\n${FORM}`;

async function hostApp(mount: "root" | "/auth", notFound: "next" | "respond" = "next"): Promise<string> {
  const pg = await plantgateApp();
  const app = express();
  // The host's guard, e.g. express-rate-limit or an IP allow-list, on the token path.
  app.use("/auth/UserService/connect/token", (_req, res) => {
    res.status(429).json({ guard: true });
  });
  if (mount === "root") app.use(plantgate(pg, { notFound }));
  else app.use("/auth", plantgate(pg, { notFound }));
  // The host's own 404.
  app.use((req, res) => {
    res.status(404).json({ host404: req.originalUrl });
  });
  return listen(app);
}

describe("host guards on plantgate's paths and dot segments", () => {
  for (const mount of ["root", "/auth"] as const) {
    for (const notFound of ["next", "respond"] as const) {
      for (const target of [
        "/auth/UserService/x/../connect/token",
        "/auth/UserService/x/%2e%2e/connect/token",
        "/auth/UserService/x/.%2E/connect/token",
        "/auth/UserService/./connect/token",
        "/auth/UserService/%2e/connect/token",
        "/auth/UserService\\connect/token",
      ]) {
        it(`${mount} mount, notFound ${notFound}: ${target} goes on to the host's 404, not served as the token endpoint`, async () => {
          const origin = await hostApp(mount, notFound);
          expect(parse(await rawRequest(origin, tokenRequest(target)))).toEqual({
            status: 404,
            contentType: "application/json; charset=utf-8",
            body: JSON.stringify({ host404: target }),
          });
        });
      }
    }

    it(`${mount} mount: the token path as sent meets the guard, and without the guard it is served`, async () => {
      const origin = await hostApp(mount);
      expect(parse(await rawRequest(origin, tokenRequest("/auth/UserService/connect/token")))).toEqual({
        status: 429,
        contentType: "application/json; charset=utf-8",
        body: '{"guard":true}',
      });
      // plantgate's other paths are still served (a query may hold `/../` and `\`).
      const jwks = parse(await rawRequest(origin, "GET /auth/.well-known/jwks.json?x=/../y\\z HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
      expect({ status: jwks.status, contentType: jwks.contentType, keys: Array.isArray((JSON.parse(jwks.body) as { keys: unknown }).keys) }).toEqual({
        status: 200,
        contentType: "application/json",
        keys: true,
      });
    });
  }
});
