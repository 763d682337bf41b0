/**
 * Stored times past what a Date holds (+-8.64e15 ms: a row written by hand, a server whose clock
 * answered one) do not stop `user list` or `client list`: such a time is printed as the end of that
 * range, and every other record as before. Until 2026-12-03 the first such time threw a RangeError:
 * `plantgate: Invalid time value`, exit 1, and none of the records were printed. The store is the
 * real SQLite one, written through its own store methods.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { runCli } from "../src/cli.js";
import { writeByHand } from "./support.js";

let dir: string;
const env = () => ({ PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", PLANTGATE_DB: join(dir, "plantgate.db") });
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "plantgate-cli-far-"));
  expect(await cli(["migrate"])).toEqual({ code: 0, stdout: '{\n  "migrated": true\n}\n', stderr: "migrations applied\n" });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function cli(argv: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, { env: env(), cwd: dir, readStdin: async () => "", stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}

const HASH = "pbkdf2-sha256$i=1000$c2FsdA$aGFzaA";

it("user list and client list print a record whose time is past what a Date holds (the end of its range), and the others beside it", async () => {
  const account = (n: number, createdAt: number) => ({ id: `6f1d2c3b-0000-4000-8000-00000000000${n}`, username: `user-${n}`, displayName: null, email: null, roles: [], enabled: true, createdAt, passwordHash: HASH });
  await writeByHand(dir, {
    accounts: [account(1, 1_700_000_000_000), account(2, 9e15), account(3, -9e15)],
    clients: [
      { clientId: "far", name: "Far", createdAt: 9e15, secretUpdatedAt: Number.MAX_SAFE_INTEGER },
      { clientId: "near", name: "Near" },
    ],
  });
  const users = await cli(["user", "list"]);
  expect([users.code, users.stderr]).toEqual([0, ""]);
  expect((JSON.parse(users.stdout) as { username: string; createdAt: string }[]).map((a) => [a.username, a.createdAt])).toEqual([
    ["user-1", "2023-11-14T22:13:20.000Z"],
    ["user-2", "+275760-09-13T00:00:00.000Z"],
    ["user-3", "-271821-04-20T00:00:00.000Z"],
  ]);
  const clients = await cli(["client", "list"]);
  expect([clients.code, clients.stderr]).toEqual([0, ""]);
  expect((JSON.parse(clients.stdout) as { client_id: string; created_at: string; secret_updated_at: string }[]).map((c) => [c.client_id, c.created_at, c.secret_updated_at])).toEqual([
    ["far", "+275760-09-13T00:00:00.000Z", "+275760-09-13T00:00:00.000Z"],
    ["near", "2023-11-14T22:13:20.000Z", "2023-11-14T22:13:20.000Z"],
  ]);
});
