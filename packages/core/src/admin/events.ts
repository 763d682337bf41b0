import type { Context } from "../context.js";
import { SECURITY_EVENT_TYPES, type SecurityEvent, type SecurityEventType } from "../events/types.js";
import type { AuditQuery } from "../storage/types.js";

/** What {@link listAuditEvents} selects; every filter given must match. */
export interface EventQuery {
  /** One event type, e.g. `token.issued`. */
  type?: string;
  /** The event's `client_id`. */
  clientId?: string;
  /** An account id or a username. */
  account?: string;
  /** 1-1000; default 20. */
  limit?: number;
  /** The `next` cursor of the previous page. */
  before?: string;
}

/** One page of kept events, newest first, and the cursor of the next page (null on the last). */
export interface EventPage {
  events: SecurityEvent[];
  next: string | null;
}

/** Why a query was refused; the message is safe to show. */
export class EventQueryError extends Error {
  override readonly name = "EventQueryError";
}

/** The most records `AuditStore.list` is asked for at once (the storage contract's bound). */
const AUDIT_LIST_MAX = 1000;

const CURSOR = /^(\d{1,16})\.([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** Whether a string names an event type. */
export const isEventType = (t: string): t is SecurityEventType => (SECURITY_EVENT_TYPES as readonly string[]).includes(t);

/**
 * A page of the audit trail. Throws EventQueryError for a bad filter, limit or cursor, with or
 * without an audit store (until 2026-12-01 a store without one answered any query, so a broken
 * filter showed only once the trail was turned on); null when the storage keeps no audit trail.
 */
export async function listAuditEvents(ctx: Context, query: EventQuery, maxLimit = 1000): Promise<EventPage | null> {
  const limit = query.limit ?? 20;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > maxLimit) throw new EventQueryError(`limit must be an integer from 1 to ${maxLimit}`);
  if (query.type !== undefined && !isEventType(query.type)) throw new EventQueryError(`type must be one of ${SECURITY_EVENT_TYPES.join(", ")}`);
  for (const [name, v] of [["client", query.clientId], ["account", query.account]] as const) {
    if (v !== undefined && (v.length < 1 || v.length > 200)) throw new EventQueryError(`${name} must be 1-200 characters`);
  }
  const q: AuditQuery = { limit };
  if (query.type !== undefined) q.type = query.type;
  if (query.clientId !== undefined) q.clientId = query.clientId;
  if (query.account !== undefined) q.account = query.account;
  if (query.before !== undefined) {
    const m = CURSOR.exec(query.before);
    if (!m || !Number.isSafeInteger(Number(m[1]))) throw new EventQueryError("before must be the next cursor of a previous page");
    q.before = { time: Number(m[1]), id: m[2]! };
  }
  const audit = ctx.storage.audit;
  if (!audit) return null;
  // One record past the page tells whether an older one exists (the store takes at most
  // AUDIT_LIST_MAX; a page of that many asks a second time, below).
  const fetched = await audit.list(limit < AUDIT_LIST_MAX ? { ...q, limit: limit + 1 } : q);
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
  if (records.length < limit || !last) return { events, next: null };
  const older = fetched.length > limit || (limit >= AUDIT_LIST_MAX && (await audit.list({ ...q, before: { time: last.time, id: last.id }, limit: 1 })).length > 0);
  return { events, next: older ? `${last.time}.${last.id}` : null };
}
