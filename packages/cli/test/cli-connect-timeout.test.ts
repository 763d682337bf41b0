/**
 * A store that accepts the connection and never answers (a hung server, a proxy in front of a dead
 * one): the CLI gives up at its connect deadline, exit 3, and its line says the deadline passed.
 * Until 2026-12-02 PostgreSQL's read `(cause: Error: Connection terminated unexpectedly)`: the note
 * showed only the innermost cause, and pg-pool's `Connection terminated due to connection timeout`
 * around it was dropped, so a hung server read as one that closed the connection.
 */
import { createServer, type Server, type Socket } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../src/cli.js";

async function cli(argv: string[], env: Record<string, string>) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { env: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", ...env }, cwd: "/", readStdin: async () => "", stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

describe("a store that accepts connections and never answers", () => {
  let server: Server;
  const sockets: Socket[] = [];
  let port = 0;
  beforeEach(async () => {
    server = createServer((s) => void sockets.push(s));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as { port: number }).port;
  });
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  it("PostgreSQL: client list is exit 3 at the connect deadline, saying pg-pool's connection timeout before the innermost cause, never the password", async () => {
    const started = Date.now();
    const r = await cli(["client", "list"], { PLANTGATE_DATABASE_URL: `postgres://app:pw-Hunter2@127.0.0.1:${port}/app` });
    expect(Date.now() - started).toBeLessThan(25_000);
    expect(r).toEqual({
      code: 3,
      stdout: "",
      stderr: `plantgate: cannot open the store at postgres://app:***@127.0.0.1:${port}/app: postgres storage failed during open (cause: Error: Connection terminated due to connection timeout (cause: Error: Connection terminated unexpectedly))\n`,
    });
  }, 40_000);
});
