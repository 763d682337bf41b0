/**
 * Runs the example as a user would: `wrangler dev --local` (workerd + a local D1 database) on a free
 * port with a fresh `--persist-to` directory, then talks HTTP to it with the demo credentials from
 * wrangler.toml. The process group is killed afterwards.
 *
 * Oversized uploads go through the HTTP suite's raw-socket client (whole body written before the
 * answer is read, `Connection: close`): before issue 16 wrangler dev's proxy answered them 503
 * "Your worker restarted mid-request" (the Worker had answered without reading the upload).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { rawUpload } from "@plantgate/http-suite-tests/raw-upload";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const CLIENT_ID = "demo-client";
const CLIENT_SECRET = "demo-secret-change-me-0123456789";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

let child: ChildProcess | undefined;
let persistDir = "";
let baseUrl = "";
let output = "";

async function waitReady(deadlineMs: number): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    if (child?.exitCode !== null) throw new Error(`wrangler dev exited (${child?.exitCode}):\n${output}`);
    try {
      const res = await fetch(`${baseUrl}/.well-known/jwks.json`, { signal: AbortSignal.timeout(5_000) });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`wrangler dev was not ready within ${deadlineMs} ms:\n${output}`);
}

describe("examples/cloudflare-worker under wrangler dev --local", () => {
  beforeAll(async () => {
    persistDir = await mkdtemp(join(tmpdir(), "plantgate-wrangler-"));
    const port = await freePort();
    const inspectorPort = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    child = spawn(
      join(root, "node_modules", ".bin", "wrangler"),
      ["dev", "--local", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspectorPort), "--persist-to", persistDir, "--show-interactive-dev-session=false"],
      { cwd: root, detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "1", WRANGLER_SEND_METRICS: "false" } },
    );
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    await waitReady(60_000);
  }, 70_000);

  afterAll(async () => {
    const proc = child;
    if (proc?.pid !== undefined && proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
      try {
        process.kill(-proc.pid, "SIGTERM");
      } catch {
        // already gone
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-proc.pid!, "SIGKILL");
        } catch {
          // already gone
        }
      }, 5_000);
      await exited;
      clearTimeout(timer);
    }
    if (persistDir) await rm(persistDir, { recursive: true, force: true });
  }, 15_000);

  it("issues a client_credentials token and creates a plant with an exact int64 id", async () => {
    const tokenRes = await fetch(`${baseUrl}/UserService/connect/token`, {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64")}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
    });
    expect(tokenRes.status).toBe(200);
    const token = (await tokenRes.json()) as { access_token: string; token_type: string; scope: string };
    expect(token.token_type).toBe("Bearer");
    expect(token.scope).toBe("Platform_UserAPIs Platform_AllAppsServerCommands");

    const plantRes = await fetch(`${baseUrl}/plants`, {
      method: "POST",
      headers: { authorization: `Bearer ${token.access_token}`, "content-type": "application/json" },
      body: '{"id":9223372036854775807,"name":"Monstera","tag":"indoor"}',
    });
    expect(plantRes.status).toBe(200);
    expect(await plantRes.text()).toBe('{"id":9223372036854775807,"name":"Monstera","tag":"indoor"}');

    // The Worker logs the token.issued event as one JSON object (console.log), never the secret or token.
    const deadline = Date.now() + 10_000;
    // wrangler dev prints each console.log line with its own decoration around it.
    const issued = () =>
      output
        .split("\n")
        .filter((l) => l.includes('{"level":'))
        .map((l) => {
          try {
            return JSON.parse(l.slice(l.indexOf('{"level":'), l.lastIndexOf("}") + 1)) as Record<string, unknown>;
          } catch {
            return {};
          }
        })
        .find((l) => l.event === "token.issued");
    while (issued() === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(issued(), output).toMatchObject({ level: "info", event: "token.issued", grant_type: "client_credentials", client_id: CLIENT_ID, subject: `client:${CLIENT_ID}` });
    // (wrangler itself lists the vars of wrangler.toml, the demo secret among them: only the Worker's lines count.)
    const workerLines = output.split("\n").filter((l) => l.includes('{"level":')).join("\n");
    expect(workerLines).not.toContain(CLIENT_SECRET);
    expect(workerLines).not.toContain(token.access_token);
  });

  describe("a 2 MB body gets the documented answer, 20 of 20, and the Worker still answers", () => {
    const twoMb = 2 * 1024 * 1024;
    const padded = (prefix: string, suffix: string) => prefix + "x".repeat(twoMb - prefix.length - suffix.length) + suffix;
    const basic = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString("base64")}`;
    const accessToken = async () => {
      const r = await rawUpload(`${baseUrl}/UserService/connect/token`, "grant_type=client_credentials", {
        headers: { authorization: basic, "content-type": "application/x-www-form-urlencoded" },
      });
      expect(r.status, r.text).toBe(200);
      return (JSON.parse(r.text) as { access_token: string }).access_token;
    };
    const twenty = async (path: string, body: string, headers: Record<string, string>) => {
      const answers: string[] = [];
      for (let i = 0; i < 20; i++) {
        const r = await rawUpload(`${baseUrl}${path}`, body, { headers }).then(
          (a) => `${a.status} ${a.headers.get("content-type")} ${a.text}`,
          (e: unknown) => `no answer: ${(e as Error).message}`,
        );
        answers.push(r);
      }
      return answers;
    };

    it("POST /plants: 400 1007", async () => {
      const body = padded('{"id":7,"name":"x","pad":"', '"}');
      expect(Buffer.byteLength(body)).toBe(twoMb);
      const answers = await twenty("/plants", body, { authorization: `Bearer ${await accessToken()}`, "content-type": "application/json" });
      expect(answers).toEqual(Array(20).fill('400 application/json {"error":1007,"message":"The body exceeds 65536 bytes."}'));
    }, 120_000);

    it("POST /plants without an access token (refused before the body is read): 401 1201", async () => {
      const body = padded('{"id":7,"name":"x","pad":"', '"}');
      const answers = await twenty("/plants", body, { "content-type": "application/json" });
      expect(answers).toEqual(Array(20).fill('401 application/json {"error":1201,"message":"An access token is required."}'));
    }, 120_000);

    it("the token endpoint: 400 invalid_request", async () => {
      const body = padded("grant_type=client_credentials&pad=", "");
      expect(Buffer.byteLength(body)).toBe(twoMb);
      const answers = await twenty("/UserService/connect/token", body, { authorization: basic, "content-type": "application/x-www-form-urlencoded" });
      expect(answers).toEqual(
        Array(20).fill('400 application/json {"error":"invalid_request","error_description":"The request body exceeds 65536 bytes."}'),
      );
    }, 120_000);

    it("then a normal request is answered", async () => {
      const id = "9223372036854775806";
      const r = await rawUpload(`${baseUrl}/plants`, `{"id":${id},"name":"After"}`, {
        headers: { authorization: `Bearer ${await accessToken()}`, "content-type": "application/json" },
      });
      expect({ status: r.status, text: r.text }).toEqual({ status: 200, text: `{"id":${id},"name":"After"}` });
    });
  });
});
