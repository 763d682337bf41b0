/**
 * Two real server processes on ONE PostgreSQL schema: the brute-force counters live in the shared
 * store, so failures on A count on B and a lock-out holds on both (429 + Retry-After, even for the
 * right password); an access token revoked on one instance (RFC 7009) is refused by the other.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  CLIENT_ID,
  CLIENT_SECRET,
  PASSWORD,
  USERNAME,
  baseServerEnv,
  describeIfPostgres,
  freshSchema,
  probePostgres,
  serverEnv,
  spawnEntry,
  token,
  waitForListening,
  type FreshSchema,
  type Spawned,
} from "./support.js";

const problem = await probePostgres();

describeIfPostgres("lock-out and revocation across two node-server processes", problem, () => {
  let schema: FreshSchema | undefined;
  const servers: Spawned[] = [];
  const urls: string[] = [];
  const workDir = mkdtempSync(join(tmpdir(), "plantgate-lockout-"));

  beforeAll(async () => {
    schema = await freshSchema();
    const env = serverEnv({ ...baseServerEnv(schema.url), PLANTGATE_BRUTE_FORCE_MAX_FAILURES: "3", PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS: "600" });
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
    rmSync(workDir, { recursive: true, force: true });
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
  });
});
