/**
 * Single-statement writes (the ones that commit alone, outside a transaction) raced on one key and
 * on neighbouring keys, through two storages over one database (two pools, as two server
 * processes), on the machine's MariaDB and PostgreSQL. Every error that reaches a caller is
 * collected and must be none; every result must be exact.
 *
 * The first case is the regression test of 2026-11-30. InnoDB deadlocks plain INSERTs of one key
 * that wait on a DELETE of that key: once the DELETE commits, each INSERT holds a shared lock on the
 * delete-marked record and asks for an exclusive one, and the server rolls one back
 * (ER_LOCK_DEADLOCK). A jti used again (several callers at once) while the sweep deletes its expired
 * row, a session hash created while the sweep deletes it, creates, deletes and `replacePrivateJwk`
 * of one kid: each lost a caller to a `StorageError` (503) in nearly every round before those
 * writes were run again by `againOnDeadlock` (assertion jtis 20 rounds of 20, signing keys 20 of
 * 20, sessions 14 of 20). PostgreSQL's INSERT waits for the deleting transaction and checks
 * again: no deadlock there, in these races or the next.
 *
 * The second case found nothing on either engine (64 and 128 calls at once, 40 rounds, two and
 * four storages): it keeps 64 increments of one counter, increments of 16 neighbouring counters
 * beside resets, refunds and both kinds of sweep, and same-key and neighbouring-key inserts
 * (assertion jtis, revocations, plants, sessions) beside their sweeps, exact.
 */
import type { SigningKeyRecord, Storage } from "@plantgate/core";
import { afterEach, expect, it } from "vitest";
import type { SqlStorage } from "../src/index.js";
import { TABLES } from "../src/schema.js";
import { describeIfReachable, MYSQL_URL, mysqlEngine, POSTGRES_URL, postgresEngine, probeMysql, probePostgres, twoStorages, type Engine } from "./support.js";

const T0 = 1_767_225_600_123;
const DAY = 86_400_000;
const WINDOW = 60_000;

const session = (idHash: string, expiresAt: number) => ({ idHash: idHash.padEnd(43, "x"), accountId: "acct-1", csrfHash: "c".repeat(43), createdAt: T0, expiresAt });
const signingKey = (kid: string, privateJwk = '{"d":"1"}'): SigningKeyRecord => ({ kid, alg: "RS256", privateJwk, publicJwk: "{}", createdAt: T0, activatesAt: T0 });
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function races(engine: Engine): void {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch(() => {});
  });

  /** Two storages over one fresh database, and `settle`, which records what reaches a caller. */
  const open = async () => {
    const stores: SqlStorage[] = await twoStorages(engine, cleanups);
    /** How many calls failed, by their message (which names the operation and the driver's code). */
    const failures: Record<string, number> = {};
    /** The call's value, or undefined with its failure counted. */
    const settle = async <T>(op: string, call: Promise<T>): Promise<T | undefined> => {
      try {
        return await call;
      } catch (e) {
        const what = `${op}: ${(e as Error).message}`;
        failures[what] = (failures[what] ?? 0) + 1;
        return undefined;
      }
    };
    return { stores, pick: (i: number): Storage => stores[i % 2]!, failures, settle };
  };

  it("a key written again while a DELETE of it runs: a jti used again beside the sweep, a session hash beside the sweep, creates, deletes and replacePrivateJwk of one kid (20 rounds)", { timeout: 60_000 }, async () => {
    const { stores, pick, failures, settle } = await open();
    const db = stores[0]!.db;
    const wrong: string[] = [];
    /**
     * The key stored with the earliest expiry, then 1000 rows expired after it that sort after it too
     * (on a table this small InnoDB's DELETE may scan the primary key rather than the expiry index;
     * "z-..."): the sweep deletes the key first, then goes on deleting while
     * 16 callers of `write` (over both storages) wait for it to commit. The key's winners expire
     * after the test's last round, so each sweep deletes exactly this round's 1001-1003 rows.
     */
    const againWhileSwept = async (seed: Array<Record<string, unknown>>, table: typeof TABLES.assertionJtis | typeof TABLES.sessions, sweep: () => Promise<number>, write: (s: Storage) => Promise<boolean>) => {
      await db.insertInto(table).values(seed as never).execute();
      const swept = settle(`${table} sweep`, sweep());
      await pause(seed.length % 3);
      const wins = (await Promise.all(Array.from({ length: 16 }, (_, i) => settle(`${table} write`, write(pick(i + 1)))))).filter((w) => w === true).length;
      return { wins, swept: await swept };
    };
    for (let round = 0; round < 20; round++) {
      const now = T0 + round * DAY;
      const later = now + 100 * DAY;
      // Every other sweep a batch (MySQL's DELETE ... LIMIT, PostgreSQL's SKIP LOCKED pick), large
      // enough for the whole backlog.
      const limit = round % 2 ? 5000 : undefined;
      const backlog = (row: (i: number) => Record<string, unknown>) => Array.from({ length: 1000 + (round % 3) }, (_, i) => row(i));

      // Callers before the sweep reached the key find the expired row (false); after it, exactly one wins.
      const key = `jti-again-${round}`;
      const jti = await againWhileSwept(
        [{ jti_key: key, expires_at: now - 1000 }, ...backlog((i) => ({ jti_key: `z-backlog-${round}-${i}`, expires_at: now - 10 }))],
        TABLES.assertionJtis,
        () => stores[0]!.assertionJtis.deleteExpired(now, limit),
        (s) => s.assertionJtis.use(key, later),
      );
      const jtiRow = await db.selectFrom(TABLES.assertionJtis).select("expires_at").where("jti_key", "=", key).executeTakeFirst();
      if (jti.wins > 1 || (jti.wins === 1) !== (jtiRow !== undefined && Number(jtiRow.expires_at) === later)) wrong.push(`round ${round}: ${jti.wins} jti winners, row ${JSON.stringify(jtiRow)}`);

      const hash = session(`session-again-${round}`, 0).idHash;
      const sessionRow = (idHash: string, expiresAt: number) => ({ id_hash: idHash, account_id: "acct-1", csrf_hash: "c".repeat(43), created_at: T0, expires_at: expiresAt });
      const sessions = await againWhileSwept(
        [sessionRow(hash, now - 1000), ...backlog((i) => sessionRow(`z-backlog-${round}-${i}`.padEnd(43, "x"), now - 10))],
        TABLES.sessions,
        () => stores[0]!.sessions.deleteExpired(now, limit),
        (s) => s.sessions.create(session(`session-again-${round}`, later)),
      );
      const stored = await stores[0]!.sessions.get(hash);
      if (sessions.wins > 1 || (sessions.wins === 1) !== (stored?.expiresAt === later)) wrong.push(`round ${round}: ${sessions.wins} session winners, stored ${JSON.stringify(stored)}`);
      const due = 1001 + (round % 3);
      if (jti.swept !== due || sessions.swept !== due) wrong.push(`round ${round}: swept ${jti.swept} jtis and ${sessions.swept} sessions, not ${due}`);

      // One kid, stored: 4 deletes, 4 replacements of its private JWK and 8 creates at once.
      const kid = `kid-${round}`;
      await stores[0]!.signingKeys.create(signingKey(kid));
      const outcomes = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          i % 4 === 0 ? settle("signingKeys.delete", pick(i).signingKeys.delete(kid))
          : i % 4 === 1 ? settle("signingKeys.replacePrivateJwk", pick(i).signingKeys.replacePrivateJwk(kid, '{"d":"1"}', '{"d":"1"}'))
          : settle("signingKeys.create", pick(i).signingKeys.create(signingKey(kid))),
        ),
      );
      // Stored before, so it is there after exactly when one more create than delete succeeded.
      const created = outcomes.filter((o, i) => i % 4 >= 2 && o === true).length;
      const deleted = outcomes.filter((o, i) => i % 4 === 0 && o === true).length;
      const there = (await stores[0]!.signingKeys.list()).some((k) => k.kid === kid);
      if (1 + created - deleted !== (there ? 1 : 0)) wrong.push(`round ${round}: kid created ${created} times, deleted ${deleted} times, there: ${there}`);
    }
    expect({ failures, wrong }).toEqual({ failures: {}, wrong: [] });
  });

  it("64 writes at once on one key and on 16 neighbouring keys, beside resets, refunds and sweeps: none fails, no count is lost, one caller wins each key (10 rounds)", { timeout: 60_000 }, async () => {
    const { stores, pick, failures, settle } = await open();
    const wrong: string[] = [];
    const pad = (k: number) => String(k).padStart(2, "0");
    for (let round = 0; round < 10; round++) {
      const now = T0 + round * DAY;
      // 64 increments of one counter: the counts returned are exactly 1..64.
      const one = `one-${round}`;
      const counts = await Promise.all(Array.from({ length: 64 }, (_, i) => settle("attempts.increment", pick(i).attempts.increment(one, now, WINDOW))));
      const got = counts.map((r) => r?.count ?? 0).sort((a, b) => a - b);
      if (got.join() !== Array.from({ length: 64 }, (_, i) => i + 1).join()) wrong.push(`round ${round}: counts of one key ${got.join()}`);

      // 16 neighbouring groups of counters ("-c" churned, "-l" live, "-x" whose window has expired):
      // the live and expired ones only incremented, so exactly counted; the churned ones reset and
      // refunded; sweeps of the expired windows (batches of 5 and unlimited) throughout.
      for (let k = 0; k < 16; k++) await stores[k % 2]!.attempts.increment(`n-${round}-${pad(k)}-x`, now - 2 * WINDOW, WINDOW);
      const expected = new Map<string, number>();
      await Promise.all(
        Array.from({ length: 128 }, (_, i) => {
          const group = `n-${round}-${pad(Math.floor(i / 8))}`;
          const s = pick(i);
          const counted = (key: string) => {
            expected.set(key, (expected.get(key) ?? 0) + 1);
            return settle("attempts.increment", s.attempts.increment(key, now, WINDOW));
          };
          switch (i % 8) {
            case 0:
            case 1:
            case 2:
              return counted(`${group}-l`);
            case 3:
              return counted(`${group}-x`);
            case 4:
              return settle("attempts.increment", s.attempts.increment(`${group}-c`, now, WINDOW));
            case 5:
              return settle("attempts.refund", s.attempts.refund!(`${group}-c`, now, 1));
            case 6:
              return settle("attempts.reset", s.attempts.reset(`${group}-c`));
            default:
              return settle("attempts.deleteExpired", s.attempts.deleteExpired(now - WINDOW, i === 7 ? undefined : 5));
          }
        }),
      );
      for (const [key, n] of expected) {
        const record = await stores[0]!.attempts.get(key);
        if (record?.count !== n) wrong.push(`round ${round}: ${key} counted ${record?.count}, not ${n}`);
      }
      for (let k = 0; k < 16; k++) {
        const churned = await stores[0]!.attempts.get(`n-${round}-${pad(k)}-c`);
        if (churned !== null && !(churned.count > 0 && churned.count <= 1)) wrong.push(`round ${round}: churned counter ${k} at ${churned.count}`);
      }

      // The same jti used and the same jti revoked 16 times each, 16 neighbours of each, 4 plant ids
      // created 4 times each, 16 sessions, and the jtis' sweeps (expired neighbours), all at once.
      for (let k = 0; k < 16; k++) {
        await stores[k % 2]!.assertionJtis.use(`j-${round}-${pad(k)}-x`, now - 10);
        await stores[k % 2]!.revokedTokens.add(`r-${round}-${pad(k)}-x`, now - 10);
      }
      const results = await Promise.all(
        Array.from({ length: 128 }, (_, i) => {
          const k = pad(Math.floor(i / 8));
          const s = pick(i);
          switch (i % 8) {
            case 0:
              return settle("assertionJtis.use", s.assertionJtis.use(`same-${round}`, now + WINDOW));
            case 1:
              return settle("assertionJtis.use", s.assertionJtis.use(`j-${round}-${k}-n`, now + WINDOW));
            case 2:
              return settle("assertionJtis.deleteExpired", s.assertionJtis.deleteExpired(now, i === 2 ? undefined : 3));
            case 3:
              return settle("revokedTokens.add", s.revokedTokens.add(`rsame-${round}`, now + WINDOW + i));
            case 4:
              return settle("revokedTokens.add", s.revokedTokens.add(`r-${round}-${k}-n`, now + WINDOW));
            case 5:
              return settle("revokedTokens.deleteExpired", s.revokedTokens.deleteExpired(now, i === 5 ? undefined : 3));
            case 6:
              return settle("plants.create", s.plants.create({ id: BigInt(round * 100 + (Math.floor(i / 8) % 4)), name: `plant ${i}`, tag: null }));
            default:
              return settle("sessions.create", s.sessions.create(session(`s-${round}-${k}`, now + DAY)));
          }
        }),
      );
      const sameWins = results.filter((r, i) => i % 8 === 0 && r === true).length;
      if (sameWins !== 1) wrong.push(`round ${round}: ${sameWins} callers won the same jti`);
      const neighbourWins = results.filter((r, i) => i % 8 === 1 && r === true).length;
      if (neighbourWins !== 16) wrong.push(`round ${round}: ${neighbourWins} of 16 neighbouring jtis won`);
      for (let p = 0; p < 4; p++) {
        const plantWins = results.filter((r, i) => i % 8 === 6 && Math.floor(i / 8) % 4 === p && r === true).length;
        if (plantWins !== 1) wrong.push(`round ${round}: ${plantWins} callers created plant ${p}`);
      }
      const sessionsMade = results.filter((r, i) => i % 8 === 7 && r === true).length;
      if (sessionsMade !== 16) wrong.push(`round ${round}: ${sessionsMade} of 16 sessions created`);
      for (const jti of [`rsame-${round}`, ...Array.from({ length: 16 }, (_, k) => `r-${round}-${pad(k)}-n`)]) {
        if (!(await stores[1]!.revokedTokens.has(jti))) wrong.push(`round ${round}: ${jti} not revoked`);
      }
    }
    expect({ failures, wrong }).toEqual({ failures: {}, wrong: [] });
  });
}

const pgProblem = await probePostgres();
describeIfReachable("postgres: single-statement writes raced on one key and its neighbours", POSTGRES_URL, "PLANTGATE_TEST_POSTGRES_URL", pgProblem, () => races(postgresEngine()));
const mysqlProblem = await probeMysql();
describeIfReachable("mysql: single-statement writes raced on one key and its neighbours", MYSQL_URL, "PLANTGATE_TEST_MYSQL_URL", mysqlProblem, () => races(mysqlEngine()));
