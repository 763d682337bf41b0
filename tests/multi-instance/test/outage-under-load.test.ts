/**
 * The database disappears UNDER LOAD: two real server processes (tsx examples/node-server) share
 * one PostgreSQL schema through a cuttable TCP proxy; several concurrent clients create plants with
 * unique ids and ask for tokens on both; the proxy is cut, then restored.
 *
 * Asserted:
 * - during the whole run, plants get only 200 or 503 `{error:1503,...}` and the token endpoint only
 *   200 or 503 `temporarily_unavailable`: never another 5xx, never a hang, never a wrong answer;
 * - the outage is seen (503s for both kinds) and both servers serve again after the restore;
 * - afterwards, read from PostgreSQL directly: every plant that got a 200 is stored exactly as sent,
 *   and nothing is stored that was not sent.
 *
 * What is honestly assertable for a request whose connection died mid-commit: the INSERT is one
 * statement, so the row is either wholly there or not, but the server cannot know which when the
 * connection dies between COMMIT and its acknowledgement, so it answers 503 either way. The client
 * retries the same id with the same body until it gets a definitive answer: 200 (the first attempt
 * had not committed) or 400 `{error:1006}` duplicate id (it had). So a 1006 is accepted only for an
 * id whose earlier attempt was ambiguous (503 or a dropped connection), and only if the stored row
 * is exactly what was sent; a 1006 for an id never tried before is a wrong answer. An id that got
 * only errors and no definitive answer is not in the database unless the last attempt was ambiguous.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CuttableProxy } from "./cuttable-proxy.js";
import {
  CLIENT_ID,
  CLIENT_SECRET,
  POSTGRES_URL,
  TOKEN_PATH,
  baseServerEnv,
  clientCredentials,
  describeIfPostgres,
  freshSchema,
  probePostgres,
  serverEnv,
  spawnEntry,
  waitForListening,
  type FreshSchema,
  type Spawned,
} from "./support.js";

const problem = await probePostgres();

const UNAVAILABLE_API = { error: 1503, message: "The service is temporarily unavailable; retry later." };
const WORKERS = 6;
const REQUEST_TIMEOUT_MS = 20_000;

type Phase = "before" | "outage" | "after";

interface Observation {
  kind: "plant" | "token";
  server: number;
  phase: Phase;
  status: number | "network-error" | "timeout";
  body: string;
  id?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeIfPostgres("the database lost under load (two servers, concurrent clients, a cut TCP proxy)", problem, () => {
  let schema: FreshSchema | undefined;
  let proxy: CuttableProxy | undefined;
  const servers: Spawned[] = [];
  const urls: string[] = [];
  const workDir = mkdtempSync(join(tmpdir(), "plantgate-outage-load-"));

  beforeAll(async () => {
    schema = await freshSchema();
    const real = new URL(POSTGRES_URL);
    proxy = new CuttableProxy({ host: real.hostname, port: Number(real.port || 5432) });
    const viaProxy = new URL(POSTGRES_URL);
    viaProxy.hostname = "127.0.0.1";
    viaProxy.port = String(await proxy.listen());
    const env = serverEnv(baseServerEnv(schema.urlFor(viaProxy.toString())));
    // One after the other: the first migrates the schema and creates the signing key.
    for (const _ of [0, 1]) {
      const s = spawnEntry(env, workDir);
      servers.push(s);
      urls.push(await waitForListening(s));
    }
  });

  afterAll(async () => {
    for (const s of servers) s.kill();
    await Promise.all(servers.map((s) => s.exited(10_000).catch(() => undefined)));
    await proxy?.close();
    await schema?.drop();
    rmSync(workDir, { recursive: true, force: true });
  });

  it("503 or success only while cut, service again once restored, and the database holds exactly the plants that were answered", async () => {
    const issued = await clientCredentials(urls[0]!);
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    const accessToken = issued.body.access_token as string;

    let phase: Phase = "before";
    let stopping = false;
    // Set when the service does not come back: retries stop, and the assertions report it.
    let abandon = false;
    const observations: Observation[] = [];
    /** Per plant id: the name sent, and whether an attempt was ambiguous (503 or no answer). */
    const sent = new Map<string, { name: string; ambiguous: boolean; outcome: "stored" | "duplicate-after-ambiguous" | null }>();
    const wrong: string[] = [];
    const successAfterRestore = new Set<string>();

    async function call(server: number, kind: "plant" | "token", init: RequestInit, path: string, id?: string): Promise<Observation> {
      const at = phase;
      try {
        const res = await fetch(urls[server]! + path, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
        const o: Observation = { kind, server, phase: at, status: res.status, body: await res.text(), ...(id ? { id } : {}) };
        observations.push(o);
        return o;
      } catch (e) {
        const cause = (e as { cause?: { code?: string; message?: string } }).cause;
        const why = `${(e as Error).message}${cause ? ` (${cause.code ?? ""} ${cause.message ?? ""})` : ""}`;
        const o: Observation = { kind, server, phase: at, status: (e as Error).name === "TimeoutError" ? "timeout" : "network-error", body: why, ...(id ? { id } : {}) };
        observations.push(o);
        return o;
      }
    }

    async function createUntilDefinitive(worker: number, server: number, id: string): Promise<void> {
      const name = `plant ${id} from worker ${worker}`;
      const entry = { name, ambiguous: false, outcome: null as "stored" | "duplicate-after-ambiguous" | null };
      sent.set(id, entry);
      for (let attempt = 0; !abandon; attempt++) {
        const o = await call(
          (server + attempt) % 2,
          "plant",
          { method: "POST", headers: { authorization: `Bearer ${accessToken}`, "content-type": "application/json" }, body: `{"id":${id},"name":${JSON.stringify(name)}}` },
          "/plants",
          id,
        );
        if (o.status === 200) {
          const body = o.body.replace(/"id":(-?\d+)/, '"id":"$1"');
          const parsed = JSON.parse(body) as { id: string; name: string };
          if (parsed.id !== id || parsed.name !== name) wrong.push(`200 for ${id} echoed ${o.body}`);
          entry.outcome = "stored";
          if (o.phase === "after") successAfterRestore.add(`plant:${o.server}`);
          return;
        }
        if (o.status === 400) {
          // Only honest when an earlier attempt may have committed (see the module comment).
          if (!entry.ambiguous || !/"error":1006/.test(o.body)) wrong.push(`400 for ${id} (ambiguous before: ${entry.ambiguous}): ${o.body}`);
          entry.outcome = "duplicate-after-ambiguous";
          return;
        }
        if (o.status === 503 || o.status === "network-error" || o.status === "timeout") {
          entry.ambiguous = true;
          if (o.status === 503 && JSON.stringify(JSON.parse(o.body)) !== JSON.stringify(UNAVAILABLE_API)) wrong.push(`503 body ${o.body}`);
          await sleep(100);
          continue;
        }
        wrong.push(`plant ${id}: ${String(o.status)} ${o.body.slice(0, 200)}`);
        return;
      }
    }

    // Plant workers retry each id until it has a definitive answer, so they stall during the cut;
    // token workers run in their own loops so token requests are certainly made while it lasts.
    async function plantWorker(w: number): Promise<void> {
      let seq = 0;
      while (!stopping) {
        const server = (w + seq) % 2;
        // Unique across workers and runs of this test (the schema is fresh anyway).
        await createUntilDefinitive(w, server, String(9_000_000_000_000_000_000n + BigInt(w) * 1_000_000n + BigInt(seq)));
        seq++;
        await sleep(10);
      }
    }

    async function tokenWorker(w: number): Promise<void> {
      let seq = 0;
      while (!stopping) {
        const server = (w + seq) % 2;
        const t = await call(server, "token", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({ grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: CLIENT_SECRET }),
        }, TOKEN_PATH);
        if (t.status === 200) {
          if (!/"access_token":"[^"]+"/.test(t.body)) wrong.push(`token 200 without a token: ${t.body}`);
          if (t.phase === "after") successAfterRestore.add(`token:${t.server}`);
        } else if (t.status === 503) {
          const b = JSON.parse(t.body) as Record<string, unknown>;
          if (b.error !== "temporarily_unavailable" || Object.keys(b).sort().join() !== "error,error_description") wrong.push(`token 503 body ${t.body}`);
        } else {
          wrong.push(`token: ${String(t.status)} ${t.body.slice(0, 200)}`);
        }
        seq++;
        await sleep(t.status === 200 ? 10 : 100);
      }
    }

    const load = Promise.all([
      ...Array.from({ length: WORKERS }, (_, w) => plantWorker(w)),
      ...Array.from({ length: 2 }, (_, w) => tokenWorker(w)),
    ]);
    await sleep(1500);
    phase = "outage";
    proxy!.sever();
    await sleep(3000);
    proxy!.restore();
    phase = "after";
    // Serve again: both kinds on both servers, within 20 s.
    const deadline = Date.now() + 15_000;
    while (successAfterRestore.size < 4 && Date.now() < deadline) await sleep(200);
    await sleep(500);
    stopping = true;
    const abandonTimer = setTimeout(() => (abandon = true), 15_000);
    await load;
    clearTimeout(abandonTimer);
    const tally = new Map<string, number>();
    for (const o of observations) tally.set(`${o.kind}/${o.phase}/${String(o.status)}`, (tally.get(`${o.kind}/${o.phase}/${String(o.status)}`) ?? 0) + 1);
    console.log(`outage under load, answers by kind/phase/status: ${[...tally].map(([k, v]) => `${k}:${v}`).join(" ")}`);
    for (const [i, s] of servers.entries()) {
      if (s.proc.exitCode !== null || s.proc.signalCode !== null) console.log(`server ${i} exited (${s.proc.exitCode} ${s.proc.signalCode}); stderr:\n${s.stderr().slice(-3000)}`);
    }
    console.log(`first network errors: ${observations.filter((o) => o.status === "network-error").slice(0, 3).map((o) => `${o.kind}@${o.server} ${o.phase}: ${o.body}`).join(" | ")}`);

    expect(wrong, wrong.slice(0, 10).join("\n")).toEqual([]);
    const bad = observations.filter((o) => typeof o.status === "number" && o.status >= 500 && o.status !== 503);
    expect(bad.map((o) => `${o.kind} ${o.status} ${o.body.slice(0, 100)}`)).toEqual([]);
    // The servers answer every request, outage or not: no hang, no dropped connection.
    expect(observations.filter((o) => o.status === "timeout" || o.status === "network-error").map((o) => `${o.kind} ${o.phase} ${String(o.status)} ${o.body}`)).toEqual([]);
    // The cut was real: both kinds saw it.
    for (const kind of ["plant", "token"] as const) {
      expect(observations.some((o) => o.kind === kind && o.phase === "outage" && o.status === 503), `${kind} 503 during the outage`).toBe(true);
      expect(observations.some((o) => o.kind === kind && o.phase === "before" && o.status === 200), `${kind} 200 before the outage`).toBe(true);
    }
    expect([...successAfterRestore].sort()).toEqual(["plant:0", "plant:1", "token:0", "token:1"]);
    // Both processes are still the ones we started.
    for (const s of servers) expect(s.proc.exitCode, s.stderr()).toBeNull();

    // The database, read directly (not through plantgate).
    const db = new pg.Client({ connectionString: schema!.url });
    await db.connect();
    let rows: { id: string; name: Buffer | string }[];
    try {
      rows = (await db.query<{ id: string; name: Buffer | string }>("select id::text as id, name from pg_plants")).rows;
    } finally {
      await db.end();
    }
    const stored = new Map(rows.map((r) => [r.id, Buffer.isBuffer(r.name) ? r.name.toString("utf8") : r.name]));
    const missing: string[] = [];
    for (const [id, e] of sent) {
      if (e.outcome === null) continue;
      // A 200, or a duplicate after an ambiguous attempt: the row is there, exactly as sent.
      if (stored.get(id) !== e.name) missing.push(`${id} (${e.outcome}): stored ${JSON.stringify(stored.get(id))}`);
    }
    expect(missing).toEqual([]);
    const phantom = [...stored.keys()].filter((id) => !sent.has(id));
    expect(phantom).toEqual([]);
    // Every request got a definitive answer in the end.
    expect([...sent.values()].filter((e) => e.outcome === null)).toEqual([]);
    const count = (k: Observation["kind"], p: Phase, s: number) => observations.filter((o) => o.kind === k && o.phase === p && o.status === s).length;
    console.log(
      `outage under load: ${observations.length} requests; plants 200 before/outage/after ${count("plant", "before", 200)}/${count("plant", "outage", 200)}/${count("plant", "after", 200)}, ` +
        `503 during outage ${count("plant", "outage", 503)}; tokens 503 during outage ${count("token", "outage", 503)}; ` +
        `duplicate-after-ambiguous ${[...sent.values()].filter((e) => e.outcome === "duplicate-after-ambiguous").length}; rows ${stored.size}`,
    );
  });
});
