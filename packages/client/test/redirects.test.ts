/**
 * Every call of the client carries credentials (a client secret, a password, a refresh token or a
 * bearer token), so a redirect is never followed: a server (or anything between) answering 307
 * to another origin must not receive the form or the Authorization header a second time there.
 * Real sockets, with the global fetch and with node-fetch 3.
 */
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import nodeFetch from "node-fetch";
import { afterEach, describe, expect, it } from "vitest";
import { createClient, NetworkError, type FetchLike } from "../src/index.js";
import { rejectionOf } from "./support.js";

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  body: string;
}

const servers: Server[] = [];

interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

async function listen(handler: (req: IncomingMessage, body: string) => Answer): Promise<string> {
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      const answer = handler(req, body);
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? "");
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** Where a followed redirect would land: records everything it is sent. */
async function elsewhere(): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const url = await listen((req, body) => {
    seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, body });
    return { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ access_token: "x", token_type: "Bearer", expires_in: 60 }) };
  });
  return { url, seen };
}

const transports: [string, FetchLike | undefined][] = [
  ["global fetch", undefined],
  ["node-fetch 3", nodeFetch],
];

for (const [name, fetch] of transports) {
  describe(`redirects are refused, never followed (${name})`, () => {
    for (const status of [301, 302, 303, 307, 308]) {
      it(`a ${status} from the token endpoint: NetworkError redirect_refused, and the other origin receives nothing (password grant, client_secret_post)`, async () => {
        const target = await elsewhere();
        const base = await listen((req) => ({ status, headers: { location: `${target.url}${req.url}` } }));
        const client = createClient({
          baseUrl: base,
          clientId: "third-party",
          clientSecret: "s3cret-s3cret-s3cret-s3cret",
          auth: "post",
          credentials: { username: "alice", password: "correct horse battery staple" },
          ...(fetch ? { fetch } : {}),
        });
        const error = await rejectionOf(client.listAccounts());
        expect(error).toBeInstanceOf(NetworkError);
        expect(error).toMatchObject({ reason: "redirect_refused", status });
        expect((error as Error).message).toBe(
          `POST /UserService/connect/token answered with a redirect (HTTP ${status}); redirects are not followed because the request carries credentials`,
        );
        expect((error as Error).message).not.toContain(target.url);
        expect(target.seen).toEqual([]);
      });
    }

    it("a 307 from an API call with a bearer token: refused, and the token never reaches the other origin", async () => {
      const target = await elsewhere();
      const base = await listen((req): Answer => {
        if (req.url === "/UserService/connect/token") {
          return { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify({ access_token: "tok-abc", token_type: "Bearer", expires_in: 3600 }) };
        }
        return { status: 307, headers: { location: `${target.url}${req.url}` } };
      });
      const client = createClient({ baseUrl: base, clientId: "third-party", clientSecret: "s3cret-s3cret-s3cret-s3cret", ...(fetch ? { fetch } : {}) });
      const error = await rejectionOf(client.listAccounts());
      expect(error).toMatchObject({ reason: "redirect_refused", status: 307 });
      expect((error as Error).message).toMatch(/^GET \/rbac\/ServerCommand\/GetAccountList answered with a redirect \(HTTP 307\)/);
      expect(target.seen).toEqual([]);
    });
  });
}
