/**
 * The Worker's environment in workerd (Miniflare, the real `createWorker()` entry, a real D1
 * database per Worker).
 *
 * Hostile values: each documented variable with a bad value stops the start with a message that
 * names it (never a secret's value), logged once and kept, every request answered 503 in the
 * documented shape, never a 500.
 *
 * Parity: the Worker reads `PLANTGATE_AUDIT` with the reader the Node servers and the CLI use
 * (`auditFromEnv` of `@plantgate/storage-sql/env`, core's underneath): for every value, valid or
 * hostile, the Worker in workerd (Miniflare, the real `createWorker()` entry, a real D1 database)
 * accepts it with the same meaning (audit trail kept or not) or refuses it with the same message.
 * wrangler passes an unquoted `[vars]` value as a number or a boolean: the Worker reads its text,
 * so the Node side is asked about that text.
 */
import { auditFromEnv } from "@plantgate/storage-sql/env";
import { Miniflare, type WorkerOptions } from "miniflare";
import { afterAll, describe, expect, it } from "vitest";
import { bundle, COMPATIBILITY_DATE } from "./support.js";

// The entry: createWorker() with a logger the test can read (/__log: errors; /__warnings), a count
// of the audit rows of its D1 database (/__audit) and the client ids and usernames stored
// (/__stored). Everything else is the Worker as deployed.
const ENTRY = `
import { createWorker } from "../src/index.ts";
const lines = [];
const warnings = [];
const worker = createWorker({ logger: { error: (m, c) => lines.push(m + " " + JSON.stringify(c)), warn: (m, c) => warnings.push(c === undefined ? m : m + " " + JSON.stringify(c)) } });
export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__log") return Response.json(lines);
    if (url.pathname === "/__warnings") return Response.json(warnings);
    if (url.pathname === "/__stored") {
      const tables = (await env.DB.prepare("select name from sqlite_master where type = 'table' and name in ('pg_clients', 'pg_accounts')").all()).results.map((r) => r.name);
      const read = async (table, column) => (tables.includes(table) ? (await env.DB.prepare("select " + column + " as v from " + table + " order by 1").all()).results.map((r) => r.v) : []);
      return Response.json({ clients: await read("pg_clients", "client_id"), accounts: await read("pg_accounts", "username") });
    }
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

/** What of a Worker's Fetcher (`mf.getWorker`) the tests call. */
interface WorkerFetcher {
  fetch(url: string, init?: RequestInit): Promise<Response>;
}

let bundled: Promise<string> | undefined;
/** The entry, bundled once for the Workers runtime. */
const script = () => (bundled ??= bundle(ENTRY, { minify: true }));

/** One Miniflare with a Worker `w<i>` per env, each on a D1 database of its own. */
async function workersFor(envs: Record<string, unknown>[], prefix: string, more: Partial<WorkerOptions> = {}) {
  await mf?.dispose();
  const code = await script();
  mf = new Miniflare({
    workers: envs.map((bindings, i) => ({ name: `w${i}`, modules: true, script: code, compatibilityDate: COMPATIBILITY_DATE, d1Databases: { DB: `${prefix}-${i}` }, bindings, ...more })),
  });
  return Promise.all(envs.map(async (_, i) => (await mf!.getWorker(`w${i}`)) as unknown as WorkerFetcher));
}

const BOOTSTRAP = {
  PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
  PLANTGATE_BOOTSTRAP_CLIENT_ID: "env-client",
  PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "env-secret-0123456789abcdef",
  PLANTGATE_BOOTSTRAP_USERNAME: "env-user",
  PLANTGATE_BOOTSTRAP_PASSWORD: "env-password-0123",
};
const UNAVAILABLE = { error: 1503, message: "The service is temporarily unavailable; retry later." };
const OAUTH_UNAVAILABLE = { error: "temporarily_unavailable", error_description: "The service is temporarily unavailable; retry later." };
const SECRET_NAMES = ["PLANTGATE_SIGNING_KEY", "PLANTGATE_KEY_ENCRYPTION_KEY", "PLANTGATE_BOOTSTRAP_CLIENT_SECRET", "PLANTGATE_BOOTSTRAP_PASSWORD"];
const big = "9".repeat(12);
const jsonVar = (name: string, what: string) => `${name} must be text (a quoted [vars] value), a number or a boolean; wrangler passed ${what}`;
/** A variable, a bad value, and the start failure it must be logged as. */
const HOSTILE: [string, unknown, string][] = [
  // JSON [vars] values (an array, a table): they were left out as if bindings, the default applied.
  ["PLANTGATE_ACCESS_TOKEN_TTL", [300], jsonVar("PLANTGATE_ACCESS_TOKEN_TTL", "an array")],
  ["PLANTGATE_ISSUER", { url: "https://auth.example" }, jsonVar("PLANTGATE_ISSUER", "a table")],
  ["PLANTGATE_TRUSTED_PROXIES", ["10.0.0.1"], jsonVar("PLANTGATE_TRUSTED_PROXIES", "an array")],
  ["PLANTGATE_ISSUER", "x", 'PLANTGATE_ISSUER must be an absolute URL, got "x"'],
  // The options' own rules, named by the variable since 2026-12-01 ("plantgate: issuer must ...").
  ["PLANTGATE_ISSUER", "https://auth.example/?tenant=1", "PLANTGATE_ISSUER must be a URL without a query or fragment (RFC 8414 §2)"],
  ["PLANTGATE_ISSUER", "https://auth.example ", "PLANTGATE_ISSUER must not begin or end with white space"],
  ["PLANTGATE_SCOPE_PREFIX", "Acme Corp", "PLANTGATE_SCOPE_PREFIX must be a non-empty scope token"],
  ["PLANTGATE_SCOPE_PREFIX", "x".repeat(5000), "PLANTGATE_SCOPE_PREFIX is 5000 characters, so its scope <prefix>_AllAppsServerCommands is longer than maxScopeLength (128); shorten the prefix or raise maxScopeLength"],
  ["PLANTGATE_SIGNING_KEY", "not-json-secret", "PLANTGATE_SIGNING_KEY must be a private JWK in JSON (an object with a 'd' member)"],
  ["PLANTGATE_SIGNING_KEY", '{"kty":"oct","k":"c2VjcmV0LWtleQ","d":"c2VjcmV0LWQ"}', "plantgate: the signing keys cannot be loaded: signingKey (PLANTGATE_SIGNING_KEY) does not import as an ES256 key; nothing was stored"],
  ["PLANTGATE_PASSWORD_HASH_ITERATIONS", "abc", 'PLANTGATE_PASSWORD_HASH_ITERATIONS must be a positive integer, got "abc"'],
  ["PLANTGATE_PASSWORD_HASH_ITERATIONS", "100001", "PLANTGATE_PASSWORD_HASH_ITERATIONS (passwordHashIterations) must be at most 100000 on Workers (Cloudflare's PBKDF2 limit), got 100001"],
  // Past core's own limit (10,000,000) too: the Workers limit is the one told.
  ["PLANTGATE_PASSWORD_HASH_ITERATIONS", big, `PLANTGATE_PASSWORD_HASH_ITERATIONS (passwordHashIterations) must be at most 100000 on Workers (Cloudflare's PBKDF2 limit), got ${big}`],
  // Past 12 digits too (core's check then says "at most 10000000"), told as given.
  ["PLANTGATE_PASSWORD_HASH_ITERATIONS", "9".repeat(20), `PLANTGATE_PASSWORD_HASH_ITERATIONS (passwordHashIterations) must be at most 100000 on Workers (Cloudflare's PBKDF2 limit), got ${"9".repeat(20)}`],
  ["PLANTGATE_ACCESS_TOKEN_TTL", "0", 'PLANTGATE_ACCESS_TOKEN_TTL must be a positive integer, got "0"'],
  ["PLANTGATE_TRUSTED_PROXIES", "10.0.0.0/33", 'PLANTGATE_TRUSTED_PROXIES: "10.0.0.0/33" has a bad prefix length'],
  // A hop count (one number) out of 1-16, as wrangler passes an unquoted value and as text.
  ["PLANTGATE_TRUSTED_PROXIES", 17, 'PLANTGATE_TRUSTED_PROXIES must be a hop count from 1 to 16 or comma-separated addresses / CIDR ranges, got "17"'],
  ["PLANTGATE_TRUSTED_PROXIES", "0", 'PLANTGATE_TRUSTED_PROXIES must be a hop count from 1 to 16 or comma-separated addresses / CIDR ranges, got "0"'],
  ["PLANTGATE_BRUTE_FORCE_MAX_FAILURES", "-1", 'PLANTGATE_BRUTE_FORCE_MAX_FAILURES must be a positive integer, got "-1"'],
  ["PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS", "1.5", 'PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS must be a positive integer, got "1.5"'],
  ["PLANTGATE_SIGNING_KEY_MAX_AGE", "0", 'PLANTGATE_SIGNING_KEY_MAX_AGE must be a positive integer, got "0"'],
  // Shorter than the default activation delay + 60 s: not kept (taken until 2026-12-01).
  ["PLANTGATE_SIGNING_KEY_MAX_AGE", "300", "PLANTGATE_SIGNING_KEY_MAX_AGE must be at least PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY + 60 (420): a new key is published that long before it signs, so a key cannot be replaced any younger; got 300"],
  ["PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY", "1", 'PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY must be at least 360 (the JWKS cache lifetime plus the key reload interval), got "1"'],
  ["PLANTGATE_KEY_ENCRYPTION_KEY", "short-secret", "PLANTGATE_KEY_ENCRYPTION_KEY: entry 1 is not a base64url-encoded 256-bit key (43 characters); give one or more comma-separated base64url 256-bit keys"],
  ["PLANTGATE_REFRESH_GRACE_SECONDS", "301", 'PLANTGATE_REFRESH_GRACE_SECONDS must be from 0 to 300, got "301"'],
  ["PLANTGATE_REFRESH_GRACE_MAX_USES", "1001", 'PLANTGATE_REFRESH_GRACE_MAX_USES must be from 1 to 1000, got "1001"'],
  ["PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS", "0", 'PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS must be a positive integer, got "0"'],
  ["PLANTGATE_MAX_PENDING_EVENT_DELIVERIES", "1000001", 'PLANTGATE_MAX_PENDING_EVENT_DELIVERIES must be at most 1000000, got "1000001"'],
  ["PLANTGATE_AUDIT", "yes", "PLANTGATE_AUDIT must be 1 or true (keep security events), or 0 or false"],
  ["PLANTGATE_AUDIT_RETENTION_DAYS", "0", 'PLANTGATE_AUDIT_RETENTION_DAYS must be a positive integer, got "0"'],
  ["PLANTGATE_CONSOLE", "on", 'PLANTGATE_CONSOLE must be 1 or true, or 0 or false, got "on"'],
  ["PLANTGATE_CONSOLE_SESSION_TTL", "0", 'PLANTGATE_CONSOLE_SESSION_TTL must be a positive integer, got "0"'],
  // Checked with the console off too (none of these rows turns it on), as PLANTGATE_CONSOLE_SESSION_TTL.
  ["PLANTGATE_CONSOLE_IDLE_TIMEOUT", "-1", 'PLANTGATE_CONSOLE_IDLE_TIMEOUT must be a non-negative integer, got "-1"'],
  ["PLANTGATE_CONSOLE_IDLE_TIMEOUT", "abc", 'PLANTGATE_CONSOLE_IDLE_TIMEOUT must be a non-negative integer, got "abc"'],
  ["PLANTGATE_CONSOLE_IDLE_TIMEOUT", "315360001", 'PLANTGATE_CONSOLE_IDLE_TIMEOUT must be at most 315360000, got "315360001"'],
  ["PLANTGATE_BOOTSTRAP_ADMIN", "2", 'PLANTGATE_BOOTSTRAP_ADMIN must be 1 or true, or 0 or false, got "2"'],
  // As the Node servers say them (core's checkBootstrap): the variable, not the option. Until
  // 2026-11-30: "plantgate: bootstrap: clientId must be ...", "... clientSecret must be ...".
  ["PLANTGATE_BOOTSTRAP_CLIENT_ID", "demo client", "PLANTGATE_BOOTSTRAP_CLIENT_ID must be 1-200 printable ASCII characters without spaces"],
  ["PLANTGATE_BOOTSTRAP_CLIENT_SECRET", "", "PLANTGATE_BOOTSTRAP_CLIENT_ID and PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be set together"],
  ["PLANTGATE_BOOTSTRAP_CLIENT_SECRET", "tooShortSecret", "PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be 16-1024 characters"],
  ["PLANTGATE_BOOTSTRAP_USERNAME", "\u0000", "PLANTGATE_BOOTSTRAP_USERNAME must not contain U+0000 or unpaired surrogates"],
  ["PLANTGATE_BOOTSTRAP_PASSWORD", "pw-7chr", "PLANTGATE_BOOTSTRAP_PASSWORD must be 8-1024 characters"],
];

describe("hostile values of the documented variables", () => {
  it("each stops the start with a message naming the variable (no secret's value), logged once; every request is answered 503 in its endpoint's shape", async () => {
    const workers = await workersFor(
      HOSTILE.map(([name, value]) => ({ ...BOOTSTRAP, [name]: value })),
      "hostile",
    );
    const seen = await Promise.all(
      workers.map(async (w, i) => {
        const answers: unknown[] = [];
        const requests: [string, RequestInit][] = [
          ["/.well-known/jwks.json", {}],
          [
            "/UserService/connect/token",
            {
              method: "POST",
              headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa("env-client:env-secret-0123456789abcdef")}` },
              body: "grant_type=client_credentials",
            },
          ],
          ["/rbac/ServerCommand/GetAccountList", {}],
        ];
        for (const [path, init] of requests) {
          const res = await w.fetch(`http://worker.test${path}`, init as never);
          answers.push([res.status, await res.json()]);
        }
        const log = (await (await w.fetch("http://worker.test/__log")).json()) as string[];
        // What the refused start left in D1, for every variable: a bad bootstrap value, and one that
        // fails only when the keys are loaded (a PLANTGATE_SIGNING_KEY that does not import).
        return { answers, log, stored: await (await w.fetch("http://worker.test/__stored")).json() };
      }),
    );
    expect(seen).toEqual(
      HOSTILE.map(([, , message]) => ({
        answers: [
          [503, UNAVAILABLE],
          [503, OAUTH_UNAVAILABLE],
          [503, UNAVAILABLE],
        ],
        log: [`plantgate worker failed to start ${JSON.stringify({ error: message })}`],
        // Nothing created: a valid bootstrap client beside a refused username or password neither
        // (it was, until 2026-11-30), nor the bootstrap client and account beside a signing key the
        // start then refused (the keys were loaded after the bootstrap until 2026-11-30).
        stored: { clients: [], accounts: [] },
      })),
    );
    for (const [i, [name, value]] of HOSTILE.entries()) {
      if (SECRET_NAMES.includes(name) && typeof value === "string" && value !== "") expect(seen[i]!.log.join("\n")).not.toContain(value);
    }
  }, 120_000);
});

describe("signing keys the start cannot load", () => {
  it("keys stored under another PLANTGATE_KEY_ENCRYPTION_KEY: the start is refused before the bootstrap, D1 holds no client or account", async () => {
    const shared = { d1Databases: { DB: "kek-mismatch" } };
    const kekA = "A".repeat(43);
    const kekB = "B".repeat(43);
    // w0 (no bootstrap) stores the first signing key, sealed under kekA; w1 starts on the same D1 with kekB.
    const [first, other] = await workersFor([{ PLANTGATE_KEY_ENCRYPTION_KEY: kekA }, { ...BOOTSTRAP, PLANTGATE_KEY_ENCRYPTION_KEY: kekB }], "kek", shared);
    expect((await first!.fetch("http://worker.test/.well-known/jwks.json")).status).toBe(200);
    const res = await other!.fetch("http://worker.test/.well-known/jwks.json");
    expect([res.status, await res.json()]).toEqual([503, UNAVAILABLE]);
    const log = (await (await other!.fetch("http://worker.test/__log")).json()) as string[];
    expect(log).toHaveLength(1);
    expect(log[0]).toMatch(/^plantgate worker failed to start \{"error":"plantgate: the signing keys cannot be loaded: /);
    expect(log[0]).not.toContain(kekA);
    expect(log[0]).not.toContain(kekB);
    expect(await (await other!.fetch("http://worker.test/__stored")).json()).toEqual({ clients: [], accounts: [] });
  }, 60_000);
});

describe("bootstrap values a stored client or account leaves unused", () => {
  it("a short secret or password for a client and account already stored: the Worker starts and serves, a warning names each variable; with PLANTGATE_BOOTSTRAP_ADMIN=1 the short password is refused", async () => {
    const shared = { d1Databases: { DB: "bootstrap-stored" } };
    const short = { ...BOOTSTRAP, PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "short-secret", PLANTGATE_BOOTSTRAP_PASSWORD: "pw-7chr" };
    // w0 stores the client and the account; then w1 and w2 start on the same D1 database.
    const [first, later, admin] = await workersFor([BOOTSTRAP, short, { ...short, PLANTGATE_BOOTSTRAP_ADMIN: "1" }], "unused", shared);
    const token = (w: WorkerFetcher, secret: string, form: string) =>
      w.fetch("http://worker.test/UserService/connect/token", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa(`env-client:${secret}`)}` },
        body: form,
      });
    expect((await token(first!, BOOTSTRAP.PLANTGATE_BOOTSTRAP_CLIENT_SECRET, "grant_type=client_credentials")).status).toBe(200);
    // The stored credentials keep working on the Worker given short ones; the short secret is not one.
    const password = await token(later!, BOOTSTRAP.PLANTGATE_BOOTSTRAP_CLIENT_SECRET, `grant_type=password&username=env-user&password=${BOOTSTRAP.PLANTGATE_BOOTSTRAP_PASSWORD}`);
    expect(password.status).toBe(200);
    const refused = await token(later!, "short-secret", "grant_type=client_credentials");
    expect([refused.status, await refused.json()]).toEqual([401, { error: "invalid_client", error_description: "Client authentication failed." }]);
    // (Its other warnings, keys stored in clear and no issuer, are the deployment's, not these.)
    expect(((await (await later!.fetch("http://worker.test/__warnings")).json()) as string[]).filter((w) => w.includes("BOOTSTRAP"))).toEqual([
      "PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be 16-1024 characters; ignored, as the bootstrap client exists and is left as it is",
      "PLANTGATE_BOOTSTRAP_PASSWORD must be 8-1024 characters; ignored, as the bootstrap account exists and is left as it is",
    ]);
    expect(await (await later!.fetch("http://worker.test/__log")).json()).toEqual([]);
    // ADMIN=1 creates the account with its role, so its values are checked whether it exists or not.
    const locked = await token(admin!, BOOTSTRAP.PLANTGATE_BOOTSTRAP_CLIENT_SECRET, "grant_type=client_credentials");
    expect([locked.status, await locked.json()]).toEqual([503, OAUTH_UNAVAILABLE]);
    expect(await (await admin!.fetch("http://worker.test/__log")).json()).toEqual([
      `plantgate worker failed to start ${JSON.stringify({ error: "PLANTGATE_BOOTSTRAP_PASSWORD must be 8-1024 characters" })}`,
    ]);
    const all = JSON.stringify(await Promise.all([later!, admin!].flatMap((w) => ["/__log", "/__warnings"].map(async (path) => (await w.fetch(`http://worker.test${path}`)).json()))));
    expect(all).not.toContain("short-secret");
    expect(all).not.toContain("pw-7chr");
  }, 60_000);
});

describe("PLANTGATE_BOOTSTRAP_ADMIN=1 and the console's administrator", () => {
  it("without a bootstrap account: the start is refused, saying so (the Worker makes no demo user; the console had no administrator and nothing was said)", async () => {
    const [w] = await workersFor([{ PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", PLANTGATE_BOOTSTRAP_ADMIN: "1" }], "admin-alone");
    const res = await w!.fetch("http://worker.test/console");
    expect(res.status).toBe(503);
    await res.arrayBuffer();
    expect(await (await w!.fetch("http://worker.test/__log")).json()).toEqual([
      `plantgate worker failed to start ${JSON.stringify({ error: "PLANTGATE_BOOTSTRAP_ADMIN=1 needs PLANTGATE_BOOTSTRAP_USERNAME and PLANTGATE_BOOTSTRAP_PASSWORD on the Worker, which makes no demo user to be the administrator" })}`,
    ]);
    expect(await (await w!.fetch("http://worker.test/__stored")).json()).toEqual({ clients: [], accounts: [] });
  }, 60_000);

  it("a bootstrap account stored before without the role (the example's `dev`, then `dev:console`): it keeps its roles, and the start says so in a warning", async () => {
    const shared = { d1Databases: { DB: "admin-later" } };
    const [dev, consoleRun] = await workersFor([BOOTSTRAP, { ...BOOTSTRAP, PLANTGATE_BOOTSTRAP_ADMIN: "1" }], "admin-later", shared);
    expect((await dev!.fetch("http://worker.test/.well-known/jwks.json")).status).toBe(200);
    // The console's API is on (the variable turns it on; this entry serves no page).
    const signIn = await consoleRun!.fetch("http://127.0.0.1:8787/console/api/session", {
      method: "POST",
      headers: { "content-type": "application/json", origin: "http://127.0.0.1:8787", "sec-fetch-site": "same-origin" },
      body: JSON.stringify({ username: BOOTSTRAP.PLANTGATE_BOOTSTRAP_USERNAME, password: BOOTSTRAP.PLANTGATE_BOOTSTRAP_PASSWORD }),
    });
    expect([signIn.status, await signIn.json()]).toEqual([401, { error: 1305, message: "The username or password is incorrect." }]);
    expect(((await (await consoleRun!.fetch("http://worker.test/__warnings")).json()) as string[]).filter((w) => w.includes("BOOTSTRAP"))).toEqual([
      "PLANTGATE_BOOTSTRAP_ADMIN=1: the account PLANTGATE_BOOTSTRAP_USERNAME names exists without the admin role and keeps its roles (the role is given only to an account the bootstrap creates); make an administrator with `plantgate user create --roles admin`, or bootstrap another username",
    ]);
    expect(await (await dev!.fetch("http://worker.test/__warnings")).json()).not.toContain(expect.stringContaining("BOOTSTRAP"));
    expect(await (await consoleRun!.fetch("http://worker.test/__log")).json()).toEqual([]);
  }, 60_000);
});

describe("bindings under PLANTGATE_ names", () => {
  it("a KV namespace named PLANTGATE_CACHE is a binding, left out: the Worker starts and serves", async () => {
    const [w] = await workersFor([BOOTSTRAP], "binding", { kvNamespaces: ["PLANTGATE_CACHE"] });
    const res = await w!.fetch("http://worker.test/UserService/connect/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${btoa("env-client:env-secret-0123456789abcdef")}` },
      body: "grant_type=client_credentials",
    });
    expect([res.status, ((await res.json()) as { expires_in: number }).expires_in]).toEqual([200, 7200]);
    expect(await (await w!.fetch("http://worker.test/__log")).json()).toEqual([]);
  }, 60_000);
});

describe("PLANTGATE_AUDIT: the Worker and the Node side agree", () => {
  it("every value is accepted with the same meaning, or refused with the same message, on both", async () => {
    const workers = await workersFor(
      // A bootstrap client: its client.created event is what an audit trail keeps.
      VALUES.map((value) => ({ PLANTGATE_AUDIT: value, PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", PLANTGATE_BOOTSTRAP_CLIENT_ID: "parity-client", PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "parity-secret-0123456789abcdef" })),
      "audit",
    );

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
