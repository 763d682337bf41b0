/**
 * The Worker reads `PLANTGATE_AUDIT` with the reader the Node servers and the CLI use
 * (`auditFromEnv` of `@plantgate/storage-sql/env`, core's underneath): for every value, valid or
 * hostile, the Worker in workerd (Miniflare, the real `createWorker()` entry, a real D1 database)
 * accepts it with the same meaning (audit trail kept or not) or refuses it with the same message.
 * wrangler passes an unquoted `[vars]` value as a number or a boolean: the Worker reads its text,
 * so the Node side is asked about that text.
 */
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { auditFromEnv } from "@plantgate/storage-sql/env";
import { build } from "esbuild";
import { Miniflare } from "miniflare";
import { afterAll, describe, expect, it } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));

// The entry: createWorker() with a logger the test can read (/__log), and a count of the audit
// rows of its D1 database (/__audit). Everything else is the Worker as deployed.
const ENTRY = `
import { createWorker } from "../src/index.ts";
const lines = [];
const worker = createWorker({ logger: { error: (m, c) => lines.push(m + " " + JSON.stringify(c)), warn: () => {} } });
export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__log") return Response.json(lines);
    if (url.pathname === "/__audit") {
      const tables = await env.DB.prepare("select name from sqlite_master where type = 'table' and name = 'pg_audit_events'").all();
      if (tables.results.length === 0) return Response.json(0);
      return Response.json((await env.DB.prepare("select count(*) as n from pg_audit_events").first()).n);
    }
    return worker.fetch(request, env, ctx);
  },
};
`;

const VALUES: (string | number | boolean)[] = [
  "", "1", "0", "true", "false", "TRUE", "False", " 1", "1 ", "0\n", "yes", "no", "on", "off", "2", "-1", "01", "00", "1.0", "0x1",
  "\u00a01", "null", "undefined", "１", "1".repeat(10_000), 1, 0, true, false, 2, -0, 1.5,
];

type Outcome = { audit: boolean } | { refused: string };

function nodeOutcome(value: string | number | boolean): Outcome {
  try {
    return { audit: auditFromEnv({ PLANTGATE_AUDIT: String(value) }) };
  } catch (error) {
    return { refused: (error as Error).message };
  }
}

let mf: Miniflare | undefined;
afterAll(async () => {
  await mf?.dispose();
});

describe("PLANTGATE_AUDIT: the Worker and the Node side agree", () => {
  it("every value is accepted with the same meaning, or refused with the same message, on both", async () => {
    const result = await build({
      stdin: { contents: ENTRY, resolveDir: here, loader: "ts" },
      bundle: true,
      format: "esm",
      platform: "browser",
      conditions: ["workerd", "worker", "browser"],
      target: "es2022",
      minify: true,
      write: false,
      logLevel: "silent",
    });
    const script = result.outputFiles[0]!.text;
    mf = new Miniflare({
      workers: VALUES.map((value, i) => ({
        name: `w${i}`,
        modules: true,
        script,
        compatibilityDate: "2026-04-26",
        d1Databases: { DB: `audit-${i}` },
        bindings: {
          PLANTGATE_AUDIT: value,
          PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
          // A bootstrap client: its client.created event is what an audit trail keeps.
          PLANTGATE_BOOTSTRAP_CLIENT_ID: "parity-client",
          PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "parity-secret-0123456789abcdef",
        },
      })),
    });
    const workers = await Promise.all(VALUES.map((_, i) => mf!.getWorker(`w${i}`)));
    const call = async (i: number, path: string) => (await workers[i]!.fetch(`http://worker.test${path}`)).json() as Promise<unknown>;
    // The first request of each: the start (checks, migrations, bootstrap) and its answer.
    const statuses = await Promise.all(
      workers.map(async (w) => {
        const res = await w.fetch("http://worker.test/.well-known/jwks.json");
        await res.arrayBuffer();
        return res.status;
      }),
    );
    // The bootstrap's client.created goes to the audit store after the answer (waitUntil): read
    // the counts until each started Worker has its row, or for 3 s (a Worker without a trail never will).
    let rows: number[] = [];
    for (let waited = 0; waited <= 3000; waited += 100) {
      rows = (await Promise.all(VALUES.map((_, i) => call(i, "/__audit")))) as number[];
      if (statuses.every((status, i) => status !== 200 || rows[i]! > 0)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const label = (value: string | number | boolean) => `${typeof value} ${JSON.stringify(value).slice(0, 20)}`;
    const seen: [string, Outcome | string][] = [];
    for (const [i, value] of VALUES.entries()) {
      if (statuses[i] === 200) seen.push([label(value), { audit: rows[i]! > 0 }]);
      else if (statuses[i] === 503) {
        // The start failure, logged once: "plantgate worker failed to start {"error":"..."}".
        const log = (await call(i, "/__log")) as string[];
        seen.push([label(value), log.length === 1 ? { refused: (JSON.parse(log[0]!.slice(log[0]!.indexOf("{"))) as { error: string }).error } : `log: ${JSON.stringify(log)}`]);
      } else seen.push([label(value), `status ${statuses[i]}`]);
    }
    const expected = VALUES.map((value) => [label(value), nodeOutcome(value)]);
    expect(seen).toEqual(expected);
  }, 120_000);
});
