/**
 * Which `PLANTGATE_` variables the Worker reads, three ways, which must agree:
 *
 * - the README's list (Cloudflare Workers: "The variables the Worker reads, all of them");
 * - what core's env readers (`auditFromEnv`, `optionsFromEnv`, `bootstrapFromEnv`, the ones the
 *   Worker calls) can read: each run over a Proxy env that records every name asked for, in many
 *   configurations (empty; every variable at a valid value; each alone, at each of a few values;
 *   all but each), until no configuration finds a name more, so a name read only while another is
 *   set (or unset) is found too;
 * - what the Worker reads in workerd (Miniflare, the real `createWorker()` entry): every name of
 *   both lists, and the Node servers' own (which it must not read), is bound from the Secrets Store
 *   (core's at the valid values below), and the entry records each binding whose `get()` the
 *   Worker calls. That is the one place the
 *   Worker's own set of names (its probe of core's readers, `VARIABLES`) decides anything: a binding
 *   under a name it does not know is left out as any binding is. A variable core reads that the
 *   probe missed would be a secret silently ignored (as all of them were until 2026-11-30).
 */
import { readFileSync } from "node:fs";
import { auditFromEnv, bootstrapFromEnv, optionsFromEnv, type EnvVars } from "@plantgate/core";
import { Miniflare } from "miniflare";
import { afterAll, describe, expect, it } from "vitest";
import { bundle, COMPATIBILITY_DATE } from "./support.js";

const README = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");

/** The README's list of the Worker's variables: the paragraph after its lead-in, names only. */
function readmeWorkerVariables(): string[] {
  const lead = "The variables the Worker reads, all of them";
  const at = README.indexOf(lead);
  if (at < 0) throw new Error(`README: no paragraph starting "${lead}"`);
  const list = README.slice(at).split(/\n\s*\n/)[1]!.replace(/\s+/g, " ").trim();
  // Names in full, nothing else: a shorthand (`_WINDOW_SECONDS`) or a wildcard (`PLANTGATE_BOOTSTRAP_*`) would hide one.
  expect(list).toMatch(/^`PLANTGATE_[A-Z0-9_]+`(, `PLANTGATE_[A-Z0-9_]+`)*\.$/);
  return [...list.matchAll(/`(PLANTGATE_[A-Z0-9_]+)`/g)].map((m) => m[1]!);
}

/** The `PLANTGATE_` names of the example server's environment table (the Node servers' and the Worker's). */
function exampleTableVariables(): string[] {
  const at = README.indexOf("### Environment of the example server");
  const table = README.slice(at, README.indexOf("\n\n", README.indexOf("| Variable |", at)));
  return [...new Set([...table.matchAll(/^\| `(PLANTGATE_[A-Z0-9_]+)`(?: \+ `(PLANTGATE_[A-Z0-9_]+)`)?/gm)].flatMap((m) => [m[1]!, ...(m[2] ? [m[2]] : [])]))];
}

const READERS: [string, (env: EnvVars) => unknown][] = [
  ["auditFromEnv", auditFromEnv],
  ["optionsFromEnv", optionsFromEnv],
  ["bootstrapFromEnv", bootstrapFromEnv],
];

/**
 * A value each variable takes, all together: the configuration in which every variable is set.
 * A name core reads that is not here fails the test below: add a value it takes.
 */
const VALID: Record<string, string> = {
  PLANTGATE_ISSUER: "https://auth.example",
  PLANTGATE_SCOPE_PREFIX: "Acme",
  PLANTGATE_SIGNING_KEY: JSON.stringify({ kty: "EC", crv: "P-256", x: "x", y: "y", d: "d" }),
  PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
  PLANTGATE_ACCESS_TOKEN_TTL: "300",
  PLANTGATE_TRUSTED_PROXIES: "10.0.0.1,192.168.0.0/16",
  PLANTGATE_BRUTE_FORCE_MAX_FAILURES: "5",
  PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS: "60",
  PLANTGATE_SIGNING_KEY_MAX_AGE: "86400",
  PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY: "360",
  PLANTGATE_KEY_ENCRYPTION_KEY: `${"A".repeat(43)},${"B".repeat(43)}`,
  PLANTGATE_REFRESH_GRACE_SECONDS: "30",
  PLANTGATE_REFRESH_GRACE_MAX_USES: "3",
  PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS: "4",
  PLANTGATE_MAX_PENDING_EVENT_DELIVERIES: "5000",
  PLANTGATE_AUDIT: "1",
  PLANTGATE_AUDIT_RETENTION_DAYS: "30",
  PLANTGATE_CONSOLE: "1",
  PLANTGATE_CONSOLE_SESSION_TTL: "3600",
  PLANTGATE_CONSOLE_IDLE_TIMEOUT: "900",
  PLANTGATE_BOOTSTRAP_CLIENT_ID: "probe-client",
  PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "probe-secret-0123456789abcdef",
  PLANTGATE_BOOTSTRAP_USERNAME: "probe-user",
  PLANTGATE_BOOTSTRAP_PASSWORD: "probe-password",
  PLANTGATE_BOOTSTRAP_ADMIN: "1",
};
/** Other values each variable is tried at alone (a reader may read more for one of them). */
const OTHERS = ["", "0", "1", "true", "false", "2", "360", "x", "https://auth.example"];

/**
 * The names the readers ask `env` for, each reader run on its own (a throw, a refused value, ends
 * that reader's run, not the others'). A reader that lists `env`'s keys instead is a failure here:
 * no probe can know the names it would take.
 */
function namesRead(values: EnvVars): Set<string> {
  const read = new Set<string>();
  const env = new Proxy(values, {
    get: (target, key) => (typeof key === "string" && read.add(key), typeof key === "string" ? target[key] : undefined),
    has: (target, key) => (typeof key === "string" && read.add(key), key in target),
    ownKeys: () => {
      throw new Error("a reader lists the environment's keys: the names it takes cannot be probed");
    },
  });
  for (const [, reader] of READERS) {
    try {
      reader(env);
    } catch (error) {
      if (error instanceof Error && error.message.startsWith("a reader lists")) throw error;
    }
  }
  return read;
}

/** Every name core's readers can read: the configurations above, until none finds a name more. */
function coreVariables(): string[] {
  const found = namesRead({});
  for (let size = 0; size !== found.size; ) {
    size = found.size;
    const missing = [...found].filter((name) => !(name in VALID));
    // A name with no value to try cannot be set, so what it leads to cannot be found.
    expect(missing, "names core reads that this test has no value for (add them to VALID)").toEqual([]);
    const all = Object.fromEntries([...found].map((name) => [name, VALID[name]!]));
    // Every variable set: the readers must take them all (else `all` is not the configuration it claims to be).
    for (const [name, reader] of READERS) expect(() => reader(all), name).not.toThrow();
    const configurations: EnvVars[] = [all];
    for (const name of found) {
      for (const value of [VALID[name]!, ...OTHERS]) configurations.push({ [name]: value });
      const { [name]: _left, ...rest } = all;
      configurations.push(rest);
    }
    for (const configuration of configurations) for (const name of namesRead(configuration)) found.add(name);
  }
  return [...found].sort();
}

// The Worker, each `PLANTGATE_` binding with a get() wrapped so the test learns which the Worker calls.
const ENTRY = `
import { createWorker } from "../src/index.ts";
const worker = createWorker({ logger: { error: () => {}, warn: () => {} } });
const got = new Set();
let env;
export default {
  async fetch(request, bindings, ctx) {
    if (new URL(request.url).pathname === "/__got") return Response.json([...got].sort());
    env ??= Object.fromEntries(Object.entries(bindings).map(([key, value]) =>
      key.startsWith("PLANTGATE_") && typeof value?.get === "function" ? [key, { get: () => (got.add(key), value.get()) }] : [key, value]));
    return worker.fetch(request, env, ctx);
  },
};
`;

let mf: Miniflare | undefined;
afterAll(async () => {
  await mf?.dispose();
});

describe("the variables the Worker reads", () => {
  it("the README's list is every name core's readers can read, in any configuration", () => {
    const documented = readmeWorkerVariables();
    expect(new Set(documented).size, "a name listed twice").toBe(documented.length);
    expect([...documented].sort()).toEqual(coreVariables());
    // Each is in the example server's table, where its meaning and default are.
    expect(documented.filter((name) => !exampleTableVariables().includes(name))).toEqual([]);
  });

  it("in workerd, the Worker reads a Secrets Store binding under each of those names, and under none of the Node servers' own", async () => {
    const documented = readmeWorkerVariables();
    const nodeOnly = exampleTableVariables().filter((name) => !documented.includes(name));
    // The Node servers' own are there to be left out: the table has them (PLANTGATE_DB, PLANTGATE_REDIS_URL, ...).
    expect(nodeOnly).toContain("PLANTGATE_PRUNE_INTERVAL_SECONDS");
    const names = [...new Set([...documented, ...coreVariables(), ...nodeOnly])];
    mf = new Miniflare({
      modules: true,
      script: await bundle(ENTRY),
      compatibilityDate: COMPATIBILITY_DATE,
      d1Databases: ["DB"],
      secretsStoreSecrets: Object.fromEntries(names.map((name) => [name, { store_id: "plantgate", secret_name: name.toLowerCase() }])),
    });
    // Core's variables hold their valid values, so that a name core reads only while another is set
    // (to a value it takes) is asked for too. The Node servers' own are not in the store: a get() of
    // one would fail the start (and show here as read).
    for (const name of coreVariables()) {
      const admin = (await mf.getSecretsStoreSecretAPI(name)) as unknown as () => { create(value: string): Promise<string> };
      await admin().create(VALID[name]!);
    }
    const w = (await mf.getWorker()) as unknown as { fetch(url: string): Promise<Response> };
    // The start then fails (VALID's signing key is no key), after the variables were read.
    const res = await w.fetch("http://worker.test/.well-known/jwks.json");
    expect([res.status, await res.json()]).toEqual([503, { error: 1503, message: "The service is temporarily unavailable; retry later." }]);
    expect(await (await w.fetch("http://worker.test/__got")).json()).toEqual([...documented].sort());
  }, 60_000);
});
