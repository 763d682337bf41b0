/**
 * Cloudflare D1: the conformance suite and the D1-specific atomicity (batch instead of SQL
 * transactions) against a real D1 database in Miniflare (workerd), driven from Node.
 * One Miniflare per file; every store starts from empty tables.
 */
import { StorageError, type AccountRecord, type RefreshTokenRecord } from "@plantgate/core";
import { describeStorageConformance } from "@plantgate/storage-testing";
import { afterEach, describe, expect, it } from "vitest";
import { createD1Storage, type D1DatabaseLike, type D1Storage } from "../src/d1.js";
import { d1MigrationsModule } from "../src/d1/compile-migrations.js";
import { createD1Context } from "../src/d1/context.js";
import { migrateD1 } from "../src/d1/migrate.js";
import { LATEST_SCHEMA_VERSION } from "../src/index.js";
import { TABLES } from "../src/schema.js";
import { d1RawDump, emptyD1Tables, miniflareD1, type TestD1 } from "./miniflare-d1.js";

let binding: TestD1;
miniflareD1("plantgate-test", (b) => (binding = b));

/** Drops every plantgate table (Kysely's migration tables included) so the next store is fresh. */
async function emptyDatabase(): Promise<void> {
  const { results } = await binding.prepare("select name from sqlite_master where type = 'table' and name like 'pg\\_%' escape '\\'").all();
  for (const { name } of results) await binding.prepare(`drop table if exists "${String(name)}"`).run();
}

let migrated = false;

/** A store on empty tables: the first one migrates from nothing, later ones find the work done. */
async function conformanceStore(): Promise<D1Storage> {
  if (migrated) await emptyD1Tables(binding);
  else await emptyDatabase();
  const storage = createD1Storage(binding, { audit: true });
  await storage.migrate();
  migrated = true;
  return storage;
}

async function freshStorage(database: D1DatabaseLike = binding): Promise<D1Storage> {
  migrated = false;
  await emptyDatabase();
  const storage = createD1Storage(database);
  await storage.migrate();
  return storage;
}

describeStorageConformance("d1 (miniflare)", {
  create: conformanceStore,
  destroy: (storage) => (storage as D1Storage).close(),
  rawDump: () => d1RawDump(binding),
  // Another Worker isolate on the same database: a second storage over the binding.
  connect: async () => createD1Storage(binding, { audit: true }),
  // A Worker deployed with PLANTGATE_AUDIT=0 on the same database.
  connectWithoutAudit: async () => createD1Storage(binding),
  disconnect: (storage) => (storage as D1Storage).close(),
});

const T0 = 1_767_225_600_123;

const token = (tokenHash: string, overrides: Partial<RefreshTokenRecord> = {}): RefreshTokenRecord => ({
  tokenHash,
  familyId: "family-1",
  clientId: "client-a",
  accountId: "acct-1",
  scope: ["offline_access"],
  createdAt: T0,
  expiresAt: T0 + 1000,
  familyExpiresAt: T0 + 2000,
  consumedAt: null,
  revokedAt: null,
  replay: null,
  graceUses: 0,
  ...overrides,
});

const account = (i: number): AccountRecord => ({
  id: `acct-${String(i).padStart(3, "0")}`,
  username: `user-${i}`,
  displayName: null,
  email: null,
  roles: [],
  enabled: true,
  createdAt: T0,
  passwordHash: `$pbkdf2-sha256$i=1,l=32$${i}$hash`,
});

const count = async (table: string): Promise<number> => Number((await binding.prepare(`select count(*) as n from "${table}"`).all()).results[0]?.n);

// Each test here migrates a D1 database from nothing (every statement a round trip into workerd),
// which on a busy machine alone can take seconds.
describe("d1 specifics", { timeout: 30_000 }, () => {
  it("runs the migrations of src/migrations/steps.ts as compiled for SQLite (generated/migrations.ts is current)", async () => {
    const { readFile } = await import("node:fs/promises");
    const generated = await readFile(new URL("../src/d1/generated/migrations.ts", import.meta.url), "utf8");
    // Regenerate with `pnpm --filter @plantgate/storage-sql generate` after adding a migration.
    expect(generated).toBe(await d1MigrationsModule());
  });

  const open: D1Storage[] = [];
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });
  const track = (s: D1Storage): D1Storage => (open.push(s), s);

  it("D1 really rejects SQL transactions (why batch() is needed)", async () => {
    await expect(binding.prepare("begin").run()).rejects.toThrow();
  });

  it("migrates without transactions, idempotently, also with two migrators at once", async () => {
    migrated = false;
    await emptyDatabase();
    const a = track(createD1Storage(binding));
    const b = track(createD1Storage(binding));
    await Promise.all([a.migrate(), b.migrate()]);
    await a.migrate();
    const { results } = await binding.prepare(`select name from "${TABLES.migrations}"`).all();
    expect(results).toHaveLength(LATEST_SCHEMA_VERSION);
    expect(await a.plants.create({ id: -9223372036854775808n, name: "min\u0000", tag: null })).toBe(true);
    expect(await b.plants.get(-9223372036854775808n)).toEqual({ id: -9223372036854775808n, name: "min\u0000", tag: null });
  });

  it("a version 1 database is upgraded in place without transactions: new tables added, every row kept", async () => {
    migrated = false;
    await emptyDatabase();
    const storage = track(createD1Storage(binding));
    await migrateD1(createD1Context(binding), 1);
    const tableNames = async () =>
      (await binding.prepare("select name from sqlite_master where type = 'table' and name like 'pg\\_%' escape '\\' order by name").all()).results.map((r) => r.name);
    expect(await tableNames()).not.toContain(TABLES.sessions);
    // As the release of that version wrote it: no position yet.
    const a = account(1);
    await binding.batch([
      binding
        .prepare(`insert into "${TABLES.accounts}" (id, username, display_name, email, roles, enabled, created_at, password_hash) values (?, ?, null, null, '[]', 1, ?, ?)`)
        .bind(a.id, a.username, a.createdAt, a.passwordHash),
    ]);
    // The refresh-token row as the version 1 code wrote it (today's code writes the grace columns too).
    await binding.batch([
      binding
        .prepare(
          `insert into ${TABLES.refreshTokens} (token_hash, family_id, client_id, account_id, scope, created_at, expires_at, family_expires_at, consumed_at, revoked_at) values (?, ?, ?, ?, ?, ?, ?, ?, null, null)`,
        )
        .bind("old", "family-1", "client-a", "acct-1", '["offline_access"]', T0, T0 + 1000, T0 + 2000),
    ]);
    // A client as version 1 wrote it: one secret_hash (0007 makes it the secret "initial").
    await binding.batch([
      binding
        .prepare(
          `insert into "${TABLES.clients}" (client_id, secret_hash, name, grant_types, scopes, access_token_ttl, refresh_token_ttl, refresh_token_absolute_ttl, created_at, secret_updated_at) values (?, ?, ?, '["client_credentials"]', '[]', null, null, null, ?, ?)`,
        )
        .bind("old-client", "aGFzaC1vZi10aGUtb2xkLXNlY3JldA", "Old client", T0, T0 + 5),
    ]);
    expect(await storage.plants.create({ id: 9223372036854775807n, name: "max", tag: null })).toBe(true);

    await storage.migrate();
    expect(await storage.clients.get("old-client")).toEqual({
      clientId: "old-client",
      authMethod: "client_secret",
      secrets: [{ id: "initial", hash: "aGFzaC1vZi10aGUtb2xkLXNlY3JldA", createdAt: T0 + 5, expiresAt: null, lastUsedAt: null }],
      jwks: null,
      jwksUri: null,
      name: "Old client",
      grantTypes: ["client_credentials"],
      scopes: [],
      accessTokenTtl: null,
      refreshTokenTtl: null,
      refreshTokenAbsoluteTtl: null,
      createdAt: T0,
      secretUpdatedAt: T0 + 5,
    });
    expect(await tableNames()).toEqual(expect.arrayContaining([TABLES.attempts, TABLES.revokedTokens, TABLES.sessions, TABLES.accounts]));
    const { results } = await binding.prepare(`select name from "${TABLES.migrations}" order by name`).all();
    expect(results.map((r) => r.name)).toEqual(["0001_initial", "0002_attempts_revoked_tokens_sessions", "0003_signing_key_activation", "0004_account_positions", "0005_refresh_token_expiry_indexes", "0006_refresh_token_grace", "0007_client_auth", "0008_audit_events", "0009_client_notify", "0010_refresh_families", "0011_client_access_token_ttl_index", "0012_client_generation", "0013_signing_key_last_signed", "0014_audit_combined_indexes", "0015_refresh_token_replay_index"]);
    expect(await storage.accounts.get("acct-001")).toEqual(account(1));
    expect(await storage.accounts.create(account(2))).toBe(true);
    expect(await storage.accounts.list(0, 10)).toEqual({ items: [account(1), account(2)], total: 2 });
    expect(await storage.refreshTokens.findByHash("old")).toEqual(token("old"));
    expect(await storage.plants.get(9223372036854775807n)).toEqual({ id: 9223372036854775807n, name: "max", tag: null });
    expect(await storage.attempts.increment("k", T0, 1000)).toEqual({ key: "k", count: 1, windowStart: T0 });
    expect(await storage.attempts.increment("k", T0 + 1, 1000)).toEqual({ key: "k", count: 2, windowStart: T0 });
  });

  it("50 concurrent consumes of one token: exactly one wins, losers insert nothing", async () => {
    const storage = track(await freshStorage());
    await storage.refreshTokens.create(token("old"));
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => storage.refreshTokens.consume("old", T0 + 1 + i, token(`new-${i}`))));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = results.indexOf(true);
    expect(await count(TABLES.refreshTokens)).toBe(2);
    expect(await storage.refreshTokens.findByHash(`new-${winner}`)).toEqual(token(`new-${winner}`));
    expect((await storage.refreshTokens.findByHash("old"))?.consumedAt).toBe(T0 + 1 + winner);
  });

  it("a pruning in batches deletes every ended family's row, however many more than one batch end", async () => {
    const storage = track(await freshStorage());
    const drain = async (now: number): Promise<number[]> => {
      const counts: number[] = [];
      for (;;) {
        counts.push(await storage.refreshTokens.deleteExpired(now, 10));
        if (counts.at(-1)! < 10) break;
      }
      // Then the family rows, as prune calls for them.
      while ((await storage.refreshTokens.deleteEndedFamilies!(now, 10)) === 10);
      return counts;
    };
    for (let i = 0; i < 25; i++) await storage.refreshTokens.create(token(`rt-${i}`, { familyId: `family-${i}` }));
    expect(await drain(T0 + 2000)).toEqual([10, 10, 5]);
    expect(await count(TABLES.refreshFamilies)).toBe(0);
    // The tokens gone earlier (unconsumed, past their sliding expiry), the families ending later.
    for (let i = 0; i < 25; i++) await storage.refreshTokens.create(token(`rt-b-${i}`, { familyId: `family-b-${i}` }));
    expect(await drain(T0 + 1000)).toEqual([10, 10, 5]);
    expect(await count(TABLES.refreshFamilies)).toBe(25);
    expect(await drain(T0 + 2000)).toEqual([0]);
    expect(await count(TABLES.refreshFamilies)).toBe(0);
  });

  it("a deleteExpired batch is one D1 statement, whichever rules its tokens meet: a Worker's cron prune counts them against Cloudflare's limit per invocation", async () => {
    // Every statement the store sends goes through prepare (a batch's too): count them.
    let statements = 0;
    const counting: D1DatabaseLike = { prepare: (q) => (statements++, binding.prepare(q)), batch: (list) => binding.batch(list) };
    const storage = track(await freshStorage(counting));
    // Of the family rule (consumed), of both rules, of the sliding rule only (live families), and kept.
    for (let i = 0; i < 2; i++) await storage.refreshTokens.create(token(`family-${i}`, { familyId: `family-${i}`, expiresAt: T0 + 5000, consumedAt: T0 }));
    for (let i = 0; i < 2; i++) await storage.refreshTokens.create(token(`both-${i}`, { familyId: `both-${i}` }));
    for (let i = 0; i < 5; i++) await storage.refreshTokens.create(token(`sliding-${i}`, { familyId: `sliding-${i}`, familyExpiresAt: T0 + 9000 }));
    await storage.refreshTokens.create(token("kept", { familyId: "kept", expiresAt: T0 + 5000, familyExpiresAt: T0 + 9000 }));
    const batches: Array<{ deleted: number; statements: number }> = [];
    for (;;) {
      statements = 0;
      const deleted = await storage.refreshTokens.deleteExpired(T0 + 2000, 3);
      batches.push({ deleted, statements });
      if (deleted < 3) break;
    }
    // The first batch the family rule's alone; the second the family rule's last and the sliding
    // rule's; the third the sliding rule's alone, the fourth finds none (until 2026-11-30 every batch but the first was two statements).
    expect(batches).toEqual([
      { deleted: 3, statements: 1 },
      { deleted: 3, statements: 1 },
      { deleted: 3, statements: 1 },
      { deleted: 0, statements: 1 },
    ]);
    expect(await count(TABLES.refreshTokens)).toBe(1);
    expect(await storage.refreshTokens.findByHash("kept")).not.toBeNull();
  });

  it("removeSecret is one D1 statement however many changes race it on one client: every removal true, every add and other secret kept", async () => {
    // Until 2026-12-02 a removal was a compare-and-set (a read, then an update on the text read),
    // round after round while other changes landed first: 30 removals beside 10 adds and 10 touches
    // cost the last removal some 60 statements (Cloudflare's Free plan fails an invocation past 50),
    // and past 100 lost rounds it threw "the secrets of a client changed 100 times".
    await freshStorage();
    const secret = (i: number, lastUsedAt: number | null = null) => ({ id: `s-${String(i).padStart(2, "0")}`, hash: `hash-${i}`, createdAt: T0 + i, expiresAt: i % 2 === 0 ? null : T0 + 10_000 + i, lastUsedAt });
    const client = { clientId: "busy", authMethod: "client_secret" as const, secrets: Array.from({ length: 40 }, (_, i) => secret(i)), jwks: null, jwksUri: null, name: "Busy", grantTypes: ["client_credentials" as const], scopes: [], accessTokenTtl: null, refreshTokenTtl: null, refreshTokenAbsoluteTtl: null, createdAt: T0, secretUpdatedAt: T0 };
    expect(await track(createD1Storage(binding)).clients.create(client)).toBe(true);
    // Each call on its own storage (a Worker invocation of its own), counting the statements it sends.
    const counted = async <T>(call: (s: D1Storage) => Promise<T>): Promise<{ result: T; statements: number }> => {
      let statements = 0;
      const storage = track(createD1Storage({ prepare: (q) => (statements++, binding.prepare(q)), batch: (list) => binding.batch(list) }));
      const result = await call(storage);
      return { result, statements };
    };
    const removals = Array.from({ length: 30 }, (_, i) => counted((s) => s.clients.removeSecret("busy", `s-${String(i).padStart(2, "0")}`, T0 + 500)));
    const adds = Array.from({ length: 10 }, (_, i) => counted((s) => s.clients.addSecret("busy", secret(40 + i))));
    const touches = Array.from({ length: 10 }, (_, i) => counted((s) => s.clients.touchSecret("busy", `s-${30 + i}`, T0 + 700)));
    const [removed, added] = await Promise.all([Promise.all(removals), Promise.all(adds), Promise.all(touches)]);
    expect(removed).toEqual(Array.from({ length: 30 }, () => ({ result: true, statements: 1 })));
    expect(added).toEqual(Array.from({ length: 10 }, () => ({ result: true, statements: 1 })));
    const after = await track(createD1Storage(binding)).clients.get("busy");
    // The touches are best effort (each one attempt): lastUsedAt is theirs or still null.
    for (const s of after!.secrets.slice(0, 10)) expect([null, T0 + 700]).toContain(s.lastUsedAt);
    expect(after).toEqual({ ...client, secrets: Array.from({ length: 20 }, (_, i) => secret(30 + i, after!.secrets[i]!.lastUsedAt)), secretUpdatedAt: expect.any(Number) });
    // Absent secret or client: false, nothing changed, still one statement.
    expect(await counted((s) => s.clients.removeSecret("busy", "s-00", T0 + 900))).toEqual({ result: false, statements: 1 });
    expect(await counted((s) => s.clients.removeSecret("ghost", "s-30", T0 + 900))).toEqual({ result: false, statements: 1 });
    expect((await track(createD1Storage(binding)).clients.get("busy"))?.secretUpdatedAt).toBe(after!.secretUpdatedAt);
  });

  it("removeSecret keeps every other member of the stored array as it was, in its stored order; the last one leaves []", async () => {
    await freshStorage();
    const storage = track(createD1Storage(binding));
    const secret = (id: string, createdAt: number) => ({ id, hash: `hash-${id}`, createdAt, expiresAt: null, lastUsedAt: null });
    await storage.clients.create({ clientId: "kept", authMethod: "client_secret", secrets: [secret("b", T0 + 2)], jwks: null, jwksUri: null, name: "Kept", grantTypes: [], scopes: [], accessTokenTtl: null, refreshTokenTtl: null, refreshTokenAbsoluteTtl: null, createdAt: T0, secretUpdatedAt: T0 });
    // Appended, so stored out of createdAt order: c, then a.
    for (const [id, at] of [["c", T0 + 3], ["a", T0 + 1], ["\u00e9\"x", T0 + 4]] as const) expect(await storage.clients.addSecret("kept", secret(id, at))).toBe(true);
    const raw = async () => String((await binding.prepare(`select "secrets" from "${TABLES.clients}" where "client_id" = 'kept'`).all()).results[0]?.secrets);
    const members = JSON.parse(await raw()) as unknown[];
    expect(await storage.clients.removeSecret("kept", "c", T0 + 9)).toBe(true);
    expect(await raw()).toBe(JSON.stringify([members[0], members[2], members[3]]));
    expect(await storage.clients.removeSecret("kept", "\ud800", T0 + 9)).toBe(false);
    for (const id of ["a", "b", "\u00e9\"x"]) expect(await storage.clients.removeSecret("kept", id, T0 + 10)).toBe(true);
    expect(await raw()).toBe("[]");
    expect(await storage.clients.get("kept")).toMatchObject({ secrets: [], secretUpdatedAt: T0 + 10 });
  });

  it("with a limit, deleteExpired leaves the ended families' rows to deleteEndedFamilies, which deletes at most `limit` per call", async () => {
    const storage = track(await freshStorage());
    for (let i = 0; i < 25; i++) await storage.refreshTokens.create(token(`rt-${i}`, { familyId: `family-${i}` }));
    const tokens: number[] = [];
    do tokens.push(await storage.refreshTokens.deleteExpired(T0 + 2000, 10));
    while (tokens.at(-1) === 10);
    expect(tokens).toEqual([10, 10, 5]);
    // Until 2026-11-29 the short call deleted every family row in a loop of D1 statements as long
    // as their backlog, past Cloudflare's limit of queries per invocation for a large one.
    expect(await count(TABLES.refreshFamilies)).toBe(25);
    const rows: number[] = [];
    do rows.push(await storage.refreshTokens.deleteEndedFamilies!(T0 + 2000, 10));
    while (rows.at(-1) === 10);
    expect(rows).toEqual([10, 10, 5]);
    expect(await count(TABLES.refreshFamilies)).toBe(0);
    await expect(storage.refreshTokens.deleteEndedFamilies!(T0 + 2000, 0)).rejects.toThrow("deleteEndedFamilies: limit must be a positive integer");
  });

  it("consume of a revoked, consumed or unknown token changes nothing", async () => {
    const storage = track(await freshStorage());
    await storage.refreshTokens.create(token("revoked", { revokedAt: T0 }));
    await storage.refreshTokens.create(token("consumed", { consumedAt: T0 }));
    for (const hash of ["revoked", "consumed", "unknown"]) expect(await storage.refreshTokens.consume(hash, T0 + 5, token(`r-${hash}`))).toBe(false);
    expect(await count(TABLES.refreshTokens)).toBe(2);
    expect((await storage.refreshTokens.findByHash("revoked"))?.consumedAt).toBeNull();
  });

  it("a replacement whose hash exists rolls the whole batch back: the old token stays unconsumed", async () => {
    const storage = track(await freshStorage());
    await storage.refreshTokens.create(token("old"));
    await storage.refreshTokens.create(token("taken", { familyId: "other" }));
    expect(await storage.refreshTokens.consume("old", T0 + 5, token("taken"))).toBe(false);
    expect((await storage.refreshTokens.findByHash("old"))?.consumedAt).toBeNull();
    expect((await storage.refreshTokens.findByHash("taken"))?.familyId).toBe("other");
    expect(await storage.refreshTokens.consume("old", T0 + 6, token("fresh"))).toBe(true);
  });

  it("createMany is all-or-nothing across chunks, even when a writer slips in before the batch", async () => {
    // 40 accounts = several INSERT statements (D1 binds at most 100 parameters per statement).
    const records = Array.from({ length: 40 }, (_, i) => account(i));
    let sneak = true;
    // A binding that lets a concurrent writer take record 37's username just before the batch.
    const racing: D1DatabaseLike = {
      prepare: (q) => binding.prepare(q),
      async batch(statements) {
        if (sneak) {
          sneak = false;
          // As another instance's create does: take the next place and count it.
          await binding.batch([
            binding.prepare(`update "${TABLES.counters}" set value = value + 1 where name = 'accounts'`),
            binding.prepare(
              `insert into "${TABLES.accounts}" (id, username, roles, enabled, created_at, password_hash, position) values ('zzz', 'user-37', '[]', 1, 0, 'h', (select value from "${TABLES.counters}" where name = 'accounts'))`,
            ),
          ]);
        }
        return binding.batch(statements);
      },
    };
    // Migrated through the plain binding: the writer slips in before the createMany batch only.
    await freshStorage();
    const storage = track(createD1Storage(racing));
    expect(await storage.accounts.createMany(records)).toBe(37);
    expect(sneak).toBe(false);
    expect(await count(TABLES.accounts)).toBe(1);
    expect((await storage.accounts.list(0, 100)).items.map((a) => a.id)).toEqual(["zzz"]);
    expect(await storage.accounts.createMany(records.filter((_, i) => i !== 37))).toBeNull();
    const page = await storage.accounts.list(0, 100);
    expect(page.total).toBe(40);
    expect(page.items.map((a) => a.id)).toEqual(["zzz", ...records.filter((_, i) => i !== 37).map((a) => a.id)]);
  });

  it("operationTimeoutMs bounds each storage operation, a batch too (StorageError naming it), never migrate(); a late batch is written whole", async () => {
    await freshStorage();
    // A binding that holds every batch (and, while slow, delays every statement) until released.
    let release = (): void => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let slowMs = 0;
    const delayed = <T>(run: () => Promise<T>): Promise<T> => (slowMs === 0 ? run() : new Promise((r) => setTimeout(r, slowMs)).then(run));
    type Prepared = ReturnType<D1DatabaseLike["prepare"]>;
    const real = new WeakMap<Prepared, Prepared>();
    const wrap = (statement: Prepared): Prepared => {
      const w: Prepared = { bind: (...values) => wrap(statement.bind(...values)), all: () => delayed(() => statement.all()) };
      real.set(w, statement);
      return w;
    };
    const holding: D1DatabaseLike = {
      prepare: (q) => wrap(binding.prepare(q)),
      batch: (statements) => held.then(() => binding.batch(statements.map((s) => real.get(s)!))),
    };
    const storage = track(createD1Storage(holding, { operationTimeoutMs: 200 }));
    await storage.refreshTokens.create(token("a")).catch(() => {});
    const started = Date.now();
    await expect(storage.refreshTokens.create(token("b"))).rejects.toThrow(new StorageError("sqlite storage failed during refreshTokens.create (no answer from D1 within 200 ms)"));
    expect(Date.now() - started).toBeLessThan(5000);
    // D1 answers late: each held batch is written whole (outcome unknown to its caller), and the storage works on.
    release();
    await held;
    for (let i = 0; i < 50 && (await count(TABLES.refreshTokens)) < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect([await count(TABLES.refreshTokens), await count(TABLES.refreshFamilies)]).toEqual([2, 1]);
    expect(await storage.refreshTokens.consume("a", T0 + 1, token("c"))).toBe(true);
    // Every statement 300 ms late: a read fails at its bound; migrations (several calls) are not bounded.
    slowMs = 300;
    await expect(storage.clients.get("x")).rejects.toThrow(new StorageError("sqlite storage failed during clients.get (no answer from D1 within 200 ms)"));
    await expect(storage.migrate()).resolves.toBeUndefined();
    for (const operationTimeoutMs of [Number.NaN, -1, 1.5, 2 ** 31]) {
      expect(() => createD1Storage(binding, { operationTimeoutMs })).toThrow(new RangeError("operationTimeoutMs must be an integer from 0 to 2147483647 (milliseconds)"));
    }
  });
});
