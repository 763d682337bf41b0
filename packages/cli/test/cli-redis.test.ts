/**
 * With PLANTGATE_REDIS_URL the servers keep the hot state (console sessions, brute-force counters,
 * revoked jtis, used assertion jtis) in Redis; the CLI composes the same stores. Before 2026-11-29
 * it opened SQL only: `user disable` left the account's console sessions in Redis and `prune`
 * reported zeros without reaching Redis, and a bad Redis URL went unnoticed.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openRedisHotStoresFromEnv, type OpenedRedisHotStores } from "@plantgate/storage-redis/env";
import { runCli } from "../src/cli.js";
// A private redis-server with an ACL user (the storage-redis tests' helper).
import { haveServer, withAclUser } from "../../storage-redis/test/support.js";

const REDIS_URL = process.env.PLANTGATE_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
const IN_CI = process.env.CI === "true";

async function probe(): Promise<string | null> {
  try {
    const hot = await openRedisHotStoresFromEnv({ PLANTGATE_REDIS_URL: REDIS_URL });
    await hot?.close();
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}
const problem = await probe();

let dir: string;
let prefix: string;
let hot: OpenedRedisHotStores | null = null;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "plantgate-cli-redis-"));
  prefix = `plantgate-cli-test:${randomBytes(6).toString("hex")}:`;
  // The SQLite store exists (the CLI's other commands refuse a missing file); migrate needs no Redis.
  expect((await cli(["migrate"])).code).toBe(0);
});
afterEach(async () => {
  await hot?.close();
  hot = null;
  rmSync(dir, { recursive: true, force: true });
});

const env = () => ({ PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", PLANTGATE_REDIS_URL: REDIS_URL, PLANTGATE_REDIS_KEY_PREFIX: prefix });

async function cli(argv: string[], stdin = "", extra: Record<string, string> = {}) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { env: { ...env(), ...extra }, cwd: dir, readStdin: async () => stdin, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

const suite = problem === null ? describe : IN_CI ? describe : describe.skip;
suite(problem === null ? "plantgate CLI with PLANTGATE_REDIS_URL" : `plantgate CLI with PLANTGATE_REDIS_URL (skipped: Redis unreachable at ${REDIS_URL}: ${problem})`, () => {
  it("the service is reachable (required when CI=true)", () => {
    expect(problem).toBeNull();
  });

  it("user disable deletes the account's console sessions in Redis, and prune deletes Redis's expired hot state and counts it", async () => {
    const created = await cli(["user", "create", "--username", "alice"], "a long passphrase\n");
    expect(created.code, created.stderr).toBe(0);
    const accountId = (JSON.parse(created.stdout) as { id: string }).id;
    hot = await openRedisHotStoresFromEnv(env());
    const now = Date.now();
    expect(await hot!.stores.sessions.create({ idHash: "s-alice", accountId, csrfHash: "c", createdAt: now, expiresAt: now + 60_000 })).toBe(true);

    expect(await cli(["user", "disable", "alice"])).toMatchObject({ code: 0 });
    expect(await hot!.stores.sessions.get("s-alice")).toBeNull();

    // Expired counters and jtis (kept by Redis a little past their expiry) go with prune, and are counted.
    await hot!.stores.attempts.increment("t:over", now - 3_600_000, 60_000);
    await hot!.stores.revokedTokens.add("jti-over", now - 1_000);
    await hot!.stores.revokedTokens.add("jti-live", now + 60_000);
    const pruned = await cli(["prune", "--server-defaults"]);
    expect(pruned.code, pruned.stderr).toBe(0);
    const counts = JSON.parse(pruned.stdout) as Record<string, number>;
    expect([counts.attempts, counts.revokedTokens]).toEqual([1, 1]);
    expect(await hot!.stores.attempts.get("t:over")).toBeNull();
    expect(await hot!.stores.revokedTokens.has("jti-live")).toBe(true);
  });

  it("a malformed PLANTGATE_REDIS_URL is exit 2, an unreachable one exit 3 (an outage: try again), each with a one-line message naming the URL without its password, for the commands that reach Redis (migrate and the rest do not need it)", async () => {
    expect(await cli(["prune", "--server-defaults"], "", { PLANTGATE_REDIS_URL: "not a url" })).toEqual({ code: 2, stdout: "", stderr: "plantgate: PLANTGATE_REDIS_URL must start with redis:// or rediss://\n" });
    expect(await cli(["migrate"], "", { PLANTGATE_REDIS_URL: "redis://127.0.0.1:1" })).toMatchObject({ code: 0 });
    expect(await cli(["user", "list"], "", { PLANTGATE_REDIS_URL: "redis://127.0.0.1:1" })).toMatchObject({ code: 0, stdout: "[]\n" });
    const unreachable = await cli(["user", "disable", "nobody"], "", { PLANTGATE_REDIS_URL: "redis://:hunter2@127.0.0.1:1" });
    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toMatch(/^plantgate: cannot reach Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1[^\n]*\n$/);
    expect(unreachable.stderr).not.toContain("hunter2");
    // Reached, but the credentials are refused: configuration (2), not an outage.
    const wrongPass = await cli(["user", "disable", "nobody"], "", { PLANTGATE_REDIS_URL: REDIS_URL.replace("redis://", "redis://plantgate-no-such-user:hunter2@") });
    expect({ code: wrongPass.code, stdout: wrongPass.stdout }).toEqual({ code: 2, stdout: "" });
    expect(wrongPass.stderr).toMatch(/^plantgate: cannot reach Redis at redis:\/\/plantgate-no-such-user:\*\*\*@[^\n]*WRONGPASS[^\n]*\n$/);
    // A database number the server does not have: configuration too (it was 3, an outage to retry).
    const noDb = await cli(["user", "disable", "nobody"], "", { PLANTGATE_REDIS_URL: `${REDIS_URL.replace(/\/\d*$/, "")}/99` });
    expect({ code: noDb.code, stdout: noDb.stdout }).toEqual({ code: 2, stdout: "" });
    expect(noDb.stderr).toMatch(/^plantgate: cannot reach Redis at [^\n]*\/99[^\n]*ERR DB index is out of range[^\n]*\n$/);
  });

  (haveServer || IN_CI ? it : it.skip)("a Redis user whose ACL refuses what the hot stores need is exit 2 (configuration), the refusal named in one line without the password, before anything is done (it pruned the SQL stores, then failed on every Redis one: exit 1)", async () => {
    await withAclUser(["~*", "+@all", "-evalsha"], async (url) => {
      expect(await cli(["prune", "--server-defaults"], "", { PLANTGATE_REDIS_URL: url, PLANTGATE_REDIS_KEY_PREFIX: "hot:" })).toEqual({
        code: 2,
        stdout: "",
        stderr: `plantgate: the Redis user at ${url.replace(":app-password@", ":***@")} may not run what the hot stores need: EVALSHA (NOPERM this user has no permissions to run the 'evalsha' command) (grant EVALSHA, EVAL and the commands the README's Redis section lists on keys under hot:)\n`,
      });
    });
  });
});
