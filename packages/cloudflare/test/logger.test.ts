/**
 * A `logger` that fails, in workerd (Miniflare): the README's options table says "a logger that
 * throws is ignored (the answer stands)", and core guards its own calls so; the Worker's own lines
 * (a failed start, a stalled events flush, a scheduled run's) must keep to it as well.
 *
 * The real `createWorker()` entry is bundled for the Workers runtime with a logger whose every call
 * throws (a log sink that is down), and an `onEvent` hook that never settles (`/__hook?mode=never`). The entry hands
 * `ctx.waitUntil` on and counts the promises given to it that rejected (`/__waits`); `/__mark`
 * logs a line, so that once it is in workerd's output so is everything logged before it.
 */
import { describe, expect, it } from "vitest";
import { type ScheduledWorker, workerPerTest } from "./support.js";

const ENTRY = (options: string) => `
import { createWorker } from "../src/index.ts";
let mode = "open";
const fail = () => {
  throw new Error("log sink down");
};
const worker = createWorker({ logger: { error: fail, warn: fail }, onEvent: () => (mode === "never" ? new Promise(() => {}) : undefined), ...${options} });
let env;
const waits = { handed: 0, rejected: 0 };
export default {
  async fetch(request, bindings, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__hook") {
      mode = url.searchParams.get("mode") ?? mode;
      return new Response("ok");
    }
    if (url.pathname === "/__waits") return Response.json(waits);
    if (url.pathname === "/__mark") {
      console.log("--mark--");
      return new Response("ok");
    }
    env ??= { ...bindings };
    const counted = {
      waitUntil(promise) {
        waits.handed++;
        ctx.waitUntil(promise);
        promise.catch(() => void waits.rejected++);
      },
    };
    return worker.fetch(request, env, counted);
  },
  async scheduled(controller, bindings, ctx) {
    env ??= { ...bindings };
    return worker.scheduled(controller, env, ctx);
  },
};
`;

const { log, start } = workerPerTest();


const UNAVAILABLE_API = '{"error":1503,"message":"The service is temporarily unavailable; retry later."}';
const UNAVAILABLE_OAUTH = '{"error":"temporarily_unavailable","error_description":"The service is temporarily unavailable; retry later."}';
const PRUNED_NOTHING = '{"message":"plantgate prune","refreshTokens":0,"sessions":0,"attempts":0,"revokedTokens":0,"assertionJtis":0,"signingKeys":0,"auditEvents":0,"complete":true}';

const refused = (base: string) =>
  fetch(`${base}/UserService/connect/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa("nobody:wrong-secret")}` },
    body: "grant_type=client_credentials",
  });

describe("a logger that throws, in workerd", () => {
  it("a start that fails (no D1 binding): every request still gets the documented 503, in its endpoint's shape", async () => {
    const { base } = await start(ENTRY("{}"), { bindings: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" } });
    const answers = [];
    for (let i = 0; i < 2; i++) {
      const api = await fetch(`${base}/.well-known/jwks.json`);
      answers.push([api.status, api.headers.get("retry-after"), await api.text()]);
      const oauth = await refused(base);
      answers.push([oauth.status, oauth.headers.get("retry-after"), await oauth.text()]);
    }
    expect(answers).toEqual([
      [503, "5", UNAVAILABLE_API],
      [503, "5", UNAVAILABLE_OAUTH],
      [503, "5", UNAVAILABLE_API],
      [503, "5", UNAVAILABLE_OAUTH],
    ]);
    await fetch(`${base}/__mark`).then((r) => r.text());
    await log.waitFor("--mark--");
    expect(log.text).toContain("--mark--");
    expect(log.text).not.toContain("log sink down");
  }, 60_000);

  it("a stalled events flush, and a scheduled run whose events are not all delivered: the answers and the run's outcome stand", async () => {
    const { mf, base } = await start(ENTRY("{ fetchEventsTimeoutMs: 500, scheduledEventsTimeoutMs: 500 }"), { d1: true, bindings: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" } });
    expect((await fetch(`${base}/.well-known/jwks.json`)).status).toBe(200);
    await fetch(`${base}/__hook?mode=never`).then((r) => r.text());
    // client.authentication_failed, handed to a hook that never settles: the flush gives up and warns.
    const res = await refused(base);
    expect([res.status, await res.json()]).toEqual([401, { error: "invalid_client", error_description: "Client authentication failed." }]);
    const cron = (await mf.getWorker()) as unknown as ScheduledWorker;
    // Waits the bound for that event, then warns; the prune was done.
    expect(await cron.scheduled({ cron: "17 * * * *" })).toEqual({ outcome: "ok", noRetry: false });
    await log.waitFor(PRUNED_NOTHING);
    expect(log.text).toContain(PRUNED_NOTHING);
    // Every waitUntil of the requests ended without a rejection (the flush's warning threw in it).
    expect(await (await fetch(`${base}/__waits`)).json()).toEqual({ handed: 4, rejected: 0 });
    await fetch(`${base}/__mark`).then((r) => r.text());
    await log.waitFor("--mark--");
    expect(log.text).toContain("--mark--");
    expect(log.text).not.toContain("log sink down");
  }, 60_000);
});
