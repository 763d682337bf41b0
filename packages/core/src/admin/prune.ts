import type { Context } from "../context.js";
import { describeError } from "../http/respond.js";
import { deletePrunableKeys } from "../tokens/key-lifecycle.js";
import { passed } from "../util/passed.js";

/** Options of {@link prune}. */
export interface PruneOptions {
  /**
   * Rows deleted per storage call (default 1000). Each call is one short statement (a transaction
   * of its own), so a backlog of millions is worked off in many short steps, never one long lock.
   */
  batchSize?: number;
  /**
   * The most batches (storage calls of `batchSize` rows) one run makes, a positive integer; default
   * none (every store is drained until a batch comes back short). With it the stores take turns, one
   * batch each per round (refresh tokens, their ended families' rows where the store keeps them,
   * sessions, counters, revoked jtis, assertion jtis, audit events), so every store with work left
   * gets a batch in each round even when one has a huge backlog; the run stops when the budget is
   * spent, and `complete` says whether work may be left. The ended families' rows sit out once a
   * batch of them comes back short while the tokens have work, until the tokens are done. Each
   * run of an app starts its rounds at the store after the last one its previous budgeted run
   * served, so a budget below the number of stores serves every store within
   * ceil(stores / maxBatches) runs of one app instance; at least {@link PRUNE_STORES} serves every
   * store in every run, in any instance (but at exactly that, in a run that also deletes a signing
   * key: see below). The signing keys go first: their list is outside the budget, and each delete
   * (a storage call of its own) counts as a batch; they take at most `maxBatches` less one batch per
   * store (at least one), the oldest first, and leave the rest to the next run. So a run makes at
   * most `maxBatches` deletes in all, and one storage call more where the store drops replays
   * (`refreshTokens.dropReplays`, beside the refresh tokens' first batch of the run), and at `maxBatches` = {@link PRUNE_STORES} a run that deletes
   * a key leaves the last store of its round to the next run. For a platform that bounds the storage calls of one
   * invocation (Cloudflare D1: 50 queries on the Free plan). Until 2026-12-02 every prunable key
   * was deleted outside the budget.
   */
  maxBatches?: number;
  /**
   * Ends the run early: once it is aborted, the run makes no further storage call (the batch under
   * way finishes, as does a signing key's delete; a delete is never cut off) and resolves with the
   * counts so far, `complete` false when work may be left. The signing keys stop between two
   * deletes like the stores between two batches (until 2026-12-02 the keys step ignored the signal
   * and deleted every prunable key first, a statement each). For a shutdown (`schedulePrune`'s `stop()` aborts its run, since
   * 2026-12-02; before, a stop waited for the run to drain every store). A signal aborted before the
   * call: no storage call at all, every count 0.
   */
  signal?: AbortSignal;
}

/** How many records one prune deleted, per aggregate. */
export interface PruneCounts {
  refreshTokens: number;
  sessions: number;
  attempts: number;
  revokedTokens: number;
  /** `private_key_jwt` assertion jtis past their assertion's expiry. */
  assertionJtis: number;
  signingKeys: number;
  /** Audit events older than the retention (`auditRetentionDays`); 0 without an audit store or `auditPrune`. */
  auditEvents: number;
  /**
   * `true` when every store's last batch came back short and no prunable signing key was left:
   * nothing was left as of the run's instant. `false` when `maxBatches` ran out while some store's
   * last batch was full, or left prunable signing keys (their share of it, see
   * {@link PruneOptions.maxBatches}; since 2026-12-02), so work may be left
   * for the next run; conservative: a full last batch that took exactly the rest still says
   * `false` (knowing would cost another call of that store, past the budget), and the next run
   * finds nothing. (A run in which a store failed rejects; the counts in its log line say `false`.)
   * `false` too when `signal` ended the run with a store not done, or with prunable keys not
   * tried (or before the keys were looked at). Always `true` for a run without `maxBatches` or `signal` that does not fail.
   */
  complete: boolean;
}

/** Default rows per storage call of {@link prune}. */
export const PRUNE_BATCH_SIZE = 1000;

/**
 * The most stores one round of {@link prune} serves (refresh tokens, their ended families' rows,
 * sessions, counters, revoked jtis, assertion jtis, audit events): a `maxBatches` of at least this
 * gives every store a batch in every run, whatever the app instance. The Worker's cron and the CLI,
 * whose runs may each be a new instance (where a smaller budget would start at the first store
 * every time), refuse less.
 */
export const PRUNE_STORES = 7;

/** One store's batches: `call` deletes at most `limit` rows and returns how many. */
interface Queue {
  /** The store's name: where the next run starts (nextStart), and a failure's log line. */
  name: string;
  call: (limit: number) => Promise<number>;
  deleted: number;
  done: boolean;
  /** A queue whose rows the one named frees as it goes: not done while that one is not. */
  after?: Queue;
  /** Its last batch came back short while `after` was not done: it sits out until `after` is. */
  parked?: boolean;
  /**
   * A second kind of batch of the same store (its rows not counted in `deleted`): one beside the
   * first kind's first batch of each run, then the queue's batches once the first kind comes back
   * short: the refresh tokens' replays, beside and after their expired rows.
   */
  then?: (limit: number) => Promise<number>;
  /** Its first kind of batch is done (the rows `after` waits for are gone), though `then` may go on. */
  freed?: boolean;
  /** `then` made its batch beside the first kind's first batch of the run (once a run). */
  paired?: boolean;
  /** That batch of `then` came back full (more may be left). */
  thenFull?: boolean;
}

/**
 * Where each app's next budgeted run starts its rounds (the name of the store after the last one
 * the previous run gave a batch), so that a `maxBatches` below the number of stores serves them
 * all in turn across runs. Kept per app (its context): a new app instance starts at the first store.
 */
const nextStart = new WeakMap<Context, string>();

/**
 * Deletes what can never matter again, as of one instant (`ctx.clock()` at the start):
 *
 * - refresh tokens of a family past its absolute expiry, and unconsumed ones past their sliding
 *   expiry; a consumed (rotated) token stays until its family expires, since presenting it again
 *   is what detects reuse, but its replay (the sealed answer of its rotation) goes once it is
 *   6 minutes old, where the store has `dropReplays` (a batch beside the tokens' first of the run,
 *   and more once the tokens come back short; not counted);
 * - console sessions past their expiry;
 * - brute-force counters whose window has ended (`now - window`; all of them with the throttle off);
 * - revoked access-token jtis past their token's expiry;
 * - client-assertion jtis past their assertion's expiry;
 * - signing keys that are `prunable` (see `describeKeys`);
 * - audit events older than `auditRetentionDays`: the audit store's, or, without one, those the
 *   storage kept earlier (`storage.auditPrune`: the trail turned off since).
 *
 * The signing keys go first (with `maxBatches`, each delete a batch of it, at most the budget less
 * one batch per store, at least one). Then the stores take turns, one batch of `batchSize` each per
 * round, each until a batch comes back short, or until `maxBatches` batches have been made
 * (`complete` false when some store's last batch was full, or prunable keys were left). With `maxBatches` the rounds start at the store
 * after the last one the app's previous budgeted run served. A store that fails (the keys too)
 * takes no further batch in the run; the others go on, and the run then rejects with the first
 * failure, after one `logger.error` line naming every failed store and the counts of the rest.
 * Two instances pruning at once are safe: the stores delete each row once, so their counts add up.
 * An aborted `signal` ends the run at the next batch boundary (a signing key's delete is one),
 * with the counts so far.
 */
export async function prune(ctx: Context, options: PruneOptions = {}): Promise<PruneCounts> {
  const batch = options.batchSize ?? PRUNE_BATCH_SIZE;
  if (!Number.isSafeInteger(batch) || batch < 1) throw new TypeError("batchSize must be a positive integer");
  const maxBatches = options.maxBatches ?? Number.POSITIVE_INFINITY;
  if (options.maxBatches !== undefined && (!Number.isSafeInteger(maxBatches) || maxBatches < 1)) throw new TypeError("maxBatches must be a positive integer");
  // One instant for the whole run: rows that expire while it runs wait for the next one, so the
  // loops end even while traffic keeps creating rows.
  const now = ctx.clock();
  const { storage } = ctx;
  const failures: { store: string; error: unknown }[] = [];
  const queue = (name: string, call: (limit: number) => Promise<number>, after?: Queue): Queue => ({ name, call, deleted: 0, done: false, ...(after ? { after } : {}) });
  const refreshTokens = queue("refreshTokens", (limit) => storage.refreshTokens.deleteExpired(now, limit));
  // Then the replays of tokens rotated more than REPLAY_KEEP_MS ago (since 2026-12-03): past every
  // grace window, they only chained a stale token to the family's live one (see `dropReplays`).
  const dropReplays = storage.refreshTokens.dropReplays?.bind(storage.refreshTokens);
  if (dropReplays) refreshTokens.then = (limit) => dropReplays(now - REPLAY_KEEP_MS, limit);
  const ended = storage.refreshTokens.deleteEndedFamilies?.bind(storage.refreshTokens);
  // The family rows a token's deletion frees (not counted: the counts are of tokens).
  const families = ended ? queue("refreshFamilies", (limit) => ended(now, limit), refreshTokens) : undefined;
  const sessions = queue("sessions", (limit) => storage.sessions.deleteExpired(now, limit));
  const attempts = queue("attempts", (limit) => storage.attempts.deleteExpired(now - ctx.throttle.windowMs, limit));
  const revokedTokens = queue("revokedTokens", (limit) => storage.revokedTokens.deleteExpired(now, limit));
  const assertionJtis = queue("assertionJtis", (limit) => storage.assertionJtis.deleteExpired(now, limit));
  // Without an audit store, the events kept while the trail was on (until 2026-12-02 they were never
  // pruned after PLANTGATE_AUDIT=0: usernames and client IPs kept for good).
  const audit = storage.audit ?? storage.auditPrune;
  const auditEvents = audit ? queue("auditEvents", (limit) => audit.deleteExpired(now - ctx.auditRetentionMs, limit)) : undefined;
  const queues = [refreshTokens, families, sessions, attempts, revokedTokens, assertionJtis, auditEvents].filter((q) => q !== undefined);
  // Only a configured key needs naming: otherwise the newest stored key is the one that signs.
  // (Asking the keyring on a fresh store would create a key, which pruning has no business doing.)
  // First: a run whose budget the backlogs spend still prunes them. A failure here (the keys'
  // read, the clients' longest lifetime, a delete) leaves the rest of the keys to the next run, not
  // the stores. Each delete is a statement of its own: with `maxBatches` each counts as a batch,
  // and the keys take at most the budget less one batch per store (at least one), the oldest
  // first; the rest wait for the next run (`complete` false). Until 2026-12-02 every prunable key
  // was deleted here, outside the budget: 59 of them made a Worker's cron run 68 D1 queries, past
  // the Free plan's 50, and the run failed before any store was pruned. An aborted signal stops
  // the keys between two deletes (until 2026-12-02 they ignored it: a stop waited for them all).
  let signingKeys = 0;
  let spent = 0;
  const stopped = () => options.signal?.aborted === true;
  let keysLeft = false;
  // Aborted before the run began: the keys are not looked at either, so some may be left.
  if (stopped()) keysLeft = true;
  else {
    try {
      const activeKid = ctx.keyring.configured ? (await ctx.keyring.signingKey()).kid : undefined;
      // Aborted while the keyring loaded: the clients' longest lifetime is a storage read of the
      // prune's own, so it is not made (until 2026-12-02 it was, as an argument evaluated before
      // `deletePrunableKeys` looked at the signal).
      if (stopped()) keysLeft = true;
      else {
        const share = options.maxBatches === undefined ? Number.POSITIVE_INFINITY : Math.max(1, maxBatches - queues.length);
        const maxTokenTtlMs = await ctx.maxAccessTokenTtlMs();
        const keys = await deletePrunableKeys(storage.signingKeys, now, maxTokenTtlMs, activeKid, share, options.signal);
        // A failed delete still counts, as do the deletes before it.
        spent = keys.attempted;
        signingKeys = keys.deleted.length;
        keysLeft = keys.left;
        if (signingKeys > 0) ctx.keyring.invalidate();
        if (keys.failed !== undefined) throw keys.failed.error;
      }
    } catch (error) {
      failures.push({ store: "signingKeys", error });
    }
  }
  // Without a budget each store is drained before the next (as before rounds existed); with one,
  // a round gives each store with work left one batch, starting where the app's last run stopped.
  const rounds = options.maxBatches !== undefined;
  const first = rounds ? Math.max(0, queues.findIndex((q) => q.name === nextStart.get(ctx))) : 0;
  let pending = [...queues.slice(first), ...queues.slice(0, first)];
  let last: Queue | undefined;
  let lastTurn = Date.now();
  while (pending.length > 0 && spent < maxBatches && !stopped()) {
    for (const q of pending) {
      do {
        if (spent >= maxBatches || stopped()) break;
        const afterDone = q.after === undefined || q.after.done || q.after.freed === true;
        // Nothing freed since its last batch came back short: no batch until the tokens are done.
        if (q.parked && !afterDone) break;
        spent++;
        last = q;
        let n: number;
        try {
          n = await q.call(batch);
          if (!q.freed) q.deleted += n;
          if (q.then !== undefined) {
            const short = n < batch && afterDone;
            let beside: number | undefined;
            // The second kind's batch beside the first kind's first of the run (two storage calls,
            // once a run), so a budget of one batch a store serves both kinds in every run, and a
            // backlog of the first kind that outlasts the budget run after run does not keep the
            // second from its batch (until 2026-12-03, the first design's gap: replays were dropped
            // only once the expired tokens came back short, never while their backlog filled a budget).
            // Not once the signal is aborted (no further storage call): a short batch of tokens
            // then leaves the queue to make the replays' batch, which the stop keeps from being made.
            if (!q.paired && stopped()) q.thenFull = true;
            else if (!q.paired) {
              q.paired = true;
              try {
                beside = await q.then(batch);
              } catch (error) {
                // Named apart; the first kind goes on (no more of the second in this run).
                failures.push({ store: "refreshReplays", error });
                q.then = undefined;
              }
            }
            // The first kind came back short: the second kind from now on, unless its batch of this
            // run came back short too (nothing left of it as of this run's instant). This batch's
            // count is the second kind's when it made one here; else the queue goes on to make one.
            if (short && q.then !== undefined) {
              if (beside !== undefined || q.thenFull === true) {
                q.call = q.then;
                q.freed = true;
                n = beside ?? batch;
              }
              q.then = undefined;
            }
            if (beside !== undefined) q.thenFull = beside >= batch;
          }
        } catch (error) {
          // Its work stays for the next run; the budget goes to the others. The replays' batches
          // fail under a name of their own: the expired tokens may all be gone.
          failures.push({ store: q.freed === true ? "refreshReplays" : q.name, error });
          q.done = true;
          break;
        }
        // A turn of the event loop between batches once the run has held it PRUNE_TURN_MS: a
        // synchronous driver (better-sqlite3) or the memory store settles each batch without one,
        // so a run of many batches was one stretch in which no request was read and no timer fired
        // (a second an hour for 100,000 audit events past the retention; until 2026-12-01). A short
        // run takes no turn (a turn is a timer: at least a millisecond on Node).
        if (passed(Date.now(), lastTurn, PRUNE_TURN_MS)) {
          await nextTurn();
          lastTurn = Date.now();
        }
        // A store that ignores the limit deletes everything at once: its next call returns 0.
        if (n < batch) {
          if (afterDone) q.done = true;
          else q.parked = true;
        } else q.parked = false;
      } while (!rounds && !q.done);
    }
    pending = pending.filter((q) => !q.done);
  }
  if (rounds && last !== undefined) nextStart.set(ctx, queues[(queues.indexOf(last) + 1) % queues.length]!.name);
  const counts: PruneCounts = {
    refreshTokens: refreshTokens.deleted,
    sessions: sessions.deleted,
    attempts: attempts.deleted,
    revokedTokens: revokedTokens.deleted,
    assertionJtis: assertionJtis.deleted,
    signingKeys,
    auditEvents: auditEvents?.deleted ?? 0,
    complete: pending.length === 0 && !keysLeft && failures.length === 0,
  };
  if (failures.length === 0) return counts;
  // The counts of what was pruned would be lost with the rejection: one line names them, and each
  // failure (the later ones are not thrown); the first failure is the run's, as before.
  ctx.logger.error("prune: some stores failed; the others were pruned", { failed: failures.map(({ store, error }) => ({ store, ...describeError(error) })), counts });
  throw failures[0]!.error;
}

/**
 * How long a rotated refresh token's replay is kept (ms): the longest grace window
 * (`refreshGraceSeconds`, 300 s at most) and a minute of clock difference between instances.
 */
export const REPLAY_KEEP_MS = 360_000;

/** How long a prune run holds the event loop before it gives it a turn (ms). */
const PRUNE_TURN_MS = 10;

/** Resolves after the event loop's next turn (timers, I/O): setTimeout, which every runtime has. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}
