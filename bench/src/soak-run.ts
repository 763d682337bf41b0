/**
 * The soak: a simulated stretch of traffic driven through plantgate's core (`app.fetch`) on SQLite
 * with an injected clock, with `admin.prune()` on its schedule, counting every table's rows at each
 * simulated month against its live set (the rows that can still matter at that instant).
 */
import { createPlantgate, type Plantgate } from "@plantgate/core";
import { nodeCrypto } from "@plantgate/node";
import { openSqlStorage, type SqlStorage } from "@plantgate/storage-sql";

/** Traffic per simulated hour and the schedule. */
export interface SoakSettings {
  /** Simulated days; a month is 30 days. */
  days: number;
  /** Seconds between prunes (simulated). */
  pruneIntervalSeconds: number;
  /** Brute-force window (seconds). */
  bruteForceWindowSeconds: number;
  accounts: number;
  /** Per simulated hour: */
  passwordGrants: number;
  /** Share of new refresh-token families that keep refreshing until they expire (the rest are abandoned). */
  activeFamilyShare: number;
  /** Days between the refreshes of an active family (below the 7-day sliding lifetime). */
  refreshEveryDays: number;
  failedLogins: number;
  consoleSignIns: number;
  /** Access tokens revoked (RFC 7009) per hour, and refresh-token families revoked per hour. */
  accessRevocations: number;
  familyRevocations: number;
  /** Rotate the signing key when it is this old (seconds). */
  signingKeyMaxAgeSeconds: number;
}

/** A year (12 months of 30 days) at a small, steady load, so it runs in about a minute. */
export const YEAR: SoakSettings = {
  days: 360,
  pruneIntervalSeconds: 1800,
  bruteForceWindowSeconds: 3600,
  accounts: 60,
  passwordGrants: 0.3,
  activeFamilyShare: 0.5,
  refreshEveryDays: 3,
  failedLogins: 0.5,
  consoleSignIns: 0.25,
  accessRevocations: 0.25,
  familyRevocations: 0.02,
  signingKeyMaxAgeSeconds: 30 * 86_400,
};

/** Row count and live set of one table at one instant. */
export interface TableSample {
  rows: number;
  live: number;
}

/** One simulated month's counts (taken just before that instant's prune: the worst case). */
export interface MonthSample {
  month: number;
  tables: Record<string, TableSample>;
}

/** What a soak returns: the samples, the prune totals, and the tables that broke the 2x bound. */
export interface SoakResult {
  samples: MonthSample[];
  /** The rows each prune count deleted, summed over the runs (the numeric members of `PruneCounts`). */
  pruned: Record<string, number>;
  /** How many times `prune` ran. */
  pruneRuns: number;
  /** How many of those runs said `complete: false` (work left for the next run). */
  incompletePruneRuns: number;
  violations: string[];
  requests: number;
  elapsedMs: number;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const START = Date.UTC(2026, 0, 1);
const PASSWORD = "soak-password-0123";
const FORM = "application/x-www-form-urlencoded";

/**
 * The most rows a table may hold for a live set: twice the live set, and for a table whose live
 * set is tiny (0 to 2 rows at that instant), at least the live set plus 3, the rows that may
 * expire between two prunes at this load: one failed password grant counts under three keys
 * (username and address, username, the client's budget across usernames), which can all expire
 * between two prunes.
 */
export const withinBound = (live: number): number => Math.max(2 * live, live + 3);

/** Deterministic pseudo-random numbers (mulberry32), so every run drives the same traffic. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A count that averages `rate`: the whole part, plus one more with the fractional part's probability. */
const countOf = (rate: number, random: () => number) => Math.floor(rate) + (random() < rate - Math.floor(rate) ? 1 : 0);

type Counted = "pg_refresh_tokens" | "pg_refresh_families" | "pg_sessions" | "pg_attempts" | "pg_revoked_tokens" | "pg_accounts" | "pg_clients" | "pg_plants";

/** Rows of a table, all or those matching `where`. */
async function count(storage: SqlStorage, table: Counted, where?: (qb: any) => any): Promise<number> {
  let query: any = storage.db.selectFrom(table).select((eb) => eb.fn.countAll().as("n"));
  if (where) query = where(query);
  const row = (await query.executeTakeFirstOrThrow()) as { n: number | string | bigint };
  return Number(row.n);
}

/** Rows and live set of every table at `now`. The live sets restate what may not be deleted yet. */
async function sampleTables(app: Plantgate, storage: SqlStorage, now: number, windowMs: number): Promise<Record<string, TableSample>> {
  const keys = await storage.signingKeys.list();
  // Statuses as the app sees them at this instant (its clock is the soak's).
  const statuses = await app.admin.listSigningKeys();
  const everything = async (table: Counted): Promise<TableSample> => {
    const n = await count(storage, table);
    return { rows: n, live: n };
  };
  return {
    pg_refresh_tokens: {
      rows: await count(storage, "pg_refresh_tokens"),
      // Usable (not consumed, not expired), or consumed in a family that lives (its reuse is detected).
      live: await count(storage, "pg_refresh_tokens", (q) =>
        q.where("family_expires_at", ">", now).where((eb: any) => eb.or([eb("consumed_at", "is not", null), eb("expires_at", ">", now)])),
      ),
    },
    // One row per family until its absolute expiry, whether tokens of it are left or not.
    pg_refresh_families: {
      rows: await count(storage, "pg_refresh_families"),
      live: await count(storage, "pg_refresh_families", (q) => q.where("family_expires_at", ">", now)),
    },
    pg_sessions: { rows: await count(storage, "pg_sessions"), live: await count(storage, "pg_sessions", (q) => q.where("expires_at", ">", now)) },
    pg_attempts: { rows: await count(storage, "pg_attempts"), live: await count(storage, "pg_attempts", (q) => q.where("window_start", ">", now - windowMs)) },
    pg_revoked_tokens: {
      rows: await count(storage, "pg_revoked_tokens"),
      live: await count(storage, "pg_revoked_tokens", (q) => q.where("expires_at", ">", now)),
    },
    pg_signing_keys: { rows: keys.length, live: statuses.filter((k) => k.status !== "prunable").length },
    // Never pruned: everything in them is live.
    pg_accounts: await everything("pg_accounts"),
    pg_clients: await everything("pg_clients"),
    pg_plants: await everything("pg_plants"),
  };
}

/**
 * Runs the soak on a fresh SQLite file. Traffic is spread at random instants over each prune
 * interval; the sample of month m is taken at day 30·m just before that instant's prune.
 */
export async function runSoak(settings: SoakSettings, onMonth?: (sample: MonthSample) => void): Promise<SoakResult> {
  const started = performance.now();
  // In memory: the same SQLite engine, schema and statements, without a disk's fsync per write
  // (which measures the disk, not how the tables grow).
  const storage = await openSqlStorage(":memory:");
  const random = rng(17);
  let now = START;
  const app = createPlantgate({
    storage,
    clock: () => now,
    issuer: "https://soak.plantgate.test",
    baseUrl: "https://soak.plantgate.test",
    passwordHashIterations: 1000,
    crypto: nodeCrypto(),
    signingKeyMaxAgeSeconds: settings.signingKeyMaxAgeSeconds,
    bruteForce: { maxFailures: 10, windowSeconds: settings.bruteForceWindowSeconds },
    console: { enabled: true },
    logger: { error() {}, warn() {} },
  });
  const base = "https://soak.plantgate.test";
  const { clientSecret } = await app.admin.createClient({ clientId: "soak-app" });
  const basic = `Basic ${btoa(`soak-app:${clientSecret}`)}`;
  const usernames: string[] = [];
  for (let i = 0; i < settings.accounts; i++) {
    const username = `user-${String(i).padStart(3, "0")}`;
    await app.admin.createAccount({ username, password: PASSWORD, roles: i === 0 ? ["admin"] : [] });
    usernames.push(username);
  }
  let requests = 0;
  const send = async (path: string, init: RequestInit, ip: string) => {
    requests++;
    const res = await app.fetch(new Request(base + path, init), { clientIp: ip });
    return { status: res.status, body: (await res.json().catch(() => null)) as Record<string, string> | null };
  };
  const token = (form: Record<string, string>, ip = "198.51.100.1") =>
    send("/UserService/connect/token", { method: "POST", headers: { "content-type": FORM, authorization: basic }, body: new URLSearchParams(form) }, ip);
  const expectStatus = (what: string, got: number, want: number) => {
    if (got !== want) throw new Error(`soak: ${what} answered ${got}, expected ${want} (simulated ${new Date(now).toISOString()})`);
  };

  /** Active families: the current refresh token and when it is next used. */
  const active: Array<{ token: string; next: number }> = [];
  const pruned: Record<string, number> = {};
  let pruneRuns = 0;
  let incompletePruneRuns = 0;
  const samples: MonthSample[] = [];
  const violations: string[] = [];
  const windowMs = settings.bruteForceWindowSeconds * 1000;
  const interval = settings.pruneIntervalSeconds * 1000;
  const end = START + settings.days * DAY;
  let nextMonth = START + 30 * DAY;
  let failureSerial = 0;

  for (let tick = START; tick < end; tick += interval) {
    // What happens in (tick, tick + interval], at random instants, in time order.
    const share = interval / HOUR;
    const events: Array<{ at: number; kind: string; family?: (typeof active)[number] }> = [];
    const add = (rate: number, kind: string) => {
      for (let i = countOf(rate * share, random); i > 0; i--) events.push({ at: tick + Math.floor(random() * interval), kind });
    };
    add(settings.passwordGrants, "password");
    add(settings.failedLogins, "failed");
    add(settings.consoleSignIns, "console");
    add(settings.accessRevocations, "revoke-access");
    add(settings.familyRevocations, "revoke-family");
    for (const family of active) if (family.next > tick && family.next <= tick + interval) events.push({ at: family.next, kind: "refresh", family });
    events.sort((a, b) => a.at - b.at);

    for (const event of events) {
      now = event.at;
      const user = usernames[Math.floor(random() * usernames.length)]!;
      switch (event.kind) {
        case "password": {
          const res = await token({ grant_type: "password", username: user, password: PASSWORD, scope: "offline_access Platform_UserAPIs" });
          expectStatus("password grant", res.status, 200);
          if (random() < settings.activeFamilyShare) active.push({ token: res.body!.refresh_token!, next: now + settings.refreshEveryDays * DAY });
          break;
        }
        case "refresh": {
          const family = event.family!;
          // Revoked (and dropped) earlier in this interval.
          if (!active.includes(family)) break;
          const res = await token({ grant_type: "refresh_token", refresh_token: family.token });
          if (res.status === 200) {
            family.token = res.body!.refresh_token!;
            family.next = now + settings.refreshEveryDays * DAY;
          } else {
            // Its family reached its absolute expiry, or was revoked: the app signs in again later.
            active.splice(active.indexOf(family), 1);
          }
          break;
        }
        case "failed": {
          // Guesses at known and unknown usernames, from many addresses.
          const target = random() < 0.5 ? user : `nobody-${failureSerial++}`;
          const ip = `203.0.113.${Math.floor(random() * 250)}`;
          const res = await token({ grant_type: "password", username: target, password: "wrong-guess" }, ip);
          if (res.status !== 400 && res.status !== 429) expectStatus("failed login", res.status, 400);
          break;
        }
        case "console": {
          const res = await send(
            "/console/api/session",
            { method: "POST", headers: { "content-type": "application/json", origin: base }, body: JSON.stringify({ username: usernames[0], password: PASSWORD }) },
            "198.51.100.2",
          );
          expectStatus("console sign-in", res.status, 200);
          break;
        }
        case "revoke-access": {
          const issued = await token({ grant_type: "client_credentials" });
          expectStatus("client credentials", issued.status, 200);
          const res = await send(
            "/UserService/connect/revocation",
            { method: "POST", headers: { "content-type": FORM, authorization: basic }, body: new URLSearchParams({ token: issued.body!.access_token! }) },
            "198.51.100.1",
          );
          expectStatus("revocation", res.status, 200);
          break;
        }
        case "revoke-family": {
          const family = active.length > 0 ? active.splice(Math.floor(random() * active.length), 1)[0]! : null;
          if (!family) break;
          const res = await send(
            "/UserService/connect/revocation",
            { method: "POST", headers: { "content-type": FORM, authorization: basic }, body: new URLSearchParams({ token: family.token, token_type_hint: "refresh_token" }) },
            "198.51.100.1",
          );
          expectStatus("refresh-token revocation", res.status, 200);
          break;
        }
      }
    }

    now = tick + interval;
    if (now >= nextMonth) {
      const sample: MonthSample = { month: samples.length + 1, tables: await sampleTables(app, storage, now, windowMs) };
      samples.push(sample);
      for (const [table, { rows, live }] of Object.entries(sample.tables)) {
        if (rows > withinBound(live)) violations.push(`month ${sample.month}: ${table} has ${rows} rows, live set ${live}`);
      }
      onMonth?.(sample);
      nextMonth += 30 * DAY;
    }
    const { complete, ...counts } = await app.admin.prune();
    // Rows only: `complete` is a boolean (summed, it printed "complete":17280 until 2026-11-30).
    for (const [k, v] of Object.entries(counts)) pruned[k] = (pruned[k] ?? 0) + v;
    pruneRuns++;
    if (!complete) incompletePruneRuns++;
  }

  await storage.close();
  return { samples, pruned, pruneRuns, incompletePruneRuns, violations, requests, elapsedMs: performance.now() - started };
}

/** The soak's closing line (without its duration): requests, rows pruned per kind, prune runs and how many left work behind. */
export function soakSummary(result: Pick<SoakResult, "requests" | "pruned" | "pruneRuns" | "incompletePruneRuns">): string {
  const incomplete = result.incompletePruneRuns === 0 ? "0 incomplete: none left work for the next run" : `${result.incompletePruneRuns} incomplete: left work for the next run`;
  return `requests: ${result.requests}, pruned: ${JSON.stringify(result.pruned)}, prune runs: ${result.pruneRuns} (${incomplete})`;
}

/** The month table as Markdown: `rows / live` per table. */
export function soakTable(samples: MonthSample[]): string {
  const tables = Object.keys(samples[0]?.tables ?? {});
  const head = `| month | ${tables.join(" | ")} |\n|---:|${tables.map(() => "---:").join("|")}|`;
  const rows = samples.map((s) => `| ${s.month} | ${tables.map((t) => `${s.tables[t]!.rows} / ${s.tables[t]!.live}`).join(" | ")} |`);
  return [head, ...rows].join("\n");
}
