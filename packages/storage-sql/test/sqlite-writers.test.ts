/**
 * One SQLite file written by two processes, as when `plantgate user import` (the CLI) runs beside
 * a server: a write must wait for the other process's writer (busy_timeout), never fail at once.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { AccountRecord } from "@plantgate/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSqlStorage } from "../src/index.js";

const packageDir = fileURLToPath(new URL("..", import.meta.url));

/** Another process that commits small write transactions to `file` for `ms`, then exits. */
function busyWriter(file: string, ms: number): Promise<number> {
  const script = `import Database from "better-sqlite3";
const db = new Database(process.argv[1]);
db.pragma("busy_timeout = 5000");
db.exec("create table if not exists other_writer (x integer)");
const insert = db.prepare("insert into other_writer (x) values (?)");
const end = Date.now() + Number(process.argv[2]);
let n = 0;
while (Date.now() < end) insert.run(n++);
db.close();
console.log(n);`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", script, file, String(ms)], { cwd: packageDir, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve(Number(out.trim())) : reject(new Error(`the other writer exited with ${code}`))));
  });
}

const record = (i: number, prefix: string): AccountRecord => ({
  id: `${prefix}-${i}`,
  username: `${prefix}-user-${i}`,
  displayName: null,
  email: null,
  roles: [],
  enabled: true,
  createdAt: 1_700_000_000_000 + i,
  passwordHash: "pbkdf2-hash",
});

describe("sqlite: another process writing the same file", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "plantgate-writers-"));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("accounts.createMany and create wait for it instead of failing with SQLITE_BUSY; places stay gapless", async () => {
    const file = join(dir, "plantgate.db");
    const storage = await openSqlStorage(file);
    try {
      const other = busyWriter(file, 2_500);
      // Let the other process start committing.
      await new Promise((resolve) => setTimeout(resolve, 700));
      const results: Array<number | null | boolean> = [];
      for (let batch = 0; batch < 5; batch++) {
        results.push(await storage.accounts.createMany(Array.from({ length: 200 }, (_, i) => record(batch * 200 + i, "import"))));
        results.push(await storage.accounts.create(record(batch, "single")));
      }
      const commits = await other;
      expect(commits, "the other process committed meanwhile").toBeGreaterThan(100);
      expect(results).toEqual(Array.from({ length: 5 }, () => [null, true]).flat());
      const all = await storage.accounts.list(0, 2_000);
      expect(all.total).toBe(1_005);
      expect(new Set(all.items.map((a) => a.id)).size).toBe(1_005);
      expect((await storage.accounts.list(1_004, 1)).items).toHaveLength(1);
      // A conflict found under the write lock still writes nothing.
      expect(await storage.accounts.createMany([record(9_999, "late"), record(3, "import")])).toBe(1);
      expect((await storage.accounts.list(0, 1)).total).toBe(1_005);
    } finally {
      await storage.close();
    }
  }, 30_000);
});
