// The optional audit store's contract (kept security events), apart from types.ts for size.

/**
 * One kept security event (see `SecurityEvent`): the columns the console filters on, and the
 * whole event as JSON text (a few hundred bytes; never a secret, token or hash).
 */
export interface AuditRecord {
  /** The event's id (a UUID). */
  id: string;
  /** The event's type, e.g. `token.issued`. */
  type: string;
  /** Epoch ms. */
  time: number;
  /**
   * The event's `client_id`, or null. These three filter columns hold at most 200 characters with
   * no U+0000 and no lone surrogate (core leaves longer or odd values out), so a key column fits.
   */
  clientId: string | null;
  /** The event's `account_id` (or the account `subject` of a token), or null. */
  accountId: string | null;
  /** The event's `username`, or null. */
  username: string | null;
  /** The whole event, JSON (ASCII escapes for U+0000 and lone surrogates, so any text column holds it). */
  data: string;
}

/** What {@link AuditStore.list} selects: all filters given must match. */
export interface AuditQuery {
  type?: string;
  clientId?: string;
  /**
   * Matches `accountId` exactly. Until 2026-12-02 one `account` filter matched `accountId` or
   * `username`, so a username that was another account's id matched that account's events.
   */
  accountId?: string;
  /** Matches `username` exactly. */
  username?: string;
  /** Only records strictly older in (time, id) order than this one: the cursor of the next page. */
  before?: { time: number; id: string };
  /** 1-1000. */
  limit: number;
}

/** The audit trail: security events kept for review, pruned by age. Optional in {@link Storage}. */
export interface AuditStore {
  /** Stores one record; a record with an id already stored changes nothing. */
  append(record: AuditRecord): Promise<void>;
  /** Newest first: by `time` descending, then `id` descending (code-unit order); at most `limit`. */
  list(query: AuditQuery): Promise<AuditRecord[]>;
  /**
   * Deletes records with `time <= before`; returns how many. With `limit`, at most that many (see
   * {@link RefreshTokenStore.deleteExpired} for the batch contract).
   */
  deleteExpired(before: number, limit?: number): Promise<number>;
}

/**
 * The deletion half of an {@link AuditStore}, for a storage that keeps no new events but may hold
 * older ones (`Storage.auditPrune`): a SQL table written while the trail was on.
 */
export type AuditPruneStore = Pick<AuditStore, "deleteExpired">;
