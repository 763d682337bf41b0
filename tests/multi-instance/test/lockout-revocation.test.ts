/**
 * Two real server processes on ONE PostgreSQL schema: the brute-force counters live in the shared
 * store, so failures on A count on B and a lock-out holds on both (429 + Retry-After, even for the
 * right password); an access token revoked on one instance (RFC 7009) is refused by the other.
 * Run twice: with everything in PostgreSQL, and with the hot state (counters, revoked jtis) in
 * Redis beside it (`PLANTGATE_REDIS_URL`); each run also checks where that state landed.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  CLIENT_ID,
  CLIENT_SECRET,
  PASSWORD,
  USERNAME,
  baseServerEnv,
  connectRedis,
  describeIfService,
  freshSchema,
  POSTGRES_URL,
  probePostgres,
  probeRedis,
  REDIS_URL,
  serverEnv,
  spawnEntry,
  token,
  waitForListening,
  type FreshSchema,
  type Spawned,
} from "./support.js";

const postgresProblem = await probePostgres();
const redisProblem = await probeRedis();

/** Where the hot state of a run lives: the keys under the Redis prefix, or none without Redis. */
interface HotPlace {
  label: string;
  /** The Redis key prefix of this run, or null when the hot state stays in PostgreSQL. */
  redisPrefix: string | null;
}

/** Rows of a hot table in the run's schema. */
async function hotRows(schema: FreshSchema, table: "pg_attempts" | "pg_revoked_tokens"): Promise<number> {
  const client = new pg.Client({ connectionString: schema.url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>(`select count(*) as n from ${table}`)).rows[0]!.n);
  } finally {
    await client.end();
  }
}

/** Redis keys under `prefix` + `kind` (`a:k:` counters, `r:k:` revoked jtis). */
async function redisKeys(prefix: string, kind: string): Promise<string[]> {
  const client = await connectRedis();
  try {
    const keys: string[] = [];
    for await (const batch of client.scanIterator({ MATCH: `${prefix}${kind}*`, COUNT: 1000 })) keys.push(...batch);
    return keys;
  } finally {
    client.destroy();
  }
}

async function dropRedisPrefix(prefix: string): Promise<void> {
  const keys = await redisKeys(prefix, "");
  if (keys.length === 0) return;
  const client = await connectRedis();
  try {
    await client.del(keys);
  } finally {
    client.destroy();
  }
}

const runs: { place: HotPlace; service: [string, string, string]; problem: string | null }[] = [
  { place: { label: "PostgreSQL", redisPrefix: null }, service: ["PostgreSQL", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL"], problem: postgresProblem },
  {
    place: { label: "PostgreSQL + Redis for hot state", redisPrefix: `plantgate-mi:${randomBytes(6).toString("hex")}:` },
    service: postgresProblem === null ? ["Redis", REDIS_URL, "PLANTGATE_TEST_REDIS_URL"] : ["PostgreSQL", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL"],
    problem: postgresProblem ?? redisProblem,
  },
];

for (const { place, service, problem } of runs) describeIfService(`lock-out and revocation across two node-server processes (${place.label})`, ...service, problem, () => {
  let schema: FreshSchema | undefined;
  const servers: Spawned[] = [];
  const urls: string[] = [];
  const workDir = mkdtempSync(join(tmpdir(), "plantgate-lockout-"));
  const redisEnv: Record<string, string> = place.redisPrefix === null ? {} : { PLANTGATE_REDIS_URL: REDIS_URL, PLANTGATE_REDIS_KEY_PREFIX: place.redisPrefix };

  beforeAll(async () => {
    schema = await freshSchema();
    const env = serverEnv({ ...baseServerEnv(schema.url), ...redisEnv, PLANTGATE_BRUTE_FORCE_MAX_FAILURES: "3", PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS: "600" });
    for (const _ of [0, 1]) {
      const s = spawnEntry(env, workDir);
      servers.push(s);
      urls.push(await waitForListening(s));
    }
  });

  afterAll(async () => {
    for (const s of servers) s.kill();
    await Promise.all(servers.map((s) => s.exited(10_000).catch(() => undefined)));
    await schema?.drop();
    if (place.redisPrefix !== null) await dropRedisPrefix(place.redisPrefix);
    rmSync(workDir, { recursive: true, force: true });
  });

  it("each instance says where the hot state lives", () => {
    for (const s of servers) {
      const store = /^ {2}store: +(.+)$/m.exec(s.stdout())![1]!;
      expect(store.includes("; hot state in Redis "), store).toBe(place.redisPrefix !== null);
      if (place.redisPrefix !== null) expect(store).toContain(`(prefix ${place.redisPrefix})`);
    }
  });

  it("failures on either instance lock the username on both; the body does not depend on the password", async () => {
    const [a, b] = urls as [string, string];
    const attempt = (base: string, password: string) =>
      token(base, { grant_type: "password", client_id: CLIENT_ID, client_secret: CLIENT_SECRET, username: USERNAME, password });
    for (const base of [a, b, a]) {
      const res = await attempt(base, "not-the-password");
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body).toEqual({ error: "invalid_grant", error_description: "The username or password is incorrect." });
    }
    const locked = [await attempt(b, PASSWORD), await attempt(a, "not-the-password")];
    for (const res of locked) {
      expect(res.status).toBe(429);
      expect(res.body).toEqual({ error: "temporarily_unavailable", error_description: "Too many failed attempts; retry after the time in Retry-After." });
      const retryAfter = Number(res.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThan(500);
      expect(retryAfter).toBeLessThanOrEqual(600);
      expect(res.headers.get("cache-control")).toBe("no-store");
    }
    // The counters (username, username + address, and the client's password-grant budget across
    // usernames) are where this run keeps hot state.
    if (place.redisPrefix === null) {
      expect(await hotRows(schema!, "pg_attempts")).toBe(3);
    } else {
      expect(await hotRows(schema!, "pg_attempts")).toBe(0);
      expect(await redisKeys(place.redisPrefix, "a:k:")).toHaveLength(3);
    }
  });

  it("an access token revoked on A is refused on B", async () => {
    const [a, b] = urls as [string, string];
    const issued = await token(a, { grant_type: "client_credentials", client_id: CLIENT_ID, client_secret: CLIENT_SECRET });
    expect(issued.status, JSON.stringify(issued.body)).toBe(200);
    const accessToken = issued.body.access_token as string;
    const list = () => fetch(`${b}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${accessToken}` } });
    expect((await list()).status).toBe(200);
    const revoked = await fetch(`${a}/UserService/connect/revocation`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: accessToken, client_id: CLIENT_ID, client_secret: CLIENT_SECRET }),
    });
    expect(revoked.status).toBe(200);
    const refused = await list();
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: 1202, message: "The access token is invalid or expired." });
    const jti = (JSON.parse(Buffer.from(accessToken.split(".")[1]!, "base64url").toString("utf8")) as { jti: string }).jti;
    if (place.redisPrefix === null) {
      expect(await hotRows(schema!, "pg_revoked_tokens")).toBe(1);
    } else {
      expect(await hotRows(schema!, "pg_revoked_tokens")).toBe(0);
      expect(await redisKeys(place.redisPrefix, "r:k:")).toEqual([`${place.redisPrefix}r:k:${jti}`]);
    }
  });
});
