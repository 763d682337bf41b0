import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { StorageError, type ClientRecord } from "@plantgate/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createJsonFileStorage } from "../src/json-file-storage.js";

let dir: string;
let file: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "plantgate-json-"));
  file = join(dir, "nested", "store.json");
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const client: ClientRecord = {
  clientId: "reporting",
  authMethod: "client_secret",
  secrets: [{ id: "initial", hash: "n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg", createdAt: 1_700_000_000_123, expiresAt: null, lastUsedAt: null }],
  jwks: null,
  jwksUri: null,
  name: "Reporting ✓",
  grantTypes: ["client_credentials", "refresh_token"],
  scopes: ["Platform_UserAPIs", "offline_access"],
  accessTokenTtl: 600,
  refreshTokenTtl: null,
  refreshTokenAbsoluteTtl: null,
  createdAt: 8_640_000_000_000_000,
  secretUpdatedAt: 1_700_000_000_123,
};

describe("JSON file storage: persistence", () => {
  it("a missing file is an empty store, and nothing is written until the first write", async () => {
    const storage = await createJsonFileStorage(file);
    expect(await storage.clients.list()).toEqual([]);
    expect(await storage.plants.get(1n)).toBeNull();
    await expect(stat(file)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("data survives re-opening the file: an int64 plant and a client come back exactly", async () => {
    const first = await createJsonFileStorage(file);
    expect(await first.plants.create({ id: 9223372036854775807n, name: "Monstera\u0000deliciosa", tag: null })).toBe(true);
    expect(await first.plants.create({ id: -9223372036854775808n, name: "Ficus", tag: "" })).toBe(true);
    expect(await first.clients.create(structuredClone(client))).toBe(true);

    const text = await readFile(file, "utf8");
    expect(text).toContain('"9223372036854775807"'); // stored as a string, not a rounded number

    await first.close();
    const reopened = await createJsonFileStorage(file);
    const plant = await reopened.plants.get(9223372036854775807n);
    expect(plant).toStrictEqual({ id: 9223372036854775807n, name: "Monstera\u0000deliciosa", tag: null });
    expect(typeof plant!.id).toBe("bigint");
    expect(await reopened.plants.get(-9223372036854775808n)).toStrictEqual({ id: -9223372036854775808n, name: "Ficus", tag: "" });
    expect(await reopened.clients.get("reporting")).toStrictEqual(client);
    expect(await reopened.clients.list()).toStrictEqual([client]);
  });

  it("accounts keep their places in creation order across re-opening the file", async () => {
    const account = (id: string, username: string) => ({ id, username, displayName: null, email: null, roles: [], enabled: true, createdAt: 1_700_000_000_000, passwordHash: "$pbkdf2-sha256$i=1,l=32$c2FsdA$aGFzaA" });
    const first = await createJsonFileStorage(file);
    expect(await first.accounts.create(account("z", "zed"))).toBe(true);
    expect(await first.accounts.createMany([account("m", "em"), account("a", "ay")])).toBeNull();
    expect(await first.accounts.setEnabled("z", false)).toBe(true);
    await first.close();
    const reopened = await createJsonFileStorage(file);
    expect(await reopened.accounts.create(account("b", "bee"))).toBe(true);
    const page = await reopened.accounts.list(0, 10);
    expect(page.items.map((a) => [a.id, a.enabled])).toEqual([["z", false], ["m", true], ["a", true], ["b", true]]);
    expect(page.total).toBe(4);
    expect((await reopened.accounts.list(1, 2)).items.map((a) => a.id)).toEqual(["m", "a"]);
  });

  it("leaves no temp files behind and keeps the file private (0600)", async () => {
    const storage = await createJsonFileStorage(file);
    await Promise.all(Array.from({ length: 20 }, (_, i) => storage.plants.create({ id: BigInt(i), name: `p${i}`, tag: null })));
    expect((await readdir(join(dir, "nested"))).sort()).toEqual(["store.json", "store.json.lock"]);
    if (process.platform !== "win32") expect((await stat(file)).mode & 0o777).toBe(0o600);
    await storage.close();
    const reopened = await createJsonFileStorage(file);
    for (let i = 0; i < 20; i++) expect(await reopened.plants.get(BigInt(i))).toStrictEqual({ id: BigInt(i), name: `p${i}`, tag: null });
  });

  it("concurrent writes all reach the file (the last write carries every change)", async () => {
    const storage = await createJsonFileStorage(file);
    const results = await Promise.all([
      storage.clients.create(structuredClone(client)),
      storage.accounts.createMany([
        { id: "a1", username: "alice", displayName: null, email: null, roles: [], enabled: true, createdAt: 1, passwordHash: "$pbkdf2-sha256$x" },
        { id: "a2", username: "bob", displayName: "Bob", email: "bob@example.com", roles: ["admin"], enabled: false, createdAt: 2, passwordHash: "$pbkdf2-sha256$y" },
      ]),
      storage.signingKeys.create({ kid: "k1", alg: "ES256", privateJwk: "{}", publicJwk: "{}", createdAt: 3, activatesAt: 3 }),
      storage.plants.create({ id: 42n, name: "Pilea", tag: "indoor" }),
    ]);
    expect(results).toEqual([true, null, true, true]);
    await storage.flush();
    await storage.close();
    const reopened = await createJsonFileStorage(file);
    expect(await reopened.clients.get("reporting")).toStrictEqual(client);
    expect((await reopened.accounts.list(0, 10)).items.map((a) => a.username)).toEqual(["alice", "bob"]);
    expect(await reopened.accounts.findByUsername("bob")).toMatchObject({ id: "a2", roles: ["admin"], enabled: false });
    expect(await reopened.signingKeys.list()).toHaveLength(1);
    expect(await reopened.plants.get(42n)).toStrictEqual({ id: 42n, name: "Pilea", tag: "indoor" });
  });

  it("counters, revoked jtis and console sessions survive re-opening the file", async () => {
    const first = await createJsonFileStorage(file);
    await first.attempts.increment("user:abc", 1_700_000_000_000, 60_000);
    await first.attempts.increment("user:abc", 1_700_000_000_001, 60_000);
    await first.revokedTokens.add("jti-1", 8_640_000_000_000_000);
    const session = { idHash: "n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg", accountId: "a1", csrfHash: "c2VjcmV0LWhhc2g", createdAt: 1, expiresAt: 2 };
    expect(await first.sessions.create({ ...session })).toBe(true);
    await first.close();
    const reopened = await createJsonFileStorage(file);
    expect(await reopened.attempts.get("user:abc")).toStrictEqual({ key: "user:abc", count: 2, windowStart: 1_700_000_000_000 });
    expect(await reopened.revokedTokens.has("jti-1")).toBe(true);
    expect(await reopened.sessions.get(session.idHash)).toStrictEqual(session);
    expect(JSON.parse(await readFile(file, "utf8")).version).toBe(3);
  });

  it("a signing key written before activation times (no activatesAt) reads as activating at its creation", async () => {
    const old = {
      format: "plantgate-json-storage",
      version: 2,
      clients: [],
      accounts: [],
      refreshTokens: [],
      plants: [],
      signingKeys: [{ kid: "k-old", alg: "ES256", privateJwk: "{}", publicJwk: "{}", createdAt: 7 }],
      attempts: [],
      revokedTokens: [],
      sessions: [],
    };
    await writeFile(join(dir, "old-keys.json"), JSON.stringify(old));
    const storage = await createJsonFileStorage(join(dir, "old-keys.json"));
    expect(await storage.signingKeys.list()).toStrictEqual([{ kid: "k-old", alg: "ES256", privateJwk: "{}", publicJwk: "{}", createdAt: 7, activatesAt: 7 }]);
  });

  it("a signing key's stamp (lastSignedAt, markSigning) survives re-opening the file; a key never stamped comes back without one", async () => {
    const storage = await createJsonFileStorage(file);
    const key = { kid: "k-1", alg: "ES256", privateJwk: "{}", publicJwk: "{}", createdAt: 7, activatesAt: 7 };
    expect(await storage.signingKeys.create(key)).toBe(true);
    expect(await storage.signingKeys.create({ ...key, kid: "k-2" })).toBe(true);
    await storage.signingKeys.markSigning!("k-1", 60_007);
    await storage.signingKeys.markSigning!("k-1", 30_007);
    await storage.close();
    const reopened = await createJsonFileStorage(file);
    expect(await reopened.signingKeys.list()).toStrictEqual([{ ...key, lastSignedAt: 60_007 }, { ...key, kid: "k-2" }]);
  });

  it("a version 1 file (before attempts, revoked tokens and sessions) opens with its data, and the next write upgrades it", async () => {
    // Version 1 and 2 clients had one secret, as `secretHash`: it becomes the secret "initial".
    const { authMethod: _m, secrets: _s, jwks: _j, jwksUri: _u, ...rest } = client;
    const oldClient = { ...rest, secretHash: client.secrets[0]!.hash };
    const v1 = {
      format: "plantgate-json-storage",
      version: 1,
      clients: [oldClient],
      accounts: [],
      refreshTokens: [],
      plants: [{ id: "-9223372036854775808", name: "Ficus", tag: null }],
      signingKeys: [],
    };
    await writeFile(join(dir, "v1.json"), JSON.stringify(v1));
    const storage = await createJsonFileStorage(join(dir, "v1.json"));
    expect(await storage.clients.get("reporting")).toStrictEqual(client);
    expect(await storage.plants.get(-9223372036854775808n)).toStrictEqual({ id: -9223372036854775808n, name: "Ficus", tag: null });
    expect(await storage.attempts.get("k")).toBeNull();
    expect(await storage.revokedTokens.has("j")).toBe(false);
    expect(JSON.parse(await readFile(join(dir, "v1.json"), "utf8"))).toStrictEqual(v1); // opening alone writes nothing
    await storage.revokedTokens.add("j", 5);
    const saved = JSON.parse(await readFile(join(dir, "v1.json"), "utf8"));
    expect(saved).toStrictEqual({ ...v1, version: 3, clients: [client], attempts: [], revokedTokens: [{ jti: "j", expiresAt: 5 }], sessions: [], assertionJtis: [] });
    await storage.close();
    const reopened = await createJsonFileStorage(join(dir, "v1.json"));
    expect(await reopened.clients.get("reporting")).toStrictEqual(client);
    expect(await reopened.revokedTokens.has("j")).toBe(true);
  });

  describe("a corrupt file is a clear error naming the file, and is left untouched", () => {
    const cases: [string, string, RegExp][] = [
      ["truncated JSON", '{"format":"plantgate-json-storage","version":1,"clients":[', /invalid JSON/],
      ["an empty file", "", /invalid JSON/],
      ["not an object", "[]", /top level is not an object/],
      ["another format", '{"hello":"world"}', /"format" is not "plantgate-json-storage"/],
      ["a newer version", '{"format":"plantgate-json-storage","version":4}', /unsupported "version" 4/],
      ["a version 2 file with a version 3 section", '{"format":"plantgate-json-storage","version":2,"clients":[],"accounts":[],"refreshTokens":[],"plants":[],"signingKeys":[],"attempts":[],"revokedTokens":[],"sessions":[],"assertionJtis":[]}', /"assertionJtis" is not part of a version 2 file/],
      ["a version 2 file without the sessions section", '{"format":"plantgate-json-storage","version":2,"clients":[],"accounts":[],"refreshTokens":[],"plants":[],"signingKeys":[],"attempts":[],"revokedTokens":[]}', /"sessions" is not an array/],
      ["a version 1 file with a version 2 section", '{"format":"plantgate-json-storage","version":1,"clients":[],"accounts":[],"refreshTokens":[],"plants":[],"signingKeys":[],"sessions":[]}', /"sessions" is not part of a version 1 file/],
      ["a repeated session hash", '{"format":"plantgate-json-storage","version":2,"clients":[],"accounts":[],"refreshTokens":[],"plants":[],"signingKeys":[],"attempts":[],"revokedTokens":[],"sessions":[{"idHash":"h","accountId":"a","csrfHash":"c","createdAt":1,"expiresAt":2},{"idHash":"h","accountId":"b","csrfHash":"d","createdAt":1,"expiresAt":2}]}', /sessions\[1\] repeats the key "h"/],
      ["a missing section", '{"format":"plantgate-json-storage","version":1,"clients":[],"accounts":[],"refreshTokens":[],"plants":[]}', /"signingKeys" is not an array/],
      ["a plant id that is a number", '{"format":"plantgate-json-storage","version":1,"clients":[],"accounts":[],"refreshTokens":[],"plants":[{"id":1,"name":"x","tag":null}],"signingKeys":[]}', /plants\[0\]\.id is not string/],
      ["a plant id outside int64", '{"format":"plantgate-json-storage","version":1,"clients":[],"accounts":[],"refreshTokens":[],"plants":[{"id":"9223372036854775808","name":"x","tag":null}],"signingKeys":[]}', /not a decimal int64/],
      ["a signing key's lastSignedAt that is no number", '{"format":"plantgate-json-storage","version":3,"clients":[],"accounts":[],"refreshTokens":[],"plants":[],"signingKeys":[{"kid":"k","alg":"ES256","privateJwk":"{}","publicJwk":"{}","createdAt":1,"activatesAt":1,"lastSignedAt":"soon"}],"attempts":[],"revokedTokens":[],"sessions":[],"assertionJtis":[]}', /signingKeys\[0\]\.lastSignedAt is not number/],
      ["a repeated plant id", '{"format":"plantgate-json-storage","version":1,"clients":[],"accounts":[],"refreshTokens":[],"plants":[{"id":"1","name":"x","tag":null},{"id":"1","name":"y","tag":null}],"signingKeys":[]}', /plants\[1\] repeats the key "1"/],
    ];
    for (const [what, text, message] of cases) {
      it(what, async () => {
        await writeFile(join(dir, "bad.json"), text);
        const opening = createJsonFileStorage(join(dir, "bad.json"));
        await expect(opening).rejects.toThrow(Error);
        await expect(opening).rejects.toThrow(/plantgate JSON storage: .*bad\.json is not a valid store/);
        await expect(opening).rejects.toThrow(message);
        expect(await readFile(join(dir, "bad.json"), "utf8")).toBe(text);
      });
    }
  });

  it("a write that cannot reach the disk rejects with StorageError; then every call is refused until a restart, which reads the file as last written", async () => {
    const storage = await createJsonFileStorage(file);
    expect(await storage.clients.create(structuredClone(client))).toBe(true);
    // The folder swapped for a file: the next write cannot even create its temp file.
    await rename(join(dir, "nested"), join(dir, "away"));
    await writeFile(join(dir, "nested"), "a file where the folder should be");
    const replacement = { id: "new", hash: "bmV3LWhhc2g", createdAt: 1_800_000_000_000, expiresAt: null, lastUsedAt: null };
    await expect(storage.clients.replaceSecrets("reporting", replacement)).rejects.toMatchObject({ name: "StorageError", message: `could not write ${file}` });
    // Before 2026-11-29 the store went on answering with the new secret the caller was told failed
    // (and the old one already refused), and a later write persisted it.
    for (const call of [() => storage.clients.get("reporting"), () => storage.plants.create({ id: 1n, name: "x", tag: null })]) {
      await expect(call()).rejects.toMatchObject({ name: "StorageError", message: `could not write ${file}; the store refuses every call until the process restarts and reads the file as last written` });
    }
    await rm(join(dir, "nested"));
    await rename(join(dir, "away"), join(dir, "nested"));
    // flush and close say so too (a server stopping on them exits non-zero), and close still releases the file.
    const failure = { name: "StorageError", message: `could not write ${file}; the store refuses every call until the process restarts and reads the file as last written` };
    await expect(storage.flush()).rejects.toMatchObject(failure);
    await expect(storage.close()).rejects.toMatchObject(failure);
    const restarted = await createJsonFileStorage(file);
    expect(await restarted.clients.get("reporting")).toStrictEqual(client);
    await restarted.close();
  });

  it("one store per file: a second one in this process, or a live process's lock, is refused; a dead process's lock is taken over", async () => {
    const storage = await createJsonFileStorage(file);
    await expect(createJsonFileStorage(file)).rejects.toThrow(new StorageError(`${file} is already open in this process; close that store first`));
    await storage.close();

    // Another process that lives (this test's parent) holds it: refused, nothing read or written.
    const inUse = (why: string) => new StorageError(`${file} is in use by ${why} (lock ${file}.lock): one process per file; if no such process serves it, delete the lock`);
    for (const [content, why] of [
      [`${process.ppid} ${hostname()} 1f0c\n`, `process ${process.ppid}`],
      [`4242 other-host 1f0c\n`, "process 4242 on host other-host"],
      // Empty (a lock being written, by older code) or garbled: never taken for stale.
      ["", "an unreadable lock"],
      ["x y z\n", "an unreadable lock"],
      // The lock of the release before (a bare pid): read as this host's.
      [`${process.ppid}\n`, `process ${process.ppid}`],
    ]) {
      await writeFile(`${file}.lock`, content!);
      await expect(createJsonFileStorage(file)).rejects.toThrow(inUse(why!));
      expect(await readFile(`${file}.lock`, "utf8")).toBe(content);
    }

    // A process on this host that has exited (killed without cleaning up): its lock is taken over.
    const child = spawn(process.execPath, ["-e", ""]);
    await new Promise((resolve) => child.on("exit", resolve));
    await writeFile(`${file}.lock`, `${child.pid} ${hostname()} 1f0c\n`);
    const next = await createJsonFileStorage(file);
    const taken = await readFile(`${file}.lock`, "utf8");
    expect(taken).toMatch(new RegExp(`^${process.pid} ${hostname().replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} [0-9a-f-]{36}\n$`));
    expect((await readdir(join(dir, "nested"))).sort()).toEqual(["store.json.lock"]); // no draft or stale file left
    await next.close();
    await expect(stat(`${file}.lock`)).rejects.toMatchObject({ code: "ENOENT" });
    // A second close is a no-op: it does not delete a lock another process took meanwhile.
    await writeFile(`${file}.lock`, `${process.ppid} ${hostname()} 1f0c\n`);
    await next.close();
    expect(await readFile(`${file}.lock`, "utf8")).toBe(`${process.ppid} ${hostname()} 1f0c\n`);
  });

  it("processes starting at once on one file: exactly one opens it, the others are refused naming it", { timeout: 30_000 }, async () => {
    await mkdir(join(dir, "nested"), { recursive: true });
    const fixture = fileURLToPath(new URL("./fixtures/open-and-hold.ts", import.meta.url));
    // Each holds what it opened until every one has answered (stdin closed after that).
    const children = Array.from({ length: 4 }, () => spawn(process.execPath, ["--import", "tsx", fixture, file], { stdio: ["pipe", "pipe", "inherit"] }));
    const closed = children.map((child) => new Promise((resolve) => child.on("close", resolve)));
    // A refused process may have exited before its stdin is closed.
    for (const child of children) child.stdin.on("error", () => {});
    const outputs = await Promise.all(
      children.map((child) => {
        let out = "";
        return new Promise<string>((resolve) => child.stdout.on("data", (chunk: Buffer) => {
          out += chunk.toString();
          if (out.endsWith("\n")) resolve(out.trim());
        }));
      }),
    );
    for (const child of children) child.stdin.end();
    await Promise.all(closed);
    expect(outputs.filter((o) => o === "opened")).toHaveLength(1);
    for (const o of outputs.filter((x) => x !== "opened")) expect(o).toMatch(new RegExp(`^refused: .* is in use by process \\d+ \\(lock `));
  });

  it("two stores opened at once on one file: exactly one gets it", async () => {
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => createJsonFileStorage(file)));
    // In one process the second one is refused by the in-process check or by the lock, whichever comes first.
    const opened = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    expect(opened).toHaveLength(1);
    for (const r of results) if (r.status === "rejected") expect(r.reason).toBeInstanceOf(StorageError);
    await opened[0]!.close();
  });

  it("temp files an interrupted write left (a full copy of keys and hashes) are deleted at open; a closed store refuses calls", async () => {
    await mkdir(join(dir, "nested"), { recursive: true });
    const leftover = join(dir, "nested", ".store.json.4242.0b1c.tmp");
    await writeFile(leftover, '{"signingKeys":[{"privateJwk":"..."}]}');
    await writeFile(join(dir, "nested", "other.tmp"), "not ours");
    const storage = await createJsonFileStorage(file);
    expect((await readdir(join(dir, "nested"))).sort()).toEqual(["other.tmp", "store.json.lock"]);
    await storage.close();
    await expect(storage.plants.get(1n)).rejects.toThrow(new StorageError(`the JSON file store ${file} is closed`));
  });
});
