/**
 * A client deleted and created again under the same id while its secrets change (token requests
 * recording a secret's use, an administrator adding, removing or regenerating secrets), made for
 * real on MariaDB/MySQL. InnoDB keeps the deleted row, delete-marked, until purge: the INSERT of
 * the new client takes a shared lock on it and then asks for an exclusive one, while the secrets'
 * `SELECT ... FOR UPDATE` (or the regenerating UPDATE, or another statement) already waits for an
 * exclusive lock on the same record. That is a cycle, and InnoDB rolls one of the two back
 * (ER_LOCK_DEADLOCK). Before 2026-11-29 that was the caller's `StorageError` (a 503 for a token
 * request, a failed `client create` or `rotate-secret`); every write of the clients store now runs
 * again whole after it (nothing of the victim was applied). PostgreSQL has no such cycle (its
 * INSERT waits for the deleting transaction, then checks again): the same race there raised no
 * deadlock in 100 rounds, so it is not run there.
 */
import type { ClientRecord, ClientSecretRecord } from "@plantgate/core";
import { Kysely, MysqlDialect } from "kysely";
import mysql from "mysql2";
import { afterEach, expect, it } from "vitest";
import { createSqlStorage, type Database, type SqlStorage } from "../src/index.js";
import { describeIfReachable, MYSQL_URL, mysqlEngine, probeMysql } from "./support.js";

const problem = await probeMysql();
const T0 = 1_767_225_600_000;

const secret = (id: string, at: number): ClientSecretRecord => ({ id, hash: `hash-of-${id}`.padEnd(43, "x"), createdAt: at, expiresAt: null, lastUsedAt: null });
const client = (clientId: string): ClientRecord => ({
  clientId,
  authMethod: "client_secret",
  secrets: [secret("s0", T0)],
  jwks: null,
  jwksUri: null,
  name: `Client ${clientId}`,
  grantTypes: ["client_credentials"],
  scopes: ["Platform_UserAPIs"],
  accessTokenTtl: null,
  refreshTokenTtl: null,
  refreshTokenAbsoluteTtl: null,
  createdAt: T0,
  secretUpdatedAt: T0,
});

describeIfReachable("mysql: clients written while deleted and created again", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", problem, () => {
  const engine = mysqlEngine();
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
  });

  it("secret changes, touches and regenerations racing a delete and re-create of their client: no call fails, each secret is stored at most once", { timeout: 120_000 }, async () => {
    const db = await engine.fresh();
    cleanups.push(() => db.drop());
    // The driver error code of every statement that failed, in order (Kysely's error log).
    const errors: string[] = [];
    const kysely = new Kysely<Database>({
      dialect: new MysqlDialect({ pool: mysql.createPool({ uri: db.url, connectionLimit: 12, supportBigNumbers: true, bigNumberStrings: true }) }),
      log: (event) => {
        if (event.level === "error") errors.push(String((event.error as { code?: unknown }).code));
      },
    });
    const storage: SqlStorage = createSqlStorage(kysely, "mysql");
    cleanups.push(() => storage.close());
    await storage.migrate();
    const clients = storage.clients;

    const ids = Array.from({ length: 6 }, (_, i) => `app-${i}`);
    const added = ["s1", "s2", "s3", "s4", "s5"];
    // 20 rounds, then more (up to 200) until InnoDB has picked a deadlock victim at least once: a
    // loaded machine may space the calls out so that a round passes without one.
    for (let round = 0; round < 20 || (round < 200 && !errors.includes("ER_LOCK_DEADLOCK")); round++) {
      const at = T0 + round * 1000;
      expect(await Promise.all(ids.map((id) => clients.create(client(id))))).toEqual(ids.map(() => true));
      const outcomes = await Promise.allSettled(
        ids.flatMap((id) => [
          // A delete, and a create of the same id sent while it runs.
          clients.delete(id),
          clients.create(client(id)),
          ...added.map((s, i) => clients.addSecret(id, secret(s, at + i))),
          clients.removeSecret(id, "s0", at + 10),
          clients.touchSecret(id, "s0", at + 11),
          clients.replaceSecrets(id, secret("s9", at + 12)),
        ]),
      );
      const failed = outcomes.flatMap((o) => (o.status === "rejected" ? [String((o.reason as Error).message)] : []));
      expect({ round, failed }).toEqual({ round, failed: [] });
      for (const [i, id] of ids.entries()) {
        // Nothing else deletes or creates the client: its delete found it, and it is there again
        // exactly when the create came after the delete (else the create found the old one).
        const [deleted, created] = [outcomes[i * 10], outcomes[i * 10 + 1]].map((o) => (o as PromiseFulfilledResult<boolean>).value);
        expect(deleted).toBe(true);
        const stored = await clients.get(id);
        expect({ id, stored: stored !== null }).toEqual({ id, stored: created });
        const secretIds = stored?.secrets.map((s) => s.id) ?? [];
        expect(new Set(secretIds).size).toBe(secretIds.length);
        for (const s of secretIds) expect(["s0", ...added, "s9"]).toContain(s);
      }
      await Promise.all(ids.map((id) => clients.delete(id)));
    }
    // The race is real: InnoDB picked deadlock victims, and each was run again (without the retry,
    // a round with one fails above).
    expect(errors).toContain("ER_LOCK_DEADLOCK");
  });
});
