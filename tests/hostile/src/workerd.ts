/**
 * The Workers runtime of a world (`HOSTILE_RUNTIME=workerd`): `@plantgate/cloudflare`'s Worker,
 * bundled as `wrangler deploy` would (tests/http-suite's esbuild configuration), running in workerd
 * (Miniflare) on a real D1 database, which Node reaches too, over the D1 bridge of
 * packages/storage-sql/test/d1-bridge.ts (a second Worker in the same Miniflare bound to the same
 * database). The world's setup (clients, accounts, the tokens the oracle knows) is made from Node
 * by a `createPlantgate` over that bridge, configured as the Worker's env configures the Worker (same
 * issuer, 1,000 PBKDF2 iterations, strict one-time refresh tokens, the same brute-force limit); both
 * sign with the one key stored in D1 (the Worker creates it at its start, before Node's app loads it).
 * The generated requests then go to the Worker (`dispatchFetch`), not to Node's app.
 *
 * What the Worker logs reaches the world too: its entry hands `createWorker` a logger and an
 * `onEvent` hook (both public options) that print one marked JSON line each, which Node reads from
 * workerd's output into the world's `logs` and `events`; the whole output is what
 * `outputIsClean` searches for secrets and tokens. workerd's output arrives asynchronously, so a
 * line may be read while a later request runs: the secret checks see it all the same (by the end
 * of the chunk at the latest), but an error line may be blamed on the request after its own.
 */
import { dirname } from "node:path";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import type { Storage } from "@plantgate/core";
import { createD1Storage } from "@plantgate/storage-sql/d1";
import { Miniflare } from "miniflare";
import { connectD1Bridge, d1BridgeWorker, type D1Bridge } from "../../../packages/storage-sql/test/d1-bridge.js";
import { COMPATIBILITY_DATE } from "../../../packages/cloudflare/test/support.js";
import { bundleEntry } from "../../http-suite/src/bundle-worker.js";
import { plantRecord, refreshRecord, sessionRecord } from "../../../packages/storage-sql/src/rows.js";
import type { KnownKeys, StoreSnapshot } from "./snapshot.js";

const here = dirname(fileURLToPath(import.meta.url));

/** Prefixes of the Worker's marked lines (its logger's, its onEvent hook's). */
const LOG_MARK = "hostile-log ";
const EVENT_MARK = "hostile-event ";

const HOOKS = `const text = (value) => JSON.stringify(value ?? {}, (_k, v) => (typeof v === "bigint" ? v.toString() : v instanceof Error ? { name: v.name, message: v.message } : v));
const line = (level) => (message, context) => console.log(${JSON.stringify(LOG_MARK)} + JSON.stringify({ level, message, context: text(context) }));
const hooks = {
  logger: { error: line("error"), warn: line("warn") },
  onEvent: (event) => console.log(${JSON.stringify(EVENT_MARK)} + text(event)),
};
`;

/**
 * The Workers: `minimal` is `createWorker()` (token endpoint, revocation, introspection, the APIs,
 * metadata, JWKS); `full` the full Worker of tests/http-suite/src/bundle-worker.ts (the API reference
 * page and the console page besides; the console on with PLANTGATE_CONSOLE=1, see
 * {@link WorkerSettings.console}). Both with a logger and an onEvent hook printing marked JSON lines.
 *
 * The full one answers each request once its security events are delivered (the hook's lines
 * printed, the audit rows in D1): it hands `createWorker` an execution context whose `waitUntil`
 * work (the flush after the answer among it) the answer waits for. The console file reads the
 * audit trail through `GET /console/api/events` and from D1 after each request, as the in-process
 * world's `flushEvents()` lets it; the Worker otherwise delivers them after its answer.
 */
const ENTRIES: Record<"minimal" | "full", string> = {
  minimal: `import { createWorker } from "@plantgate/cloudflare";
${HOOKS}export default createWorker(hooks);
`,
  full: `import { createWorker } from "@plantgate/cloudflare";
import { consolePage } from "@plantgate/console";
import { swaggerUi } from "@plantgate/docs";
${HOOKS}const worker = createWorker({ ...hooks, docs: swaggerUi(), console: { enabled: false, page: consolePage() } });
export default {
  ...worker,
  async fetch(request, env, ctx) {
    const pending = [];
    const held = { waitUntil: (promise) => (pending.push(promise), ctx.waitUntil(promise)), passThroughOnException: () => ctx.passThroughOnException() };
    const response = await worker.fetch(request, env, held);
    await Promise.allSettled(pending);
    return response;
  },
};
`,
};

const bundled = new Map<"minimal" | "full", Promise<string>>();

/** The Worker's env: what the in-process world gives `createPlantgate` (world.ts), as Worker vars. */
export interface WorkerSettings {
  issuer: string;
  bruteForce: { maxFailures?: number; windowSeconds?: number };
  /** The full Worker with its console on (`PLANTGATE_CONSOLE=1`), for the console world; else the minimal one. */
  console?: boolean;
}

export interface WorkerdRuntime {
  /** The D1 database, from Node (through the bridge). */
  storage: Storage;
  /** Sends a request to the Worker; `info.clientIp` becomes CF-Connecting-IP (the Worker's client address). */
  fetch(request: Request, info?: { clientIp?: string }): Promise<Response>;
  /** Adds every key stored in D1 (refresh token hashes, plant ids, revoked jtis, sessions) to `known`. */
  learnKeys(known: KnownKeys): Promise<void>;
  /**
   * The store's snapshot (src/snapshot.ts) read from D1 in one batch: every refresh token, plant,
   * revoked jti and session row, whoever wrote it (the Worker's rows too), through storage-sql's own
   * row readers (as `findByHash`, `plants.get` and `sessions.get` read them); clients, accounts and
   * keys through `storage`. Reading key by key cost about 1.6 ms of D1 per key, most of a request's
   * time once a chunk had made a few hundred tokens.
   */
  snapshot(storage: Storage): Promise<StoreSnapshot>;
  /** workerd's output so far; waits until it has been quiet for a moment (lines arrive asynchronously). */
  output(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Starts the Worker over a fresh D1 database and lets it start (migrations, its signing key).
 * `onLog`/`onEvent` get each marked line of the Worker's logger and onEvent hook.
 */
export async function startWorkerd(settings: WorkerSettings, sinks: { onLog(level: "error" | "warn", message: string, context: string): void; onEvent(json: string): void }): Promise<WorkerdRuntime> {
  const variant = settings.console === true ? "full" : "minimal";
  if (!bundled.has(variant)) bundled.set(variant, bundleEntry(ENTRIES[variant], here).then((b) => b.script));
  let output = "";
  let lastChunk = Date.now();
  let pending = "";
  const onChunk = (chunk: string) => {
    output += chunk;
    lastChunk = Date.now();
    pending += chunk;
    const lines = pending.split("\n");
    pending = lines.pop()!;
    for (const l of lines) {
      const at = l.indexOf(LOG_MARK);
      const ev = l.indexOf(EVENT_MARK);
      if (at >= 0) {
        try {
          const { level, message, context } = JSON.parse(l.slice(at + LOG_MARK.length)) as { level: "error" | "warn"; message: string; context: string };
          sinks.onLog(level, message, context);
        } catch {
          sinks.onLog("error", "hostile: a marked log line of the Worker that is not JSON", l.slice(0, 300));
        }
      } else if (ev >= 0) sinks.onEvent(l.slice(ev + EVENT_MARK.length));
    }
  };
  const mf = new Miniflare({
    workers: [
      {
        name: "plantgate",
        modules: true,
        script: await bundled.get(variant)!,
        compatibilityDate: COMPATIBILITY_DATE,
        d1Databases: ["DB"],
        bindings: {
          PLANTGATE_ISSUER: settings.issuer,
          PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
          PLANTGATE_REFRESH_GRACE_SECONDS: "0",
          ...(settings.console === true ? { PLANTGATE_CONSOLE: "1" } : {}),
          ...(settings.bruteForce.maxFailures !== undefined ? { PLANTGATE_BRUTE_FORCE_MAX_FAILURES: String(settings.bruteForce.maxFailures) } : {}),
          ...(settings.bruteForce.windowSeconds !== undefined ? { PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS: String(settings.bruteForce.windowSeconds) } : {}),
        },
      },
      d1BridgeWorker("DB"),
    ],
    handleRuntimeStdio: (stdout: Readable, stderr: Readable) => {
      stdout.on("data", (chunk: Buffer) => onChunk(chunk.toString()));
      stderr.on("data", (chunk: Buffer) => onChunk(chunk.toString()));
    },
  });
  let bridge: D1Bridge | undefined;
  try {
    await mf.ready;
    // The Worker's first request migrates D1 and stores its signing key; Node's app then loads that key.
    const first = await mf.dispatchFetch("https://as.example/.well-known/jwks.json");
    const firstText = await first.text();
    if (first.status !== 200) throw new Error(`the Worker did not start: ${first.status} ${firstText}; output: ${output.slice(0, 2000)}`);
    bridge = await connectD1Bridge(mf);
    const database = bridge.database;
    const storage = createD1Storage(database, { audit: true });
    return {
      storage,
      async fetch(request, info) {
        // Transfer-Encoding is the HTTP client's to set (the framing of what it sends): undici
        // refuses one given to it. The oracle never reads it; in process it is a header like any other.
        const headers = [...request.headers].filter(([name]) => name !== "transfer-encoding");
        if (info?.clientIp !== undefined) headers.push(["cf-connecting-ip", info.clientIp]);
        const body = request.body === null ? undefined : new Uint8Array(await request.arrayBuffer());
        const response = await mf.dispatchFetch(request.url, { method: request.method, headers, ...(body !== undefined ? { body } : {}), redirect: "manual" });
        return response as unknown as Response;
      },
      async learnKeys(known) {
        const [refresh, plants, revoked, sessions] = (await database.batch([
          database.prepare(`select "token_hash" as k from "pg_refresh_tokens"`),
          database.prepare(`select cast("id" as text) as k from "pg_plants"`),
          database.prepare(`select "jti" as k from "pg_revoked_tokens"`),
          database.prepare(`select "id_hash" as k from "pg_sessions"`),
        ])) as { results: { k: string }[] }[];
        for (const r of refresh!.results) known.refreshTokenHashes.add(r.k);
        for (const r of plants!.results) known.plantIds.add(BigInt(r.k));
        for (const r of revoked!.results) known.revokedJtis.add(r.k);
        for (const r of sessions!.results) known.sessionHashes.add(r.k);
      },
      async snapshot(storage) {
        const [tables, keys, clients, accounts] = await Promise.all([
          database.batch([
            database.prepare(`select * from "pg_refresh_tokens"`),
            database.prepare(`select cast("id" as text) as "id", "name", "tag" from "pg_plants"`),
            database.prepare(`select "jti" from "pg_revoked_tokens"`),
            database.prepare(`select * from "pg_sessions"`),
          ]),
          storage.signingKeys.list().then((list) => list.sort((a, b) => (a.kid < b.kid ? -1 : 1))),
          storage.clients.list(),
          storage.accounts.list(0, Number.MAX_SAFE_INTEGER),
        ]);
        type Rows<F extends (row: never) => unknown> = Parameters<F>[0][];
        const [refresh, plants, revoked, sessions] = tables.map((t) => t.results) as [Rows<typeof refreshRecord>, Rows<typeof plantRecord>, { jti: string }[], Rows<typeof sessionRecord>];
        const byKey = <T>(list: T[], key: (x: T) => string | bigint) => list.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
        return {
          clients,
          accounts,
          refresh: byKey(refresh.map((row) => refreshRecord(row)), (r) => r.tokenHash).map((r): [string, typeof r] => [r.tokenHash, r]),
          plants: byKey(plants.map((row) => plantRecord(row)), (p) => p.id),
          keys,
          revoked: revoked.map((r) => r.jti).sort().map((jti): [string, boolean] => [jti, true]),
          sessions: byKey(sessions.map((row) => sessionRecord(row)), (x) => x.idHash),
        };
      },
      async output() {
        await new Promise((r) => setTimeout(r, 100));
        while (Date.now() - lastChunk < 200) await new Promise((r) => setTimeout(r, 50));
        return output;
      },
      async close() {
        await bridge?.close();
        await mf.dispose();
      },
    };
  } catch (error) {
    await bridge?.close().catch(() => {});
    await mf.dispose();
    throw error;
  }
}
