/**
 * One deadline for a whole operation: after Redis lost its script cache (a restart, `SCRIPT
 * FLUSH`), an operation sends EVALSHA, gets NOSCRIPT and sends EVAL. Until 2026-12-02 each of the
 * two had its own timeout, so a server that was slow to answer the NOSCRIPT and then hung held the
 * request up to twice the bound (2 x 1.25 x commandTimeoutMs) before the 503. Against a RESP
 * socket server that answers so (a redis-server cannot be made to answer NOSCRIPT late).
 */
import { createClient } from "redis";
import { describe, expect, it } from "vitest";
import { redisHotStores } from "../src/index.js";
import { respServer } from "./resp-server.js";

const TIMEOUT_MS = 400;

/** A hot store set on a server that answers EVALSHA with NOSCRIPT after `noscriptAfterMs` and never answers EVAL. */
async function withSlowNoscript(noscriptAfterMs: number, body: (hot: ReturnType<typeof redisHotStores>, commands: string[][]) => Promise<void>): Promise<void> {
  const timers: ReturnType<typeof setTimeout>[] = [];
  let reply: ((text: string) => void) | null = null;
  const server = await respServer(([name]) => {
    if (name?.toUpperCase() === "EVALSHA") {
      timers.push(setTimeout(() => reply?.("-NOSCRIPT No matching script. Please use EVAL.\r\n"), noscriptAfterMs));
      return null;
    }
    if (name?.toUpperCase() === "EVAL") return null;
    return undefined;
  });
  reply = server.reply;
  const client = createClient({ url: `redis://127.0.0.1:${server.port}`, disableOfflineQueue: true });
  client.on("error", () => {});
  await client.connect();
  try {
    await body(redisHotStores(client, { keyPrefix: "p:", commandTimeoutMs: TIMEOUT_MS }), server.commands);
  } finally {
    for (const t of timers) clearTimeout(t);
    client.destroy();
    await server.close();
  }
}

describe("an operation's EVALSHA and its EVAL after NOSCRIPT share one deadline", () => {
  it(`NOSCRIPT after 0.9 x the bound, then no answer to EVAL: the operation fails within 1.25 x the bound (${TIMEOUT_MS} ms), not about twice it`, async () => {
    await withSlowNoscript(TIMEOUT_MS * 0.9, async (hot, commands) => {
      const started = performance.now();
      const outcome = await hot.attempts.increment("k", Date.now(), 60_000).then(
        () => "answered",
        (e: Error) => `${e.message} (${String(e.cause)})`,
      );
      const ms = performance.now() - started;
      expect(outcome).toBe(`redis: attempts.increment failed (CommandTimeoutError: no reply within ${TIMEOUT_MS} ms)`);
      expect(commands.map(([name]) => name).filter((n) => n === "EVALSHA" || n === "EVAL")).toEqual(["EVALSHA", "EVAL"]);
      // 1.25 x the bound, and some slack for timers on a loaded machine (before: 0.9 + 1 to 1.25 x).
      expect(ms).toBeLessThan(TIMEOUT_MS * 1.25 + 100);
    });
  });

  it("a NOSCRIPT that comes after the deadline sends no EVAL: the operation has failed, nothing runs late", async () => {
    await withSlowNoscript(TIMEOUT_MS * 1.5, async (hot, commands) => {
      const outcome = await hot.attempts.increment("k", Date.now(), 60_000).then(
        () => "answered",
        (e: Error) => `${e.message} (${String(e.cause)})`,
      );
      expect(outcome).toBe(`redis: attempts.increment failed (CommandTimeoutError: no reply within ${TIMEOUT_MS} ms)`);
      await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS));
      expect(commands.map(([name]) => name).filter((n) => n === "EVALSHA" || n === "EVAL")).toEqual(["EVALSHA"]);
    });
  });
});
