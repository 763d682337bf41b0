/** stdout lines are held for at most one short interval, and never lost when the process exits. */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const FIXTURE = fileURLToPath(new URL("./fixtures/log-lines.ts", import.meta.url));

function run(count: number, mode: "exit" | "stay") {
  const child = spawn(process.execPath, ["--import", "tsx", FIXTURE, String(count), mode], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
  const lines = () => out.split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  return { child, lines };
}

describe("stdout lines", () => {
  it("writes every held line when the process exits right after logging", async () => {
    const { child, lines } = run(2000, "exit");
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    expect(code).toBe(0);
    const got = lines();
    expect(got).toHaveLength(2000);
    expect(got.map((l) => l.id)).toEqual(Array.from({ length: 2000 }, (_, i) => `id-${i}`));
  });

  it("lines reach stdout while the process keeps running (no wait for more lines)", async () => {
    const { child, lines } = run(3, "stay");
    try {
      await new Promise<void>((resolve) => child.stderr.once("data", () => resolve()));
      const started = Date.now();
      while (lines().length < 3 && Date.now() - started < 2000) await new Promise((r) => setTimeout(r, 5));
      expect(lines().map((l) => l.event)).toEqual(["token.issued", "token.issued", "token.issued"]);
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      child.kill();
    }
  });
});
