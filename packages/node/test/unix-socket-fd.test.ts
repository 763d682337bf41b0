/**
* From the final diff review: a server listening on a Unix domain socket it was handed as a file descriptor
 * (systemd socket activation: `server.listen({ fd: 3 })`) has no `_pipeName`, so `server.address()`
 * is null, onUnixSocket (packages/node/src/to-request.ts) says false, and `client_ip` stays null
 * though trustedProxies lists "unix" (README "Client IP behind proxies").
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

it('a Unix socket handed over as fd 3 (systemd socket activation): trustedProxies ["unix"] believes X-Forwarded-For', async () => {
  const dir = mkdtempSync(join(tmpdir(), "pg-unix-fd-"));
  try {
    const socketPath = join(dir, "plantgate.sock");
    const child = fileURLToPath(new URL("./unix-socket-fd-child.ts", import.meta.url));
        // Python plays systemd: binds and listens, then runs the server with the socket as fd 3.
    const py = `import os,socket,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_STREAM)\ns.bind(sys.argv[1]);s.listen(16)\nos.dup2(s.fileno(),3)\nos.set_inheritable(3,True)\nos.execv(sys.argv[2],[sys.argv[2],"--import","tsx",sys.argv[3]])`;
    const proc = spawn("python3", ["-c", py, socketPath, process.execPath, child], { stdio: ["ignore", "pipe", "inherit"], cwd: fileURLToPath(new URL("..", import.meta.url)) });
    const lines = createInterface({ input: proc.stdout! })[Symbol.asyncIterator]();
    const { secret } = JSON.parse((await lines.next()).value as string) as { secret: string };
    const body = "grant_type=client_credentials";
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          socketPath, method: "POST", path: "/UserService/connect/token",
          headers: { host: "auth.test", "content-type": "application/x-www-form-urlencoded", "content-length": String(body.length), authorization: `Basic ${btoa(`unix-client:${secret}`)}`, "x-forwarded-for": "6.6.6.6, 198.51.100.7" },
        },
        (res) => { res.resume(); res.on("end", () => resolve(res.statusCode!)); },
      );
      req.on("error", reject);
      req.end(body);
    });
    const seen = JSON.parse((await lines.next()).value as string) as { address: unknown; clientIp: unknown };
    proc.kill();
    expect({ status, ...seen }).toEqual({ status: 200, address: seen.address, clientIp: "198.51.100.7" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 30_000);
