import type { AttemptStore, RefreshTokenStore, RevokedTokenStore, SessionStore } from "@plantgate/core";
import type { Selectable } from "kysely";
import { isUniqueViolation } from "../errors.js";
import { attemptRecord, refreshRecord, refreshRow, sessionRecord, sessionRow } from "../rows.js";
import { TABLES, type AttemptTable, type RefreshTokenTable, type SessionTable } from "../schema.js";
import { deleteBatch, id, insertRow, type D1Context } from "./context.js";

// The D1 statements of the Kysely stores in ../stores/{refresh-tokens,revoked-tokens,attempts,sessions}.ts.

/** `pg_refresh_tokens` on D1 (see ../stores/refresh-tokens.ts). */
export function d1RefreshTokenStore(ctx: D1Context): RefreshTokenStore {
  const { run, all, exec, batch, storableKey } = ctx;
  const table = id(TABLES.refreshTokens);
  const families = id(TABLES.refreshFamilies);
  const familyColumns = `"family_id", "account_id", "family_expires_at"`;
  /** The family rows past their absolute expiry that no token of that expiry points to (binds `now` twice). */
  const endedFamilies = `${families}."family_expires_at" <= ? and not exists (select 1 from ${table} where ${table}."family_id" = ${families}."family_id" and ${table}."family_expires_at" <= ?)`;
  const familyOf = (row: ReturnType<typeof refreshRow>) => [row.family_id, row.account_id, row.family_expires_at];
  const byHash = async (tokenHash: string) => {
    const [row] = await all<Selectable<RefreshTokenTable>>(`select * from ${table} where "token_hash" = ?`, tokenHash);
    return row ? refreshRecord(row) : null;
  };
  const revokeWhere = (column: string, value: string, now: number) =>
    exec(`update ${table} set "revoked_at" = ? where ${id(column)} = ? and "revoked_at" is null`, now, value);

  return {
    create: (record) =>
      run("refreshTokens.create", async () => {
        // Same hash again replaces the record, as the reference implementation does.
        const row = refreshRow(ctx, record);
        const insert = insertRow(TABLES.refreshTokens, row);
        const updates = Object.keys(row)
          .filter((c) => c !== "token_hash")
          .map((c) => `${id(c)} = excluded.${id(c)}`);
        // With its family row, in one batch (one transaction): a token is never stored without one.
        await batch([
          { sql: `insert into ${families} (${familyColumns}) values (?, ?, ?) on conflict do nothing`, params: familyOf(row) },
          { sql: `${insert.sql} on conflict ("token_hash") do update set ${updates.join(", ")}`, params: insert.params },
        ]);
      }),
    findByHash: (tokenHash) => run("refreshTokens.findByHash", async () => (storableKey(tokenHash) ? byHash(tokenHash) : null)),
    consume: (tokenHash, now, replacement, replay = null) =>
      run("refreshTokens.consume", async () => {
        const row = refreshRow(ctx, replacement);
        if (replay !== null) ctx.text(replay, "replay");
        if (!storableKey(tokenHash)) return false;
        const columns = Object.keys(row);
        try {
          // One batch = one implicit transaction, run serially by D1. The conditional UPDATE is
          // the arbiter; the INSERT copies the replacement in only if that UPDATE changed exactly
          // one row (changes() still reports it: the INSERT has not completed yet). A duplicate
          // replacement hash fails the batch, rolling the UPDATE back too. The family row follows
          // the same way (changes() then reports the INSERT before it).
          const [, inserted] = await batch([
            {
              sql: `update ${table} set "consumed_at" = ?, "replay" = ? where "token_hash" = ? and "consumed_at" is null and "revoked_at" is null`,
              params: [now, replay, tokenHash],
            },
            {
              sql: `insert into ${table} (${columns.map(id).join(", ")}) select ${columns.map((c) => `? as ${id(c)}`).join(", ")} where changes() = 1`,
              params: Object.values(row),
            },
            {
              sql: `insert into ${families} (${familyColumns}) select ?, ?, ? where changes() = 1 on conflict do nothing`,
              params: familyOf(row),
            },
          ]);
          return inserted === 1;
        } catch (e) {
          // The replacement's hash already exists: the batch rolled back, nothing changed.
          if (isUniqueViolation(e)) return false;
          throw e;
        }
      }),
    graceUse: (tokenHash, consumedAfter, maxUses) =>
      run("refreshTokens.graceUse", async () => {
        if (!storableKey(tokenHash)) return null;
        // One statement: the conditional UPDATE counts and RETURNING hands back that very row.
        const [row] = await all<Selectable<RefreshTokenTable>>(
          `update ${table} set "grace_uses" = grace_uses + 1 where "token_hash" = ? and "consumed_at" > ? and "revoked_at" is null and "replay" is not null and "grace_uses" < ? returning *`,
          tokenHash,
          consumedAfter,
          maxUses,
        );
        return row ? refreshRecord(row) : null;
      }),
    // True when this call revoked a token (D1 runs one statement at a time: of concurrent calls on
    // a live family, the first marks every token and the others find none left).
    revokeFamily: (familyId, now) => run("refreshTokens.revokeFamily", async () => storableKey(familyId) && (await revokeWhere("family_id", familyId, now)) > 0),
    revokeByAccount: (accountId, now) =>
      run("refreshTokens.revokeByAccount", async () => {
        // The account's families, then their tokens by the family index.
        if (storableKey(accountId)) {
          await exec(
            `update ${table} set "revoked_at" = ? where "family_id" in (select "family_id" from ${families} where "account_id" = ?) and "account_id" = ? and "revoked_at" is null`,
            now,
            accountId,
            accountId,
          );
        }
      }),
    deleteExpired: async (now, limit) => {
      // Two rules: the whole family past its absolute expiry (its families by pg_refresh_families'
      // expiry index); an unconsumed token past its sliding expiry. Without a limit, one statement
      // each, then the family rows no token points to any more (not counted); with one, those are
      // deleteEndedFamilies' (prune calls it in batches of its own), and a call is one D1 statement
      // whose two arms are the rules' index ranges: a Worker's prune counts its D1 calls against
      // Cloudflare's limit per invocation. Until 2026-11-29 this call deleted every ended family's
      // row in a loop of statements as long as that backlog; until 2026-11-30 a call whose family
      // rule found fewer than `limit` was two statements, the sliding rule's following.
      // Each statement is an operation of its own under the deadline, as prune's batches of the
      // other stores are (until 2026-11-29 a call's statements shared one deadline, so a backlog of
      // a few batches on a D1 answering each in time failed every cron run before the later stores).
      const step = <T>(fn: () => Promise<T>): Promise<T> => run("refreshTokens.deleteExpired", fn);
      const familyRule = `"family_expires_at" <= ? and "family_id" in (select "family_id" from ${families} where "family_expires_at" <= ?)`;
      const slidingRule = `("consumed_at" is null and "expires_at" <= ?)`;
      if (limit === undefined) {
        const familyGone = await step(() => deleteBatch(ctx, TABLES.refreshTokens, "token_hash", familyRule, [now, now]));
        await step(() => exec(`delete from ${families} where ${endedFamilies}`, now, now));
        return familyGone + (await step(() => deleteBatch(ctx, TABLES.refreshTokens, "token_hash", slidingRule, [now])));
      }
      // The family rule's tokens first, then, in what the limit leaves, the sliding rule's that the
      // family rule does not take: a token may meet both, and picked twice it would make the batch
      // delete fewer than `limit` while tokens are left (prune would take it for the last). UNION
      // ALL runs the second arm only while the limit is not reached; the exclusion probes
      // pg_refresh_families' primary key only for a token whose family has ended. The statement the
      // Kysely store compiles to on SQLite (../stores/refresh-tokens.ts).
      return step(() => {
        if (!Number.isSafeInteger(limit) || limit < 1) throw new TypeError("deleteExpired: limit must be a positive integer");
        return exec(
          `delete from ${table} where "token_hash" in (select "token_hash" from ${table} where (${familyRule}) union all ` +
            `select "t"."token_hash" from ${table} as "t" where "t"."consumed_at" is null and "t"."expires_at" <= ? and not ("t"."family_expires_at" <= ? and ` +
            `exists (select 1 as "one" from ${families} where ${families}."family_id" = "t"."family_id" and ${families}."family_expires_at" <= ?)) limit ?)`,
          now,
          now,
          now,
          now,
          now,
          limit,
        );
      });
    },
    deleteEndedFamilies: (now, limit) => {
      // Refused before D1 is touched: a caller's mistake, not a storage failure.
      if (!Number.isSafeInteger(limit) || limit < 1) return Promise.reject(new TypeError("deleteEndedFamilies: limit must be a positive integer"));
      return run("refreshTokens.deleteEndedFamilies", () => exec(`delete from ${families} where (${familyColumns}) in (select ${familyColumns} from ${families} where ${endedFamilies} limit ?)`, now, now, limit));
    },
    dropReplays: (consumedBefore, limit) => {
      if (!Number.isSafeInteger(limit) || limit < 1) return Promise.reject(new TypeError("dropReplays: limit must be a positive integer"));
      // One statement, the oldest first down the index of only the rows holding a replay (migration
      // 15): what the Kysely store compiles to on SQLite.
      const stale = `"replay" is not null and "consumed_at" <= ?`;
      return run("refreshTokens.dropReplays", () =>
        exec(`update ${table} set "replay" = null where "token_hash" in (select "token_hash" from ${table} where ${stale} order by "consumed_at" limit ?) and ${stale}`, consumedBefore, limit, consumedBefore),
      );
    },
  };
}

/** `pg_revoked_tokens` on D1 (see ../stores/revoked-tokens.ts). */
export function d1RevokedTokenStore(ctx: D1Context): RevokedTokenStore {
  const { run, all, exec, storableKey, text } = ctx;
  const table = id(TABLES.revokedTokens);
  return {
    add: (jti, expiresAt) =>
      run("revokedTokens.add", async () => {
        // Idempotent and keeps the first expiry; true when this call recorded it (one row changed).
        return (await exec(`insert into ${table} ("jti", "expires_at") values (?, ?) on conflict ("jti") do nothing`, text(jti, "jti"), expiresAt)) > 0;
      }),
    has: (jti) => run("revokedTokens.has", async () => storableKey(jti) && (await all(`select "jti" from ${table} where "jti" = ?`, jti)).length > 0),
    deleteExpired: (now, limit) => run("revokedTokens.deleteExpired", () => deleteBatch(ctx, TABLES.revokedTokens, "jti", `"expires_at" <= ?`, [now], limit)),
  };
}

/** `pg_attempts` on D1 (see ../stores/attempts.ts). */
export function d1AttemptStore(ctx: D1Context): AttemptStore {
  const { run, all, exec, storableKey, text } = ctx;
  const table = id(TABLES.attempts);
  const windowStart = `${table}."window_start"`;
  return {
    increment: (key, now, windowMs) =>
      run("attempts.increment", async () => {
        const attemptKey = text(key, "key");
        // A window that started at or before this instant is over: the failure opens a new one.
        // One upsert with RETURNING; D1's single writer makes each call see the previous count.
        const expiredBefore = now - windowMs;
        const [row] = await all<Selectable<AttemptTable>>(
          `insert into ${table} ("attempt_key", "count", "window_start") values (?, 1, ?) on conflict ("attempt_key") do update set ` +
            `"count" = case when ${windowStart} <= ? then 1 else ${table}."count" + 1 end, ` +
            `"window_start" = case when ${windowStart} <= ? then ? else ${windowStart} end returning *`,
          attemptKey,
          now,
          expiredBefore,
          expiredBefore,
          now,
        );
        if (row === undefined) throw new Error("the upsert of pg_attempts returned no row");
        return attemptRecord(row);
      }),
    get: (key) =>
      run("attempts.get", async () => {
        if (!storableKey(key)) return null;
        const [row] = await all<Selectable<AttemptTable>>(`select * from ${table} where "attempt_key" = ?`, key);
        return row ? attemptRecord(row) : null;
      }),
    reset: (key) =>
      run("attempts.reset", async () => {
        if (storableKey(key)) await exec(`delete from ${table} where "attempt_key" = ?`, key);
      }),
    refund: (key, start, count) =>
      run("attempts.refund", async () => {
        if (!storableKey(key)) return;
        // Two statements, no transaction needed: the delete takes a record only while it is at 0.
        const taken = await exec(
          `update ${table} set "count" = case when "count" > ? then "count" - ? else 0 end where "attempt_key" = ? and "window_start" = ? and "count" > 0`,
          count,
          count,
          key,
          start,
        );
        if (taken > 0) await exec(`delete from ${table} where "attempt_key" = ? and "count" <= 0`, key);
      }),
    deleteExpired: (before, limit) => run("attempts.deleteExpired", () => deleteBatch(ctx, TABLES.attempts, "attempt_key", `"window_start" <= ?`, [before], limit)),
  };
}

/** `pg_sessions` on D1 (see ../stores/sessions.ts). */
export function d1SessionStore(ctx: D1Context): SessionStore {
  const { run, all, exec, storableKey, insertOrFalse } = ctx;
  const table = id(TABLES.sessions);
  return {
    create: (record) =>
      run("sessions.create", async () => {
        const insert = insertRow(TABLES.sessions, sessionRow(ctx, record));
        return insertOrFalse(() => exec(insert.sql, ...insert.params));
      }),
    get: (idHash) =>
      run("sessions.get", async () => {
        if (!storableKey(idHash)) return null;
        const [row] = await all<Selectable<SessionTable>>(`select * from ${table} where "id_hash" = ?`, idHash);
        return row ? sessionRecord(row) : null;
      }),
    delete: (idHash) => run("sessions.delete", async () => storableKey(idHash) && (await exec(`delete from ${table} where "id_hash" = ?`, idHash)) > 0),
    // Forward only, in the one statement (D1 runs one writer at a time).
    touch: (idHash, expiresAt) =>
      run("sessions.touch", async () => storableKey(idHash) && (await exec(`update ${table} set "expires_at" = ? where "id_hash" = ? and "expires_at" < ?`, expiresAt, idHash, expiresAt)) > 0),
    deleteByAccount: (accountId) => run("sessions.deleteByAccount", async () => (storableKey(accountId) ? exec(`delete from ${table} where "account_id" = ?`, accountId) : 0)),
    deleteExpired: (now, limit) => run("sessions.deleteExpired", () => deleteBatch(ctx, TABLES.sessions, "id_hash", `"expires_at" <= ?`, [now], limit)),
  };
}
