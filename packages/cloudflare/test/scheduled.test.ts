/**
 * The Worker's cron handler in workerd (Miniflare): the real `createWorker()` entry, bundled for
 * the Workers runtime, gets a scheduled event and prunes its D1 database. The rows are seeded and
 * checked from Node through the same D1 database (over the bridge Worker of storage-sql's d1-bridge.ts).
 */
import type { Readable } from "node:stream";
import { createD1Storage, type D1Storage } from "@plantgate/storage-sql/d1";
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectD1Bridge, d1BridgeWorker, type D1Bridge } from "../../storage-sql/test/d1-bridge.js";
import { bundle, CapturedLog, captureStdio } from "./support.js";

let mf: Miniflare | undefined;
let bridge: D1Bridge | undefined;
let storage: D1Storage;
const log = new CapturedLog();

beforeAll(async () => {
  const script = await bundle('import { createWorker } from "../src/index.ts";\nexport default createWorker();\n');
  mf = new Miniflare({
    workers: [
      { name: "plantgate", modules: true, script, d1Databases: ["DB"], bindings: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000" } },
      // The same Worker on the same database, deployed with the audit trail off.
      { name: "plantgate-audit-off", modules: true, script, d1Databases: ["DB"], bindings: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", PLANTGATE_AUDIT: "0" } },
      // The same D1 database, reached from Node over the bridge Worker (see its file).
      d1BridgeWorker("DB"),
    ],
    handleRuntimeStdio: (stdout: Readable, stderr: Readable) => captureStdio(stdout, stderr, log.onLog),
  });
  // The first request migrates D1.
  const res = await mf.dispatchFetch("http://worker.test/.well-known/jwks.json");
  await res.arrayBuffer();
  expect(res.status).toBe(200);
  bridge = await connectD1Bridge(mf);
  storage = createD1Storage(bridge.database);
}, 60_000);
afterAll(async () => {
  await bridge?.close();
  await mf?.dispose();
});

describe("createWorker().scheduled in workerd", () => {
  it("a cron event prunes D1: expired rows are deleted, live ones stay, and the counts are logged", async () => {
    const now = Date.now();
    const token = (hash: string, expiresAt: number, familyExpiresAt: number, consumedAt: number | null) => ({
      tokenHash: hash,
      familyId: `family-${hash}`,
      clientId: "c",
      accountId: "a",
      scope: ["offline_access"],
      createdAt: now - 40 * 86_400_000,
      expiresAt,
      familyExpiresAt,
      consumedAt,
      revokedAt: null,
      replay: null,
      graceUses: 0,
    });
    await storage.refreshTokens.create(token("rt-sliding-over", now - 60_000, now + 86_400_000, null));
    await storage.refreshTokens.create(token("rt-family-over", now + 60_000, now - 60_000, now - 120_000));
    await storage.refreshTokens.create(token("rt-rotated-family-live", now - 60_000, now + 86_400_000, now - 120_000));
    await storage.sessions.create({ idHash: "s-over", accountId: "a", csrfHash: "c", createdAt: now - 7_200_000, expiresAt: now - 60_000 });
    await storage.sessions.create({ idHash: "s-live", accountId: "a", csrfHash: "c", createdAt: now, expiresAt: now + 3_600_000 });
    await storage.attempts.increment("t:over", now - 16 * 60_000, 15 * 60_000);
    await storage.attempts.increment("t:live", now - 60_000, 15 * 60_000);
    await storage.revokedTokens.add("jti-over", now - 60_000);
    await storage.revokedTokens.add("jti-live", now + 3_600_000);

    // Miniflare types its Fetcher with workers-types, which this package does not install.
    const worker = (await mf!.getWorker()) as unknown as {
      scheduled(options: { cron?: string; scheduledTime?: Date }): Promise<{ outcome: string; noRetry: boolean }>;
    };
    const result = await worker.scheduled({ cron: "0 * * * *", scheduledTime: new Date(now) });
    expect(result).toEqual({ outcome: "ok", noRetry: false });

    expect(await storage.refreshTokens.findByHash("rt-sliding-over")).toBeNull();
    expect(await storage.refreshTokens.findByHash("rt-family-over")).toBeNull();
    expect((await storage.refreshTokens.findByHash("rt-rotated-family-live"))?.consumedAt).toBe(now - 120_000);
    expect(await storage.sessions.get("s-over")).toBeNull();
    expect((await storage.sessions.get("s-live"))?.expiresAt).toBe(now + 3_600_000);
    expect(await storage.attempts.get("t:over")).toBeNull();
    expect(await storage.attempts.get("t:live")).toEqual({ key: "t:live", count: 1, windowStart: now - 60_000 });
    expect(await storage.revokedTokens.has("jti-over")).toBe(false);
    expect(await storage.revokedTokens.has("jti-live")).toBe(true);

    const line = '{"message":"plantgate prune","refreshTokens":2,"sessions":1,"attempts":1,"revokedTokens":1,"assertionJtis":0,"signingKeys":0,"auditEvents":0,"complete":true}';
    await log.waitFor(line);
    expect(log.text).toContain(line);

    // A second run finds nothing.
    expect(await worker.scheduled({ cron: "0 * * * *" })).toEqual({ outcome: "ok", noRetry: false });
    const zero = '{"message":"plantgate prune","refreshTokens":0,"sessions":0,"attempts":0,"revokedTokens":0,"assertionJtis":0,"signingKeys":0,"auditEvents":0,"complete":true}';
    await log.waitFor(zero);
    expect(log.text).toContain(zero);
  });

  it("with PLANTGATE_AUDIT=0, a cron event still deletes the events kept while the trail was on, past the retention (they stayed for good until 2026-12-02)", async () => {
    const now = Date.now();
    const kept = createD1Storage(bridge!.database, { audit: true }).audit!;
    const event = (id: string, time: number) => ({ id, type: "account.login_failed", time, clientId: "c", accountId: null, username: "alice", data: JSON.stringify({ type: "account.login_failed", username: "alice", client_ip: "203.0.113.9", id, time }) });
    await kept.append(event("e-91-days", now - 91 * 86_400_000));
    await kept.append(event("e-89-days", now - 89 * 86_400_000));
    const worker = (await mf!.getWorker("plantgate-audit-off")) as unknown as {
      scheduled(options: { cron?: string; scheduledTime?: Date }): Promise<{ outcome: string; noRetry: boolean }>;
    };
    expect(await worker.scheduled({ cron: "0 * * * *", scheduledTime: new Date(now) })).toEqual({ outcome: "ok", noRetry: false });
    const line = '{"message":"plantgate prune","refreshTokens":0,"sessions":0,"attempts":0,"revokedTokens":0,"assertionJtis":0,"signingKeys":0,"auditEvents":1,"complete":true}';
    await log.waitFor(line);
    expect(log.text).toContain(line);
    expect((await kept.list({ limit: 10 })).map((r) => r.id)).toEqual(["e-89-days"]);
  });
});
