/**
 * `TokenInfo.expiresAt` is documented as "Epoch milliseconds (the client's clock)". A token answer
 * without `expires_in` (RFC 6749 §5.1: RECOMMENDED, not required) or with a very large one is
 * accepted ("used until an API rejects it"), but its expiresAt then is Number.MAX_SAFE_INTEGER,
 * which is no time a Date can hold (the ECMAScript limit is 8.64e15 ms): `new Date(expiresAt)` is
 * an Invalid Date and `toISOString()` throws. examples/client-script does exactly that.
 */
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { clientOn, manualClock, newMock, TOKEN_URL } from "./support.js";

const MAX_DATE_MS = 8.64e15;

describe("expiresAt of a token whose answer has no (or a huge) expires_in", () => {
  for (const [what, extra] of [
    ["without expires_in", {}],
    ["with expires_in 1e13 s", { expires_in: 1e13 }],
  ] as const) {
    it(`${what}: a time a Date can hold`, async () => {
      const fm = newMock();
      fm.post(TOKEN_URL, { status: 200, body: { access_token: "at-1", token_type: "Bearer", ...extra } });
      const client = clientOn(fm, { clock: manualClock().now });
      const info = await client.getToken();
      expect(info.accessToken).toBe("at-1");
      expect(info.expiresAt).toBe(MAX_DATE_MS);
      expect(() => new Date(info.expiresAt).toISOString()).not.toThrow();
    });
  }
});

it("examples/client-script against a server that omits expires_in: it goes on past the token line", async () => {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url === "/UserService/connect/token") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ access_token: "at-no-expiry-0123456789", token_type: "Bearer", scope: "Platform_UserAPIs" }));
      } else {
        res.writeHead(503, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: 1503, message: "stand-in server" }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const root = fileURLToPath(new URL("../../../", import.meta.url));
    const env = { ...process.env, PLANTGATE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, PLANTGATE_CLIENT_ID: "c", PLANTGATE_CLIENT_SECRET: "s" };
    const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
      const proc = spawn(`${root}node_modules/.bin/tsx`, ["src/main.ts"], { cwd: `${root}examples/client-script`, env, stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      proc.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
      proc.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
      proc.once("error", reject);
      proc.once("close", () => resolve({ stdout, stderr }));
    });
    // Expected: the token line, then the plant call's ApiError 1503 from the stand-in server.
    expect.soft(stderr).not.toContain("RangeError");
    expect(stdout).toMatch(/^token: /m);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}, 30_000);
