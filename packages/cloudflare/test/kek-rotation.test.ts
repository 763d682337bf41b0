/**
 * A key encryption key rotation on the Worker, in workerd (Miniflare: three Workers on one D1
 * database, each the real `createWorker()` entry, standing for the deploys of the rotation). The
 * documented steps are: the new KEK first and the old one kept (`PLANTGATE_KEY_ENCRYPTION_KEY=
 * <new>,<old>`), `keys reencrypt`, then the old one dropped. No CLI reaches D1, so on the Worker the
 * middle step is the console's "Re-encrypt keys" (`POST /console/api/signing-keys/reencrypt`),
 * which the operator calls when they choose (never done on its own: a version rolled back to <old>
 * alone could not open the moved keys). Until 2026-11-30 there was none, the keys stayed sealed
 * under the old KEK, and a deploy without it failed every start. Also here, the other use of the
 * first KEK in workerd: the brute-force counters' keys in D1 (an HMAC under it, since 2026-12-03).
 */
import { createHash, createHmac, hkdfSync } from "node:crypto";
import type { Readable } from "node:stream";
import { Miniflare } from "miniflare";
import { afterAll, describe, expect, it } from "vitest";
import { bundle, CapturedLog, captureStdio, COMPATIBILITY_DATE, type ScheduledWorker } from "./support.js";

const OLD = "A".repeat(43);
const NEW = "B".repeat(42) + "A";
const ADMIN = { username: "operator", password: "operator-password-1" };
const ORIGIN = "http://worker.test";
const SETTINGS = {
  PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
  // The console on, with an administrator (PLANTGATE_BOOTSTRAP_ADMIN implies PLANTGATE_CONSOLE).
  PLANTGATE_BOOTSTRAP_ADMIN: "1",
  PLANTGATE_BOOTSTRAP_USERNAME: ADMIN.username,
  PLANTGATE_BOOTSTRAP_PASSWORD: ADMIN.password,
};

let mf: Miniflare | undefined;
const log = new CapturedLog();
afterAll(async () => {
  await mf?.dispose();
});

type Worker = ScheduledWorker & { fetch(url: string, init?: RequestInit): Promise<Response> };

describe("a key encryption key rotation on the Worker", () => {
  it("with the new KEK first and the old one kept, the console's re-encrypt call moves every key under the new one; a deploy with the new KEK alone then serves; the cron run moves nothing on its own", async () => {
    const script = await bundle('import { createWorker } from "../src/index.ts";\nexport default createWorker();\n', { minify: true });
    const worker = (name: string, kek: string) => ({ name, modules: true, script, compatibilityDate: COMPATIBILITY_DATE, d1Databases: { DB: "rotation" }, bindings: { ...SETTINGS, PLANTGATE_KEY_ENCRYPTION_KEY: kek } });
    mf = new Miniflare({
      workers: [worker("before", OLD), worker("during", `${NEW},${OLD}`), worker("after", NEW)],
      handleRuntimeStdio: (stdout: Readable, stderr: Readable) => captureStdio(stdout, stderr, log.onLog),
    });
    const get = async (name: string) => (await mf!.getWorker(name)) as unknown as Worker;
    const jwks = async (w: Worker) => {
      const res = await w.fetch(`${ORIGIN}/.well-known/jwks.json`);
      const body = (await res.json()) as { keys?: { kid: string }[] };
      return [res.status, body.keys?.map((k) => k.kid) ?? body];
    };

    // The first deploy makes the first key, sealed under the old KEK.
    const [status, kids] = await jwks(await get("before"));
    expect(status).toBe(200);
    const kid = (kids as string[])[0]!;

    // The deploy with both KEKs serves the same key.
    const during = await get("during");
    expect(await jwks(during)).toEqual([200, [kid]]);
    // Its cron run is housekeeping only: the keys stay where they are until the operator moves them.
    expect(await during.scheduled({ cron: "17 * * * *" })).toEqual({ outcome: "ok", noRetry: false });

    // The operator signs in to its console as a browser on its page does (Sec-Fetch-Site:
    // same-origin; no Origin header, which Miniflare's own entry refuses for another host than its
    // own: the console takes a request without one, as from a script).
    const browser = { "sec-fetch-site": "same-origin" };
    const signIn = await during.fetch(`${ORIGIN}/console/api/session`, { method: "POST", headers: { ...browser, "content-type": "application/json" }, body: JSON.stringify(ADMIN) });
    expect([signIn.status, signIn.status === 200 ? null : await signIn.text()]).toEqual([200, null]);
    const cookie = /^(plantgate_console=[^;]*);/.exec(signIn.headers.get("set-cookie")!)![1]!;
    const { csrfToken } = (await signIn.json()) as { csrfToken: string };
    const listed = async () => {
      const res = await during.fetch(`${ORIGIN}/console/api/signing-keys`, { headers: { ...browser, cookie } });
      return ((await res.json()) as { keys: { kid: string; kekStatus: string | null }[] }).keys.map((k) => [k.kid, k.kekStatus]);
    };
    expect(await listed()).toEqual([[kid, "older"]]);

    // Without the CSRF token: refused, nothing moved.
    const noCsrf = await during.fetch(`${ORIGIN}/console/api/signing-keys/reencrypt`, { method: "POST", headers: { ...browser, cookie } });
    expect([noCsrf.status, await noCsrf.json()]).toEqual([403, { error: 1303, message: "The CSRF token is missing or wrong; reload the console." }]);
    expect(await listed()).toEqual([[kid, "older"]]);

    // Re-encrypt keys.
    const moved = await during.fetch(`${ORIGIN}/console/api/signing-keys/reencrypt`, { method: "POST", headers: { ...browser, cookie, "x-csrf-token": csrfToken } });
    expect([moved.status, await moved.json()]).toEqual([200, { reencrypted: [kid], unchanged: [], left: [], complete: true }]);
    expect(await listed()).toEqual([[kid, "current"]]);

    // The deploy with the new KEK alone starts and serves the same key.
    expect(await jwks(await get("after"))).toEqual([200, [kid]]);
  }, 120_000);

  it("in workerd, with a KEK the brute-force counters' keys in D1 are an HMAC under a key derived from the first KEK, never the SHA-256 of the client id sent", async () => {
    const script = await bundle('import { createWorker } from "../src/index.ts";\nexport default createWorker();\n', { minify: true });
    const own = new Miniflare({
      modules: true,
      script,
      compatibilityDate: COMPATIBILITY_DATE,
      d1Databases: { DB: "counters" },
      bindings: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", PLANTGATE_KEY_ENCRYPTION_KEY: `${NEW},${OLD}` },
      handleRuntimeStdio: (stdout: Readable, stderr: Readable) => captureStdio(stdout, stderr, log.onLog),
    });
    try {
      // A client secret sent as the client id (id and secret swapped), twice, from one address.
      const swapped = "s3cr3t-sent-as-the-client-id";
      const answers: [number, unknown][] = [];
      for (let i = 0; i < 2; i++) {
        const res = await own.dispatchFetch(`${ORIGIN}/UserService/connect/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`${swapped}:x`)}`, "cf-connecting-ip": "203.0.113.5" },
          body: "grant_type=client_credentials",
        });
        answers.push([res.status, await res.json()]);
      }
      const refused = [401, { error: "invalid_client", error_description: "Client authentication failed." }];
      expect(answers).toEqual([refused, refused]);
      const db = await own.getD1Database("DB");
      const rows = (await db.prepare("select attempt_key, count from pg_attempts order by attempt_key").all()).results as { attempt_key: string; count: number }[];
      const text = JSON.stringify(["client", "c", swapped, "203.0.113.5"]);
      const derived = Buffer.from(hkdfSync("sha256", Buffer.from(NEW, "base64url"), new Uint8Array(0), "plantgate attempt counter keys", 32));
      const hmac = "t:" + createHmac("sha256", derived).update(text, "utf8").digest("base64url");
      const sha = "t:" + createHash("sha256").update(text, "utf8").digest("base64url");
      expect(rows.map((r) => r.attempt_key)).toContain(hmac);
      expect(rows.map((r) => r.attempt_key)).not.toContain(sha);
      expect(rows.find((r) => r.attempt_key === hmac)?.count).toBe(2);
    } finally {
      await own.dispose();
    }
  }, 120_000);
});
