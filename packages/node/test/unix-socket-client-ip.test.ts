/**
 * A listener on a Unix domain socket (nginx on the same host in front, `proxy_pass
 * http://unix:/run/plantgate.sock`): the socket has no peer address, so the adapter says
 * `unixSocket: true`, and plantgate's `trustedProxies` (`"unix"`, or a hop count) decides whether
 * X-Forwarded-For is believed. Until 2026-12-02 `client_ip` was null there, whatever the option said.
 * Real sockets: a Unix-socket server and a TCP one, plantgate behind each.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPlantgate, type PlantgateOptions, type SecurityEvent } from "@plantgate/core";
import { afterEach, describe, expect, it } from "vitest";
import { createRequestListener, toExchange } from "../src/index.js";

const servers: Server[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((resolve) => (s.closeAllConnections(), s.close(() => resolve())))));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The `client_ip` plantgate resolves for one token request over `where` (a socket path or a TCP port). */
async function clientIpOver(transport: "unix" | "tcp", options: PlantgateOptions, xff?: string): Promise<{ status: number; clientIp: string | null | undefined }> {
  const events: SecurityEvent[] = [];
  const app = createPlantgate({ passwordHashIterations: 1000, onEvent: (e) => void events.push(e), ...options });
  const { clientSecret } = await app.admin.createClient({ clientId: "unix-client" });
  const server = createServer(createRequestListener(app, { origin: "http://auth.test" }));
  servers.push(server);
  let where: { socketPath: string } | { host: string; port: number };
  if (transport === "unix") {
    const dir = mkdtempSync(join(tmpdir(), "pg-unix-"));
    dirs.push(dir);
    const socketPath = join(dir, "plantgate.sock");
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    where = { socketPath };
  } else {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    where = { host: "127.0.0.1", port: (server.address() as { port: number }).port };
  }
  const body = "grant_type=client_credentials";
  const status = await new Promise<number>((resolve, reject) => {
    const req = request(
      {
        ...where,
        method: "POST",
        path: "/UserService/connect/token",
        headers: {
          host: "auth.test",
          "content-type": "application/x-www-form-urlencoded",
          "content-length": String(body.length),
          authorization: `Basic ${btoa(`unix-client:${clientSecret}`)}`,
          ...(xff === undefined ? {} : { "x-forwarded-for": xff }),
        },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode!));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
  await app.flushEvents();
  return { status, clientIp: (events.find((e) => e.type === "token.issued") as { client_ip?: string | null } | undefined)?.client_ip };
}

describe("client IP over a Unix domain socket", () => {
  it('trustedProxies ["unix"]: the client is the rightmost X-Forwarded-For entry nginx appended', async () => {
    expect(await clientIpOver("unix", { trustedProxies: ["unix"] }, "6.6.6.6, 198.51.100.7")).toEqual({ status: 200, clientIp: "198.51.100.7" });
  });

  it("a hop count counts the Unix-socket peer as the first proxy", async () => {
    expect(await clientIpOver("unix", { trustedProxies: 1 }, "6.6.6.6, 198.51.100.7")).toEqual({ status: 200, clientIp: "198.51.100.7" });
  });

  it("without trustedProxies: null (no address is known), X-Forwarded-For ignored", async () => {
    expect(await clientIpOver("unix", {}, "198.51.100.7")).toEqual({ status: 200, clientIp: null });
  });

  it('over TCP, "unix" trusts no address: the peer is the client', async () => {
    expect(await clientIpOver("tcp", { trustedProxies: ["unix"] }, "198.51.100.7")).toEqual({ status: 200, clientIp: "127.0.0.1" });
  });

  it("a TCP socket that lost its addresses (destroyed before the request was read) is not taken for a Unix socket", async () => {
    // Since 2026-12-02 a live node:net socket with neither address counts as a Unix socket (one
    // handed over as a file descriptor: test/unix-socket-fd.test.ts); a destroyed one has neither too.
    let answer!: (seen: Record<string, unknown>) => void;
    const seen = new Promise<Record<string, unknown>>((resolve) => (answer = resolve));
    const server = createServer((req) => {
      req.socket.destroy();
      const exchange = toExchange(req, { origin: "http://auth.test" });
      answer({ remoteAddress: req.socket.remoteAddress, localAddress: req.socket.localAddress, clientIp: exchange.clientIp, unixSocket: exchange.unixSocket });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    request({ host: "127.0.0.1", port: (server.address() as { port: number }).port, path: "/" }).on("error", () => {}).end();
    expect(await seen).toEqual({ remoteAddress: undefined, localAddress: undefined, clientIp: undefined, unixSocket: undefined });
  });
});
