/**
 * The adapter hands the socket peer address to the app as `fetch(request, { clientIp })`, and
 * never an address taken from a forwarded header: whether to believe X-Forwarded-For is decided
 * by the app (plantgate's `trustedProxies`), in one place.
 */
import fetch from "node-fetch";
import { describe, expect, it } from "vitest";
import type { FetchApp, HandleInfo } from "../src/index.js";
import { start } from "./support.js";

describe("client info", () => {
  it("passes socket.remoteAddress as clientIp, whatever X-Forwarded-For says", async () => {
    const seen: (HandleInfo | undefined)[] = [];
    const app: FetchApp = {
      async fetch(_request, info) {
        seen.push(info);
        return new Response("ok");
      },
    };
    const { url } = await start(app);
    const res = await fetch(`${url}/x`, { headers: { "x-forwarded-for": "198.51.100.9", "x-real-ip": "198.51.100.10" } });
    expect(res.status).toBe(200);
    expect(seen).toEqual([{ clientIp: "127.0.0.1" }]);
    // The direct body reader comes along (HandleInfo.readBody), whichever method the app has.
    expect(typeof seen[0]?.readBody).toBe("function");
  });
});
