/**
 * The Express mount passes the raw socket address as `clientIp`, not `req.ip`: Express's own
 * "trust proxy" setting does not decide whom plantgate believes; plantgate's `trustedProxies` does.
 */
import express from "express";
import { describe, expect, it } from "vitest";
import { plantgate, type FetchApp } from "../src/index.js";
import { CLIENT_ID, CLIENT_SECRET, listen, plantgateApp } from "./support.js";

describe("client info through Express", () => {
  it("clientIp is the socket address even with app.set('trust proxy', true)", async () => {
    const seen: unknown[] = [];
    const probe: FetchApp = {
      async fetch(_request, info) {
        seen.push(info);
        return new Response("ok");
      },
    };
    const app = express();
    app.set("trust proxy", true);
    app.use("/probe", plantgate(probe, { notFound: "respond" }));
    const origin = await listen(app);
    const res = await fetch(`${origin}/probe/x`, { headers: { "x-forwarded-for": "198.51.100.9" } });
    expect(res.status).toBe(200);
    expect(seen).toEqual([{ clientIp: "127.0.0.1" }]);
  });

  it("brute-force counters follow the socket address unless the proxy is trusted", async () => {
    const pg = await plantgateApp({ bruteForce: { maxFailures: 2, windowSeconds: 60 }, trustedProxies: ["127.0.0.1"] });
    const app = express();
    app.use("/auth", plantgate(pg));
    const origin = await listen(app);
    const attempt = (secret: string, xff: string) =>
      fetch(`${origin}/auth/UserService/connect/token`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: `Basic ${btoa(`${CLIENT_ID}:${secret}`)}`,
          "x-forwarded-for": xff,
        },
        body: "grant_type=client_credentials",
      });
    // 127.0.0.1 is a trusted proxy here, so the client is the X-Forwarded-For address.
    expect((await attempt("wrong", "203.0.113.1")).status).toBe(401);
    expect((await attempt("wrong", "203.0.113.1")).status).toBe(401);
    const locked = await attempt(CLIENT_SECRET, "203.0.113.1");
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await locked.json()).toEqual({
      error: "temporarily_unavailable",
      error_description: "Too many failed attempts; retry after the time in Retry-After.",
    });
    expect((await attempt(CLIENT_SECRET, "203.0.113.2")).status).toBe(200);
  });

  // README, Express, "Client IP": behind a proxy, Express's `trust proxy` alone leaves client_ip the
  // proxy's (here the loopback peer's) address; plantgate's trustedProxies is what believes XFF.
  for (const [name, trustedProxies, expected] of [
    ["trust proxy alone", undefined, "127.0.0.1"],
    ["trust proxy and trustedProxies", ["127.0.0.1"], "203.0.113.7"],
  ] as const) {
    it(`${name}: the token.issued event's client_ip is ${expected}`, async () => {
      const events: Array<{ type: string; client_ip?: string | null }> = [];
      const pg = await plantgateApp({ onEvent: (event) => void events.push(event as { type: string; client_ip?: string | null }), ...(trustedProxies ? { trustedProxies: [...trustedProxies] } : {}) });
      const app = express();
      app.set("trust proxy", true);
      app.use(plantgate(pg));
      const origin = await listen(app);
      const res = await fetch(`${origin}/auth/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${CLIENT_ID}:${CLIENT_SECRET}`)}`, "x-forwarded-for": "203.0.113.7" },
        body: "grant_type=client_credentials",
      });
      expect(res.status).toBe(200);
      await pg.flushEvents(5000);
      expect(events.filter((event) => event.type === "token.issued").map((event) => event.client_ip)).toEqual([expected]);
    });
  }
});
