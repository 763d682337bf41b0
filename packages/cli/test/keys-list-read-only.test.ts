/**
 * Listing the signing keys reads and never writes (core's `admin.listSigningKeys()`, which the
 * console's `GET /console/api/signing-keys` and `plantgate keys list` use), on SQLite and
 * PostgreSQL, in the three cases where loading the keyring writes: a store without keys (the first
 * key is made), a key stored in clear while a key encryption key is configured (it is sealed), and
 * a configured signing key that is not stored yet (it is stored). Each listing runs through a
 * connection that cannot write (SQLite with `PRAGMA query_only`; a PostgreSQL role granted SELECT
 * only), and every table of the store is compared before and after. And after a rotation of the
 * key encryption key: the listing names the KEK each key is sealed under and flags those under the
 * older one (a signer's marker an earlier version sealed included), `keys reencrypt` moves them,
 * and the listing then flags none; `keys list` and the console's key API answer the same view.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { createPlantgate, generateKeyRecord, type SigningKeyRecord } from "@plantgate/core";
import type { SqlStorage } from "@plantgate/storage-sql";
import { openStorageFromEnv } from "@plantgate/storage-sql/env";
import { kekId, sealUnder } from "@plantgate/http-suite-tests/kek-rows";
import { runCli } from "../src/cli.js";
import { POSTGRES_URL, postgresProblem } from "./postgres.js";

const IN_CI = process.env.CI === "true";
const KEK = randomBytes(32).toString("base64url");
const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

interface Backend {
  /** A connection that migrated the store and writes what each case needs. */
  writer: SqlStorage;
  /** A connection that cannot write. */
  reader: SqlStorage;
  /** The CLI's environment for the store (on PostgreSQL, as the read-only role). */
  env: Record<string, string>;
  /** The CLI's environment for the store as a user that may write (`keys reencrypt`). */
  writerEnv: Record<string, string>;
  /** The tables of the store. */
  tables(): Promise<string[]>;
  /** Empties every table (a fresh store for the next case; see emptyTables). */
  clear(): Promise<void>;
  close(): Promise<void>;
}

/** Empties every table but the migrations' (the counters, which migrating seeds, are reset to 0). */
async function emptyTables(writer: SqlStorage, tables: string[]): Promise<void> {
  for (const t of tables) {
    if (t.includes("migration")) continue;
    if (t === "pg_counters") await sql`update ${sql.table(t)} set value = 0`.execute(writer.db);
    else await sql`delete from ${sql.table(t)}`.execute(writer.db);
  }
}

async function sqliteBackend(): Promise<Backend> {
  const dir = mkdtempSync(join(tmpdir(), "plantgate-keys-ro-"));
  const env = { PLANTGATE_DB: join(dir, "plantgate.db") };
  const writer = await openStorageFromEnv(env, { cwd: dir, migrate: true, clientCache: false });
  const reader = await openStorageFromEnv(env, { cwd: dir, migrate: false, clientCache: false });
  // Any statement that would change the database fails (SQLITE_READONLY).
  await sql`pragma query_only = 1`.execute(reader.db);
  const tables = async () =>
    (await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name`.execute(writer.db)).rows.map((r) => r.name);
  return {
    writer,
    reader,
    env,
    writerEnv: env,
    tables,
    async clear() {
      await emptyTables(writer, await tables());
    },
    async close() {
      await reader.close();
      await writer.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgresBackend(): Promise<Backend> {
  const suffix = randomBytes(6).toString("hex");
  const schema = `plantgate_keys_ro_${suffix}`;
  const role = `plantgate_reader_${suffix}`;
  const admin = await openStorageFromEnv({ PLANTGATE_DATABASE_URL: POSTGRES_URL }, { cwd: "/", migrate: false, clientCache: false });
  await sql`create schema ${sql.id(schema)}`.execute(admin.db);
  const inSchema = (url: string) => `${url}?options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  const writer = await openStorageFromEnv({ PLANTGATE_DATABASE_URL: inSchema(POSTGRES_URL) }, { cwd: "/", migrate: true, clientCache: false });
  // A role that may read every table of the store and change none (an auditor's, a replica's).
  await sql`create role ${sql.id(role)} login`.execute(admin.db);
  await sql`grant usage on schema ${sql.id(schema)} to ${sql.id(role)}`.execute(admin.db);
  await sql`grant select on all tables in schema ${sql.id(schema)} to ${sql.id(role)}`.execute(admin.db);
  const readerUrl = new URL(POSTGRES_URL);
  readerUrl.username = role;
  readerUrl.password = "";
  const env = { PLANTGATE_DATABASE_URL: inSchema(readerUrl.href) };
  const reader = await openStorageFromEnv(env, { cwd: "/", migrate: false, clientCache: false });
  const tables = async () =>
    (await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = ${schema} order by table_name`.execute(writer.db)).rows.map((r) => r.name);
  return {
    writer,
    reader,
    env,
    writerEnv: { PLANTGATE_DATABASE_URL: inSchema(POSTGRES_URL) },
    tables,
    async clear() {
      await emptyTables(writer, await tables());
    },
    async close() {
      await reader.close();
      await writer.close();
      await sql`drop schema ${sql.id(schema)} cascade`.execute(admin.db);
      await sql`drop role ${sql.id(role)}`.execute(admin.db);
      await admin.close();
    },
  };
}

const pgProblem = await postgresProblem();

/** A stored key as `keys list` prints it, fields in its order. */
const view = (r: SigningKeyRecord, status: string, atRest: string, kek: string | null, kekStatus: string | null) => ({
  kid: r.kid,
  alg: r.alg,
  createdAt: new Date(r.createdAt).toISOString(),
  activatesAt: new Date(r.activatesAt).toISOString(),
  status,
  stored: true,
  atRest,
  kek,
  kekStatus,
});

const BACKENDS: { name: string; open: () => Promise<Backend>; skip: string | null }[] = [
  { name: "SQLite", open: sqliteBackend, skip: null },
  { name: "PostgreSQL", open: postgresBackend, skip: pgProblem === null || IN_CI ? null : `unreachable at ${POSTGRES_URL}: ${pgProblem}` },
];

for (const backend of BACKENDS) {
  const suite = backend.skip === null ? describe : describe.skip;
  suite(`listing the signing keys writes nothing: ${backend.name}${backend.skip === null ? "" : ` (skipped: ${backend.skip})`}`, () => {
    let b: Backend;
    beforeAll(async () => {
      b = await backend.open();
    }, 30_000);
    afterAll(async () => {
      await b?.close();
    });
    beforeEach(async () => {
      await b.clear();
    });

    /** Every row of every table, as text, in a fixed order. */
    async function dump(): Promise<Record<string, string[]>> {
      const out: Record<string, string[]> = {};
      for (const t of await b.tables()) {
        const rows = (await sql<Record<string, unknown>>`select * from ${sql.table(t)}`.execute(b.writer.db)).rows;
        out[t] = rows.map((r) => JSON.stringify(r, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v))).sort();
      }
      return out;
    }

    /** `admin.listSigningKeys()` of an app over the read-only connection, with `options`. */
    async function adminList(options: Parameters<typeof createPlantgate>[0] = {}) {
      const app = createPlantgate({ storage: b.reader, passwordHashIterations: 1000, logger: { error() {}, warn() {} }, ...options });
      return app.admin.listSigningKeys();
    }

    /** `plantgate keys list` over the store (on PostgreSQL as the read-only role). */
    async function cliList(env: Record<string, string> = {}) {
      let stdout = "";
      let stderr = "";
      const code = await runCli(["keys", "list"], {
        env: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", ...b.env, ...env },
        cwd: "/",
        readStdin: async () => "",
        stdout: (t) => void (stdout += t),
        stderr: (t) => void (stderr += t),
      });
      return { code, stdout, stderr, json: code === 0 ? (JSON.parse(stdout) as unknown) : undefined };
    }

    it("the reader cannot write (so a listing that tried would fail)", async () => {
      await expect(b.reader.signingKeys.create(await generateKeyRecord("ES256", Date.now()))).rejects.toThrow();
      expect((await dump()).pg_signing_keys).toEqual([]);
    });

    it("a store without keys lists as [], and no key is made", async () => {
      const before = await dump();
      expect(await adminList()).toEqual([]);
      expect(await cliList()).toEqual({ code: 0, stdout: "[]\n", stderr: "", json: [] });
      expect(await dump()).toEqual(before);
    });

    it("a key stored in clear under a configured key encryption key is listed as clear, and stays so", async () => {
      const record = await generateKeyRecord("ES256", Date.now() - 1000);
      await b.writer.signingKeys.create(record);
      const before = await dump();
      expect(await adminList({ keyEncryptionKeys: [KEK] })).toEqual([
        { kid: record.kid, alg: "ES256", createdAt: record.createdAt, activatesAt: record.activatesAt, retiredAt: null, status: "active", stored: true, atRest: "clear", kek: null, kekStatus: null },
      ]);
      expect(await cliList({ PLANTGATE_KEY_ENCRYPTION_KEY: KEK })).toEqual({
        code: 0,
        stdout: expect.any(String),
        stderr: "",
        json: [{ kid: record.kid, alg: "ES256", createdAt: new Date(record.createdAt).toISOString(), activatesAt: new Date(record.activatesAt).toISOString(), status: "active", stored: true, atRest: "clear", kek: null, kekStatus: null }],
      });
      expect(await dump()).toEqual(before);
      expect((await b.writer.signingKeys.list())[0]!.privateJwk).toBe(record.privateJwk);
    });

    it("a configured signing key that is not stored is listed as the active key with stored: false, and is not stored", async () => {
      const stored = await generateKeyRecord("ES256", Date.now() - 1000);
      await b.writer.signingKeys.create(stored);
      const configured = JSON.parse((await generateKeyRecord("ES256", 0)).privateJwk) as { kid: string };
      const before = await dump();
      const listed = await adminList({ signingKey: configured as never });
      expect(listed).toEqual([
        { kid: configured.kid, alg: "ES256", createdAt: expect.any(Number), activatesAt: expect.any(Number), retiredAt: null, status: "active", stored: false, atRest: null, kek: null, kekStatus: null },
        { kid: stored.kid, alg: "ES256", createdAt: stored.createdAt, activatesAt: stored.activatesAt, retiredAt: listed[0]!.activatesAt, status: "retired", stored: true, atRest: "clear", kek: null, kekStatus: null },
      ]);
      expect(listed[0]!.createdAt).toBe(listed[0]!.activatesAt);
      const cli = await cliList({ PLANTGATE_SIGNING_KEY: JSON.stringify(configured) });
      expect(cli).toEqual({
        code: 0,
        stdout: expect.any(String),
        // No warning: the listing's atRest says which keys are in clear.
        stderr: "",
        json: [
          { kid: configured.kid, alg: "ES256", createdAt: iso, activatesAt: iso, status: "active", stored: false, atRest: null, kek: null, kekStatus: null },
          { kid: stored.kid, alg: "ES256", createdAt: new Date(stored.createdAt).toISOString(), activatesAt: new Date(stored.activatesAt).toISOString(), status: "retired", stored: true, atRest: "clear", kek: null, kekStatus: null },
        ],
      });
      expect(await dump()).toEqual(before);
    });

    it("after a KEK rotation the listing names each key's KEK and flags those under the older one (a signer's marker an earlier version sealed too); keys reencrypt moves them and then none is flagged; keys list and the console answer the same view", async () => {
      const OLD = randomBytes(32).toString("base64url");
      const NEW = randomBytes(32).toString("base64url");
      const quiet = { error() {}, warn() {} };
      // Before the KEK rotation: a server with OLD made the first key, sealed under OLD.
      await createPlantgate({ storage: b.writer, keyEncryptionKeys: [OLD], logger: quiet }).jwks();
      const [a] = await b.writer.signingKeys.list();
      expect(a!.privateJwk.startsWith(`enc:A256GCM:${kekId(OLD)}:`)).toBe(true);
      // A signer's key from before it: only its marker is stored, and a version before 2026-11-29
      // sealed that marker under the KEK (it holds no private key, but loading it needs OLD).
      const signerKey = await generateKeyRecord("ES256", a!.createdAt - 60_000);
      await b.writer.signingKeys.create({ ...signerKey, privateJwk: sealUnder(OLD, signerKey.kid, "external") });
      // The KEK rotation: NEW first, OLD kept; a next key sealed under NEW (written as a process
      // with NEW first seals it: a rotation seals under the signing key's KEK, OLD here, since
      // 2026-12-01, so that servers still on OLD alone open it).
      const next = await generateKeyRecord("ES256", Math.max(Date.now(), a!.createdAt + 1));
      const bKid = next.kid;
      await b.writer.signingKeys.create({ ...next, activatesAt: next.createdAt + 360_000, privateJwk: sealUnder(NEW, bKid, next.privateJwk) });
      const rows = await b.writer.signingKeys.list();
      expect(rows.map((r) => r.kid)).toEqual([signerKey.kid, a!.kid, bKid]);
      const [m, , bRecord] = rows as [SigningKeyRecord, SigningKeyRecord, SigningKeyRecord];

      const flagged = [
        view(bRecord, "next", "encrypted", kekId(NEW), "current"),
        view(a!, "active", "encrypted", kekId(OLD), "older"),
        view(m, "retired", "external", kekId(OLD), "older"),
      ];
      const before = await dump();
      expect(await adminList({ keyEncryptionKeys: [NEW, OLD] })).toEqual([
        { kid: bKid, alg: "ES256", createdAt: bRecord.createdAt, activatesAt: bRecord.activatesAt, retiredAt: null, status: "next", stored: true, atRest: "encrypted", kek: kekId(NEW), kekStatus: "current" },
        { kid: a!.kid, alg: "ES256", createdAt: a!.createdAt, activatesAt: a!.activatesAt, retiredAt: null, status: "active", stored: true, atRest: "encrypted", kek: kekId(OLD), kekStatus: "older" },
        { kid: m.kid, alg: "ES256", createdAt: m.createdAt, activatesAt: m.activatesAt, retiredAt: a!.activatesAt, status: "retired", stored: true, atRest: "external", kek: kekId(OLD), kekStatus: "older" },
      ]);
      expect(await cliList({ PLANTGATE_KEY_ENCRYPTION_KEY: `${NEW},${OLD}` })).toEqual({ code: 0, stdout: JSON.stringify(flagged, null, 2) + "\n", stderr: "", json: flagged });
      // Without any KEK the listing still works (it opens nothing), and has none of them.
      const noKek = flagged.map((k) => ({ ...k, kekStatus: "missing" }));
      expect(await cliList()).toEqual({ code: 0, stdout: JSON.stringify(noKek, null, 2) + "\n", stderr: "", json: noKek });
      expect(await dump()).toEqual(before);

      // The console's key API, over the same read-only key store (sign-in writes its session elsewhere).
      const consoleApp = createPlantgate({
        storage: { ...b.writer, signingKeys: b.reader.signingKeys },
        keyEncryptionKeys: [NEW, OLD],
        console: { enabled: true },
        passwordHashIterations: 1000,
        logger: quiet,
      });
      await consoleApp.admin.createAccount({ username: "root", password: "root-password-1", roles: ["admin"] });
      const base = "http://localhost";
      const signedIn = await consoleApp.fetch(
        new Request(`${base}/console/api/session`, {
          method: "POST",
          headers: { origin: base, "sec-fetch-site": "same-origin", "content-type": "application/json" },
          body: JSON.stringify({ username: "root", password: "root-password-1" }),
        }),
      );
      expect(signedIn.status).toBe(200);
      const cookie = signedIn.headers.get("set-cookie")!.split(";")[0]!;
      const consoleKeys = async () => {
        const res = await consoleApp.fetch(new Request(`${base}/console/api/signing-keys`, { headers: { cookie, "sec-fetch-site": "same-origin" } }));
        return { status: res.status, text: await res.text() };
      };
      const withSigning = (keys: ReturnType<typeof view>[]) => keys.map((k) => ({ ...k, signing: k.status === "active" }));
      expect(await consoleKeys()).toEqual({ status: 200, text: JSON.stringify({ keys: withSigning(flagged) }) });
      expect((await dump()).pg_signing_keys).toEqual(before.pg_signing_keys);

      // keys reencrypt (as a user that may write) moves the key and unseals the marker.
      let stdout = "";
      let stderr = "";
      const code = await runCli(["keys", "reencrypt"], {
        env: { PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000", ...b.writerEnv, PLANTGATE_KEY_ENCRYPTION_KEY: `${NEW},${OLD}` },
        cwd: "/",
        readStdin: async () => "",
        stdout: (t) => void (stdout += t),
        stderr: (t) => void (stderr += t),
      });
      expect({ code, stdout, stderr }).toEqual({
        code: 0,
        stdout: JSON.stringify({ reencrypted: [m.kid, a!.kid], unchanged: [bKid], left: [], complete: true }, null, 2) + "\n",
        stderr: "every stored private key is now encrypted with the first key of PLANTGATE_KEY_ENCRYPTION_KEY; remove the others once keys list, run again a minute from now, shows no key with \"kekStatus\": \"older\" (a rotation under way elsewhere may store its key meanwhile)\n",
      });
      const after = await b.writer.signingKeys.list();
      expect(after.map((r) => [r.kid, r.privateJwk === "external" ? "external" : r.privateJwk.split(":").slice(0, 3).join(":")])).toEqual([
        [m.kid, "external"],
        [a!.kid, `enc:A256GCM:${kekId(NEW)}`],
        [bKid, `enc:A256GCM:${kekId(NEW)}`],
      ]);

      // None is flagged: with NEW and OLD, or NEW alone (OLD can go).
      const moved = [view(bRecord, "next", "encrypted", kekId(NEW), "current"), view(a!, "active", "encrypted", kekId(NEW), "current"), view(m, "retired", "external", null, null)];
      for (const kek of [`${NEW},${OLD}`, NEW]) {
        expect(await cliList({ PLANTGATE_KEY_ENCRYPTION_KEY: kek })).toEqual({ code: 0, stdout: JSON.stringify(moved, null, 2) + "\n", stderr: "", json: moved });
      }
      expect(await consoleKeys()).toEqual({ status: 200, text: JSON.stringify({ keys: withSigning(moved) }) });
      // And the servers load the keys with NEW alone.
      const { keys: published } = (await createPlantgate({ storage: b.reader, keyEncryptionKeys: [NEW], logger: quiet }).jwks()) as { keys: { kid: string }[] };
      expect(published.map((k) => k.kid).sort()).toEqual([m.kid, a!.kid, bKid].sort());
    });
  });
}
