import type { Context } from "../context.js";
import { base64url, fromBase64url } from "../crypto/index.js";
import { SECURITY_EVENT_TYPES, type SecurityEvent, type SecurityEventType } from "../events/types.js";
import type { AuditQuery, AuditRecord, AuditStore } from "../storage/types.js";

/** What {@link listAuditEvents} selects; every filter given must match. */
export interface EventQuery {
  /** One event type, e.g. `token.issued`. */
  type?: string;
  /** The event's `client_id`. */
  clientId?: string;
  /**
   * An account, by its id or its username: the events that name it either way (a token's
   * `subject` and `account_id` hold the id, a failed login or lock-out only the username). An id
   * names its account before a username does (another account may have it as its username).
   */
  account?: string;
  /** 1-1000; default 20. */
  limit?: number;
  /** The `next` cursor of the previous page. */
  before?: string;
  /**
   * Only events at or after this time (epoch ms, inclusive): the page ends, and `next` is null,
   * at the first older one. Since 2026-12-03.
   */
  since?: number;
  /** Only events before this time (epoch ms, exclusive). With `before` too, the older bound of the two holds. Since 2026-12-03. */
  until?: number;
}

/** One page of kept events, newest first, and the cursor of the next page (null on the last). */
export interface EventPage {
  events: SecurityEvent[];
  next: string | null;
}

/** Why a query was refused; the message is safe to show. `field` is the query's member it is about (`admin.listEvents` passes it on as its `AdminError`'s). */
export class EventQueryError extends Error {
  override readonly name = "EventQueryError";
  constructor(
    message: string,
    readonly field: "limit" | "type" | "clientId" | "account" | "before" | "since" | "until",
  ) {
    super(message);
  }
}

/** The most records `AuditStore.list` is asked for at once (the storage contract's bound). */
const AUDIT_LIST_MAX = 1000;

/** A record id in the form core writes (a lowercase UUID), which a cursor holds as it is. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The cursor of the page after record (`time`, `id`): `time.id` for an id in core's form (as
 * before, so instances of an older version read it), else `time.i` and the id's UTF-8 in
 * base64url, so any id a store holds round-trips, whoever wrote it (until 2026-12-02 the cursor of
 * a page ending on an id in another form, a UUID in capitals, was refused on the next call, and
 * paging stopped there). An id with a lone surrogate, which no store holds, would not.
 */
function eventCursor(time: number, id: string): string {
  return UUID.test(id) ? `${time}.${id}` : `${time}.i${base64url(utf8.encode(id))}`;
}

/** A cursor {@link eventCursor} makes, read back; null for any other text. */
function parseEventCursor(cursor: string): { time: number; id: string } | null {
  const m = /^(\d{1,16})\.(.*)$/s.exec(cursor);
  if (!m || !Number.isSafeInteger(Number(m[1]))) return null;
  const time = Number(m[1]);
  const rest = m[2]!;
  if (UUID.test(rest)) return { time, id: rest };
  if (!rest.startsWith("i")) return null;
  const bytes = fromBase64url(rest.slice(1));
  // Only the canonical form: one cursor per record.
  if (bytes === null || base64url(bytes) !== rest.slice(1)) return null;
  try {
    const id = strictUtf8.decode(bytes);
    // An id core writes has the short form: another spelling of it is no cursor this code made.
    return UUID.test(id) ? null : { time, id };
  } catch {
    return null;
  }
}

/**
 * Whether `text` is a cursor `admin.listEvents` hands out as `next` (what its `before` takes), read
 * by the same rules: for a tool that checks its input before it opens the store (the CLI's
 * `--before`; since 2026-12-03).
 */
export const isEventCursor = (text: string): boolean => parseEventCursor(text) !== null;

/** Whether a string names an event type. */
export const isEventType = (t: string): t is SecurityEventType => (SECURITY_EVENT_TYPES as readonly string[]).includes(t);

/**
 * A page of the audit trail. Throws EventQueryError for a bad filter, limit or cursor, with or
 * without an audit store (until 2026-12-01 a store without one answered any query, so a broken
 * filter showed only once the trail was turned on); null when the storage keeps no audit trail.
 */
export async function listAuditEvents(ctx: Context, query: EventQuery, maxLimit = 1000): Promise<EventPage | null> {
  const limit = query.limit ?? 20;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > maxLimit) throw new EventQueryError(`limit must be an integer from 1 to ${maxLimit}`, "limit");
  if (query.type !== undefined && !isEventType(query.type)) throw new EventQueryError(`type must be one of ${SECURITY_EVENT_TYPES.join(", ")}`, "type");
  for (const [name, v, field] of [["client", query.clientId, "clientId"], ["account", query.account, "account"]] as const) {
    if (v !== undefined && (v.length < 1 || v.length > 200)) throw new EventQueryError(`${name} must be 1-200 characters`, field);
  }
  const q: AuditQuery = { limit };
  if (query.type !== undefined) q.type = query.type;
  if (query.clientId !== undefined) q.clientId = query.clientId;
  if (query.before !== undefined) {
    const before = parseEventCursor(query.before);
    if (before === null) throw new EventQueryError("before must be the next cursor of a previous page", "before");
    q.before = before;
  }
  for (const name of ["since", "until"] as const) {
    const v = query[name];
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 0)) throw new EventQueryError(`${name} must be a time in epoch milliseconds (a whole number, 0 or more)`, name);
  }
  // Before `until` in the stores' (time, id) order: every id is after "", so no record at `until`
  // itself is listed. The older of it and the cursor holds.
  const until = query.until;
  if (until !== undefined && (q.before === undefined || until <= q.before.time)) q.before = { time: until, id: "" };
  const since = query.since;
  const audit = ctx.storage.audit;
  if (!audit) return null;
  const list = await lister(ctx, audit, query.account);
  // One record past the page tells whether an older one exists (the store takes at most
  // AUDIT_LIST_MAX; a page of that many asks a second time, below).
  let fetched = await list(limit < AUDIT_LIST_MAX ? { ...q, limit: limit + 1 } : q);
  // Newest first: those older than `since` are a tail, cut off (and with them any older page).
  let cut = false;
  if (since !== undefined) {
    const within = fetched.findIndex((r) => r.time < since);
    if (within >= 0) {
      fetched = fetched.slice(0, within);
      cut = true;
    }
  }
  const records = fetched.length > limit ? fetched.slice(0, limit) : fetched;
  const events: SecurityEvent[] = [];
  for (const r of records) {
    try {
      events.push(JSON.parse(r.data) as SecurityEvent);
    } catch {
      ctx.logger.error("audit record does not hold JSON; skipped", { id: r.id });
    }
  }
  const last = records[records.length - 1];
  // A full page is the last one when nothing older matches: then `next` is null, as documented,
  // so a reader is never sent to an empty page (before 2026-11-29 a last page of exactly `limit`
  // events gave a cursor, and the console's "Older events" opened "No events match").
  if (records.length < limit || !last || (cut && fetched.length <= limit)) return { events, next: null };
  const older =
    fetched.length > limit ||
    (limit >= AUDIT_LIST_MAX && (await list({ ...q, before: { time: last.time, id: last.id }, limit: 1 })).some((r) => since === undefined || r.time >= since));
  return { events, next: older ? eventCursor(last.time, last.id) : null };
}

/** Newest first: `time` descending, then `id` descending (code units), the store's order. */
const newerFirst = (a: AuditRecord, b: AuditRecord) => b.time - a.time || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/**
 * How to list for an `account` filter. An account's events name it by id (`accountId`: a token's
 * `subject` and `account_id`) or by username (a failed login, a lock-out), so the account the value
 * names is looked up, and the records whose `accountId` is its id and those whose `username` is its
 * username are listed, each column matched only by its own value, and merged in the store's order
 * without repeats. An account id names that account before any username does: ids are random
 * UUIDs no one chooses, while a new account may take another's id as its username. A value naming
 * no account is matched as given, in either column (accounts are never deleted, and a username
 * names one account for good). Until 2026-12-01 a username showed an account's failed logins and
 * lock-outs but none of its tokens, and its id the reverse; until 2026-12-02 every name the
 * lookups returned was matched in both columns, so an account whose username was alice's id had
 * its failed logins and, through the lookup by username, its tokens listed as alice's.
 */
async function lister(ctx: Context, audit: AuditStore, account: string | undefined): Promise<(q: AuditQuery) => Promise<AuditRecord[]>> {
  if (account === undefined) return (q) => audit.list(q);
  const [byId, byName] = await Promise.all([ctx.storage.accounts.get(account), ctx.storage.accounts.findByUsername(account)]);
  const named = byId ?? byName;
  const filters: Pick<AuditQuery, "accountId" | "username">[] = [{ accountId: named?.id ?? account }, { username: named?.username ?? account }];
  return async (q) => {
    const lists = await Promise.all(filters.map((filter) => audit.list({ ...q, ...filter })));
    // Each list held to its own filter: a store written to the contract before 2026-12-02 reads
    // `account` and ignores `accountId` and `username`, and would list every account's events as
    // this one's (its pages come back short instead: see the README's contract change).
    const [ofId, ofName] = lists as [AuditRecord[], AuditRecord[]];
    const own = [...ofId.filter((r) => r.accountId === filters[0]!.accountId), ...ofName.filter((r) => r.username === filters[1]!.username)];
    const seen = new Set<string>();
    const merged: AuditRecord[] = [];
    for (const r of own.sort(newerFirst)) {
      if (seen.has(r.id)) continue;
      seen.add(r.id);
      merged.push(r);
    }
    return merged.slice(0, q.limit);
  };
}
