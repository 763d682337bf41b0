import { EventQueryError, listAuditEvents, type EventQuery } from "../admin/events.js";
import { ApiError, ApiErrorCode } from "../errors/index.js";
import { json } from "../http/respond.js";
import { oneParam, type ApiHandler } from "./api.js";

/** Most events per page of the console's "Security events" view. */
export const CONSOLE_EVENTS_MAX_LIMIT = 100;

/**
 * `GET /console/api/events?type=&client=&account=&since=&until=&limit=&before=`: one page of the
 * audit trail, newest first: `{"audit": true, "events": [...], "next": cursor | null}`; pass `next`
 * as `before` for the following page. `since` (inclusive) and `until` (exclusive) are epoch ms
 * (since 2026-12-03). Without an audit store: `{"audit": false, "events": [], "next": null}`.
 * A bad filter, limit (1-100, default 20) or cursor, or any of them given twice: 400 (error 1009).
 */
export const listEvents: ApiHandler = async (ctx, _s, request) => {
  const params = request.url.searchParams;
  const query: EventQuery = {};
  // Each at most once (until 2026-11-30 a second value was dropped without a word, while the
  // clients view refused it).
  const type = oneParam(params, "type");
  const client = oneParam(params, "client");
  const account = oneParam(params, "account");
  const before = oneParam(params, "before");
  const limit = oneParam(params, "limit");
  const since = oneParam(params, "since");
  const until = oneParam(params, "until");
  if (type !== undefined) query.type = type;
  if (client !== undefined) query.clientId = client;
  if (account !== undefined) query.account = account;
  if (before !== undefined) query.before = before;
  try {
    if (limit !== undefined) {
      if (!/^\d{1,4}$/.test(limit)) throw new EventQueryError(`limit must be an integer from 1 to ${CONSOLE_EVENTS_MAX_LIMIT}`, "limit");
      query.limit = Number(limit);
    }
    for (const [name, v] of [["since", since], ["until", until]] as const) {
      if (v === undefined) continue;
      if (!/^\d{1,16}$/.test(v)) throw new EventQueryError(`${name} must be a time in epoch milliseconds (a whole number, 0 or more)`, name);
      query[name] = Number(v);
    }
    const page = await listAuditEvents(ctx, query, CONSOLE_EVENTS_MAX_LIMIT);
    return json(200, page ? { audit: true, ...page } : { audit: false, events: [], next: null });
  } catch (e) {
    if (e instanceof EventQueryError) throw new ApiError(400, ApiErrorCode.invalidValue, `${e.message}.`);
    throw e;
  }
};
