/**
 * The event sink behind `ctx.events.emit(...)`: stamps each event with an id and a time, hands it
 * to the `onEvent` hook and to the audit store (when the storage has one), and never lets either
 * change an answer: nothing is awaited on the request path, sync throws and async rejections are
 * caught and reported through the logger (type and id only, never the event's fields).
 */
import type { Logger } from "../context.js";
import { uuidV4At, type RandomBytes } from "../crypto/index.js";
import { dropRejection, isThenable } from "../util/thenable.js";
import { isStorableText } from "../util/storable-text.js";
import type { AuditRecord, AuditStore } from "../storage/types.js";
import { isAuditNotKept } from "../errors/index.js";
import type { EventBacklogReading, Observer } from "../telemetry/types.js";
import type { EventHook, EventInput, SecurityEvent, SecurityEventType } from "./types.js";

/** What emitter sites call. */
export interface EventSink {
  /**
   * Records one event; returns at once. The object becomes the event (stamped with `id` and
   * `time`, then frozen): pass a fresh object literal, `type` first, and do not keep it.
   */
  emit(event: EventInput): void;
  /** Whether anything listens (a hook or an audit store): sites may skip work that only feeds events. */
  readonly enabled: boolean;
  /**
   * Records the events `task` resolves to, when it does: for events whose fields need a lookup
   * that must neither delay nor change the answer. The task must not reject (a rejection is
   * reported, and records nothing). `settled()` called after this waits for them too.
   */
  defer(task: Promise<readonly EventInput[]>): void;
  /**
   * Resolves once every event emitted (or deferred) before the call has been handled by the hook
   * and the audit store (rejections included); events emitted later are not waited for. Resolves
   * to 0 then; with `timeoutMs` (an integer up to 2^31-1; 0 or none: no bound), once that much time
   * has passed first, to the number of those batches (the events of one step, or one deferred task)
   * still unfinished, and the call is forgotten: nothing of it is kept for a receiver that never
   * settles. Throws a TypeError for any other `timeoutMs`.
   */
  settled(timeoutMs?: number): Promise<number>;
  /** The `settled()` calls still waiting: each keeps one small record until it resolves (diagnostics, tests). */
  readonly waiting: number;
  /**
   * The deliveries unfinished now, by receiver kind, after letting go of those unfinished for 60 s
   * (what `observer.eventBacklog` is handed).
   */
  backlog(): EventBacklogReading;
}

/** The audit row of an event: the columns the console filters on, and the whole event as JSON. */
export function auditRecord(event: SecurityEvent): AuditRecord {
  const e = event as unknown as Record<string, unknown>;
  const subject = column(e.subject);
  const accountId = column(e.account_id) ?? (subject !== null && !subject.startsWith("client:") ? subject : null);
  return {
    id: event.id,
    type: event.type,
    time: event.time,
    clientId: column(e.client_id),
    accountId,
    username: column(e.username),
    // JSON.stringify escapes U+0000 and lone surrogates, so the text is storable everywhere.
    data: JSON.stringify(event),
  };
}

/**
 * A filter column's value: at most 200 characters, no U+0000, no lone surrogate (what every SQL
 * engine indexes exactly); anything else (a hostile client id or username) is kept only in `data`.
 */
const column = (v: unknown): string | null =>
  typeof v === "string" && v.length <= 200 && isStorableText(v) ? v : null;

/**
 * The members of an event type whose values are not primitives (arrays: `grant_types`, `deleted`,
 * ...). A table, not a walk over every event's members: `token.issued`, emitted on every token
 * request, has none, and is stamped with one lookup and no copy.
 */
type NestedMember<E> = { [K in keyof E]-?: E[K] extends string | number | boolean | null | undefined ? never : K }[keyof E];

/**
 * Every event type with a non-primitive member, and all of those members: the type requires an
 * entry naming each one (a new event type, or a new member, with an array or object does not
 * compile until it is listed here) and refuses a member that is not one.
 */
type NestedMembers = { [E in SecurityEvent as [NestedMember<E>] extends [never] ? never : E["type"]]: { readonly [K in NestedMember<E>]: true } };

const NESTED: NestedMembers = {
  "client.created": { grant_types: true, scopes: true },
  "signing_key.rotated": { deleted: true, cancelled: true },
  "signing_key.revoked": { deleted: true },
  "signing_key.reencrypted": { reencrypted: true },
  "account.created": { roles: true },
};

/**
 * A deep copy of a member's value, frozen all the way down. The site's array is often the very one
 * its answer holds (a client's `scopes`, the kids a rotation deleted): a hook sorting or emptying
 * the event's array changed the answer the caller had not yet been handed (until 2026-12-02).
 */
function frozenCopy(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return Object.freeze(value.map(frozenCopy));
  const copy: Record<string, unknown> = {};
  for (const [key, member] of Object.entries(value)) copy[key] = frozenCopy(member);
  return Object.freeze(copy);
}

/** Default of `maxPendingEventDeliveries`: deliveries to one receiver unfinished at once. */
export const MAX_PENDING_EVENT_DELIVERIES = 10_000;
/** The most `maxPendingEventDeliveries` may be. */
export const MAX_PENDING_EVENT_DELIVERIES_LIMIT = 1_000_000;
/**
 * A delivery unfinished this long no longer counts against the bound, nor holds back `settled()`:
 * it may never settle (a Worker's call whose request context is gone), and the receiver would
 * otherwise stay refused, and its batches pending, for good.
 */
export const PENDING_DELIVERY_AGE_MS = 60_000;

/** Random bytes drawn at once for event ids: 256 ids. */
const ID_BLOCK = 4096;

/**
 * The microtask that drains the queue is a reaction on this promise, not `queueMicrotask`: on Node
 * that wraps each callback in an `AsyncResource` (an async id, a bound function, a scope entered
 * and left) on every token request. Single-pair bench runs of a no-op hook read 0.972x before and
 * 0.990x and 1.000x after (`BENCH_OBSERVE_PART=noop`; that method's runs spread by a few points).
 * `drain` never throws (every receiver's throw is caught), so the reaction's promise never rejects.
 */
const RESOLVED = Promise.resolve();

/** Where {@link composedHookResult} keeps the parts (`Symbol.for`: two copies of core agree on it). */
const HOOK_PARTS = Symbol.for("plantgate.eventHookParts");
/** How deep composed hook results inside composed ones are followed part by part. */
const MAX_HOOK_PART_DEPTH = 8;
/** How many parts of one hook call are followed one by one, at every depth together. */
const MAX_HOOK_PARTS = 1024;

/**
 * The result of an `onEvent` hook that hands each event to several hooks (`eventHooks` of
 * `@plantgate/observability`): `combined` as the result its direct caller awaits, carrying the
 * hooks' own results, which plantgate follows one by one: `flushEvents` waits for each, and each
 * rejection is logged on its own as it happens (`onEvent hook failed`). Until 2026-12-03 plantgate
 * saw the combined result alone: one hook that never settled (a webhook without a timeout) kept
 * every other hook's failure from being logged, and of several failures only the first was.
 * Plantgate then waits for the parts only and drops the combined result's rejection: work the
 * combined result does after its parts is neither waited for nor reported. A part that is itself
 * such a result is followed part by part too (8 levels, 1024 parts in all per event).
 *
 * @example
 * const onEvent: EventHook = (event) => {
 *   const parts = hooks.map((hook) => Promise.resolve().then(() => hook(event)));
 *   return composedHookResult(Promise.all(parts).then(() => undefined), parts);
 * };
 */
export function composedHookResult(combined: Promise<void>, parts: readonly PromiseLike<unknown>[]): Promise<void> {
  try {
    // Configurable: a combiner handing back one promise twice replaces its parts, rather than throwing.
    Object.defineProperty(combined, HOOK_PARTS, { value: Object.freeze([...parts]), configurable: true });
  } catch {
    // A frozen promise: plantgate follows the combined result alone, as it would without this call.
  }
  return combined;
}

/** Where {@link composedEventHook} keeps the hooks (`Symbol.for`: two copies of core agree on it). */
const HOOK_LIST = Symbol.for("plantgate.eventHookList");
/** How deep composed hooks inside composed ones are unfolded, and how many hooks in all. */
const MAX_HOOK_LIST_DEPTH = 8;
const MAX_HOOKS = 64;

/**
 * An `onEvent` hook that stands for several (`eventHooks` of `@plantgate/observability`): `combined`
 * as its direct caller calls it, carrying `hooks`, which plantgate calls itself instead, each as a
 * receiver of its own: each has its own backlog (`maxPendingEventDeliveries`), so a webhook that
 * hangs keeps no event from the JSON log line's hook beside it (since 2026-12-03, when the bound
 * came: it held back every hook of the composed one). Failures are reported per hook as before. A
 * hook that is itself composed is unfolded too (64 hooks and 128 visited in all; past them,
 * `combined` is called as one hook; one 9 levels down is called as one). The hooks are read once,
 * when the app is made.
 *
 * @example
 * const onEvent = composedEventHook((event) => Promise.all(hooks.map((hook) => hook(event))).then(() => undefined), hooks);
 */
export function composedEventHook(combined: EventHook, hooks: readonly EventHook[]): EventHook {
  try {
    Object.defineProperty(combined, HOOK_LIST, { value: Object.freeze([...hooks]), configurable: true });
  } catch {
    // A frozen function: plantgate calls `combined` as one hook.
  }
  return combined;
}

/**
 * The hooks plantgate calls for `hook`: those a composed hook carries, unfolded, or `hook` itself
 * (also when what it carries cannot be read, is not a list of functions, has a hole, goes past the
 * bounds, 64 hooks or 128 visited with the composed ones, or holds a hook that contains itself). A
 * composed hook 9 levels down is not unfolded: it is called as one hook.
 */
function hookListOf(hook: EventHook): EventHook[] {
  const out: EventHook[] = [];
  // Every hook visited counts, composed ones too (128 in all): a list of 64 lists of 64 ... was 64^depth visits.
  let visits = 0;
  const path = new Set<EventHook>();
  const unfold = (h: EventHook, depth: number): boolean => {
    if (++visits > 2 * MAX_HOOKS || path.has(h)) return false;
    let carried: EventHook[] | undefined;
    try {
      const value: unknown = depth < MAX_HOOK_LIST_DEPTH ? (h as { [HOOK_LIST]?: unknown })[HOOK_LIST] : undefined;
      if (Array.isArray(value)) {
        const length: unknown = (value as unknown[]).length;
        // Copied index by index into an array of our own, up to the length read once (a proxy may
        // answer another length, or another array through `slice`'s species, the next time); a
        // hole or anything but a function, and the hook is called as one.
        if (typeof length === "number" && Number.isSafeInteger(length) && length >= 0 && length <= MAX_HOOKS) {
          const copy: EventHook[] = [];
          let functions = true;
          for (let i = 0; functions && i < length; i++) {
            const c: unknown = (value as unknown[])[i];
            if (typeof c === "function") copy.push(c as EventHook);
            else functions = false;
          }
          if (functions) carried = copy;
        }
      }
    } catch {
      carried = undefined;
    }
    if (carried === undefined) {
      out.push(h);
      return out.length <= MAX_HOOKS;
    }
    path.add(h);
    for (const c of carried) if (!unfold(c, depth + 1)) return false;
    path.delete(h);
    return true;
  };
  return unfold(hook, 0) ? out : [hook];
}

/**
 * What a failure says, for its log line; never throws: `String()` throws for a null-prototype object
 * or one whose `toString` throws, and the report then went unlogged (until 2026-12-01).
 */
const message = (error: unknown): string => {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return `a non-Error value (${typeof error}) that has no text`;
  }
};

/**
 * A sink over the hook and the audit store; with neither it does nothing at all.
 *
 * With events on, `emit` is on the token path of every request, so it does the least it can: one
 * frozen object pushed on a queue, and one microtask that hands every event queued in the current
 * step to the hook and the audit store (they run after that step, never inside it, in the order
 * the events came), with a count of unfinished work instead of a set of promises.
 */
export function createEventSink(input: {
  hook: EventHook | undefined;
  audit: AuditStore | undefined;
  logger: Logger;
  clock: () => number;
  random: RandomBytes;
  lost?: Observer["eventLost"];
  /** Handed {@link EventSink.backlog} once, when there is a receiver (`observer.eventBacklog`). */
  watch?: Observer["eventBacklog"];
  /** Deliveries to one receiver unfinished at once (default {@link MAX_PENDING_EVENT_DELIVERIES}). */
  maxPending?: number;
}): EventSink {
  const { hook, audit, logger, clock, random, lost, watch, maxPending = MAX_PENDING_EVENT_DELIVERIES } = input;
  // The receivers, each with a backlog of its own: the audit store, then the hook, or each hook of
  // a composed one (`composedEventHook`, `eventHooks`), so one that falls behind holds back no other.
  const hooks = hook === undefined ? [] : hookListOf(hook);
  const list: Receiver[] = [];
  if (audit !== undefined) list.push({ kind: "audit", name: "audit store", call: (event) => audit.append(auditRecord(event)), backlog: newBacklog() });
  for (let i = 0; i < hooks.length; i++) {
    const of = hooks.length === 1 ? undefined : `${i + 1} of ${hooks.length}`;
    list.push({ kind: "hook", name: of === undefined ? "onEvent hook" : `onEvent hook ${of}`, ...(of === undefined ? {} : { of }), call: hooks[i]!, backlog: newBacklog() });
  }
  // Unfinished work is counted per batch (the events queued in one step, or one deferred task),
  // so `settled()` waits for the batches of before its call, not for a count that steady traffic
  // may never bring to 0 (the Worker calls it on every request, through waitUntil).
  //
  // Batches are numbered as they are made and join `pending` in that order, so its first one is
  // the oldest unfinished. A `settled()` call is one record in `waiters` (in the order of the
  // calls, so of their `upTo`): done once the oldest unfinished batch is newer than its `upTo`.
  // Until 2026-11-29 each call pushed a waiter onto every pending batch: a receiver call that never
  // settles (a hook's fetch made in a Worker request context that is gone) kept its batch pending,
  // and every later request's flush added a closure and a promise to it, for the isolate's life
  // (and walked every batch stuck so far). Now a call is one record whatever is pending, and a call
  // with a bound (the Worker's) drops it when the bound passes, on a timer of the caller's own, as
  // `waitAtMost` does: what a hung receiver holds is its own batch (until it is let go at 60 s, see
  // `sweep`), and the calls of the last `timeoutMs`. Sharing one promise per batch would not have
  // been enough: reactions on a promise that never settles accumulate just the same. No timer and no closure is made per event: a
  // batch that finishes wakes the waiters (if any) at once, and `settled()` with nothing pending
  // makes no record (the sync receivers, the logger and the metrics, are done by then).
  const pending = new Set<Batch>();
  const waiters = new Set<Waiter>();
  let made = 0;
  // Each receiver's backlog: its thenable results not yet settled (a composed result's parts each
  // on their own), of the last PENDING_DELIVERY_AGE_MS. Past `maxPending` of them an event is not
  // handed to it (counted lost) until they are down to half; a receiver that answers at once never
  // has one, and costs one comparison an event. Until 2026-12-03 every event was handed over
  // whatever was unfinished: a hook that never settled held a call, the event and its record per
  // token request, without bound.
  const resumeAt = Math.floor(maxPending / 2);
  const finished = (batch: Batch) => {
    if (--batch.left > 0) return;
    pending.delete(batch);
    if (waiters.size !== 0) wake();
  };
  const wake = () => {
    let oldest = Infinity;
    for (const batch of pending) {
      oldest = batch.seq;
      break;
    }
    for (const waiter of waiters) {
      if (waiter.upTo >= oldest) break;
      waiters.delete(waiter);
      clearTimeout(waiter.timer);
      waiter.resolve(0);
    }
  };
  /** The batches up to `upTo` not yet finished. */
  const unfinished = (upTo: number) => {
    let count = 0;
    for (const batch of pending) {
      if (batch.seq > upTo) break;
      count++;
    }
    return count;
  };
  const tell = (message: string) => {
    try {
      logger.warn(message);
    } catch {
      // A logger that throws changes nothing.
    }
  };
  const countLost = (what: Receiver["kind"], type: SecurityEventType) => {
    if (lost === undefined) return;
    try {
      dropRejection(lost({ receiver: what, type }));
    } catch {
      // An observer never changes what the sink does.
    }
  };
  /** Starts following a delivery of `event` to `receiver`, part of `batch`, made at `now`. */
  const track = (receiver: Receiver, now: number, batch: Batch, event: SecurityEvent): Pending => {
    const { backlog } = receiver;
    sweep(receiver, now);
    const entry: Pending = { at: now, off: false, aged: false, batch, type: event.type };
    backlog.started.push(entry);
    backlog.live++;
    // A flush called before this delivery started (in the same step, or before a deferred task's
    // events) is woken when it is let go too.
    if (waiters.size !== 0) armAgeTimer();
    // Settled deliveries behind an unsettled one leave the front only at its pace (up to 60 s), and
    // those before `head` stay in the array until it empties: once they are most of it, they are
    // all dropped from it (amortized O(1) a delivery; the array grows only here).
    if (backlog.started.length > 2 * backlog.live + 1024) {
      backlog.started = backlog.started.slice(backlog.head).filter((e) => !e.off);
      backlog.head = 0;
    }
    return entry;
  };
  /**
   * Drops settled deliveries from the front, and lets go of those unfinished for
   * PENDING_DELIVERY_AGE_MS: off the count, counted lost, their batch's work finished (so neither
   * `live` nor the pending batches grow for a receiver that never settles; a clock set back ages
   * nothing), told in one line a minute at most. Each delivery leaves once: amortized O(1).
   */
  const sweep = (receiver: Receiver, now: number) => {
    const { backlog } = receiver;
    const { started } = backlog;
    let head = backlog.head;
    while (head < started.length) {
      const entry = started[head]!;
      if (!entry.off) {
        if (now - entry.at < PENDING_DELIVERY_AGE_MS) break;
        entry.off = true;
        entry.aged = true;
        backlog.live--;
        backlog.letGo++;
        countLost(receiver.kind, entry.type);
        finished(entry.batch);
      }
      head++;
    }
    if (head === started.length) {
      backlog.started = [];
      backlog.head = 0;
    } else backlog.head = head;
    if (backlog.letGo > 0 && (backlog.letGoToldAt === undefined || now - backlog.letGoToldAt >= PENDING_DELIVERY_AGE_MS || now < backlog.letGoToldAt)) {
      tell(`${receiver.name}: ${backlog.letGo} deliveries of security events still unfinished after 60 s were let go (counted in plantgate_events_lost_total)`);
      backlog.letGo = 0;
      backlog.letGoToldAt = now;
    }
  };
  const sweepAll = () => {
    let now: number | undefined;
    for (const receiver of list) if (receiver.backlog.live > 0) sweep(receiver, (now ??= clock()));
  };
  // While a settled() call waits, one timer lets go of the oldest unfinished delivery when it is
  // 60 s old, which wakes the call if that was what it waited for (a delivery is otherwise let go
  // only when another starts or a flush is called). Unref'd on Node: it keeps no process alive.
  let ageTimer: ReturnType<typeof setTimeout> | undefined;
  // When it is due (the sink's clock): one a second past due never fired (a Worker's request
  // context, and its timers, torn down) and is replaced.
  let ageTimerDue = 0;
  const armAgeTimer = () => {
    if (waiters.size === 0) return;
    if (ageTimer !== undefined) {
      if (clock() < ageTimerDue + 1000) return;
      clearTimeout(ageTimer);
      ageTimer = undefined;
    }
    let oldest = Infinity;
    for (const { backlog } of list) {
      const entry = backlog.started[backlog.head];
      if (backlog.live > 0 && entry !== undefined && !entry.off) oldest = Math.min(oldest, entry.at);
    }
    if (oldest === Infinity) return;
    // At most 60 s: a clock set back would otherwise put it days away.
    const now = clock();
    const delay = Math.min(PENDING_DELIVERY_AGE_MS, Math.max(0, oldest + PENDING_DELIVERY_AGE_MS - now));
    ageTimerDue = now + delay;
    ageTimer = setTimeout(() => {
      ageTimer = undefined;
      sweepAll();
      armAgeTimer();
    }, delay);
    (ageTimer as { unref?: () => void }).unref?.();
  };
  /**
   * Whether `event` is kept from a receiver whose backlog is full, or still more than half full
   * after a run of refusals (then counted lost; one line when a run starts, one when it ends).
   */
  const refuse = (receiver: Receiver, event: SecurityEvent): boolean => {
    const { backlog } = receiver;
    sweep(receiver, clock());
    if (backlog.refused > 0 ? backlog.live > resumeAt : backlog.live >= maxPending) {
      if (backlog.refused++ === 0) {
        tell(`${receiver.name}: ${maxPending} deliveries of security events unfinished; events are not handed to it until half of them finish (counted in plantgate_events_lost_total)`);
      }
      countLost(receiver.kind, event.type);
      return true;
    }
    if (backlog.refused > 0) {
      tell(`${receiver.name}: taking security events again; ${backlog.refused} were not handed to it`);
      backlog.refused = 0;
    }
    return false;
  };
  /** `counted`: a delivery let go at 60 s that fails later, already counted lost then. */
  const report = (receiver: Receiver | "defer", event: SecurityEvent | undefined, error: unknown, counted = false) => {
    const what = receiver === "defer" ? receiver : receiver.kind;
    // An AuditNotKeptError (of any copy of core): the store has said so itself (one line a run of
    // drops), not one a record. Read outside the log's guard: a hostile error still gets its line.
    const told = what === "audit" && isAuditNotKept(error);
    try {
      // Which hook of a composed one (`hook: "2 of 3"`, since 2026-12-03), when there are several.
      const of = receiver === "defer" ? undefined : receiver.of;
      if (what === "hook") logger.error("onEvent hook failed", { type: event!.type, id: event!.id, ...(of === undefined ? {} : { hook: of }), error: message(error) });
      else if (what === "audit") !told && logger.error("audit store append failed; event not kept", { type: event!.type, id: event!.id, error: message(error) });
      else logger.error("deferred security events failed; none recorded", { error: message(error) });
    } catch {
      // A logger that throws must not turn into an uncaught exception in a microtask.
    }
    // Counted (since 2026-12-03): a metric then shows what only a log line said.
    if (what !== "defer" && !counted) countLost(what, event!.type);
  };
  /**
   * Hands one event to one receiver; a throw or a rejection is reported, never thrown, and the
   * receiver's work counts as finished exactly once. No closure is made for a receiver that
   * answers at once (the logger, the metrics): this runs for every event of every request.
   */
  const deliver = (receiver: Receiver, event: SecurityEvent, batch: Batch) => {
    const { backlog } = receiver;
    if (backlog.live >= maxPending || backlog.refused > 0) {
      if (refuse(receiver, event)) return finished(batch);
    }
    let result: unknown;
    let later: boolean;
    // Called as a plain function (a hook's `this` is undefined, as it always was).
    const call = receiver.call;
    try {
      result = call(event);
      // Inside the try: a hostile result's `then` getter may throw.
      later = isThenable(result);
    } catch (error) {
      report(receiver, event, error);
      return finished(batch);
    }
    if (!later) return finished(batch);
    if (receiver.kind === "hook") return followHook(receiver, event, batch, result as PromiseLike<unknown>, 0, { left: MAX_HOOK_PARTS });
    follow(receiver, event, batch, result as PromiseLike<unknown>);
  };
  /**
   * A hook's thenable result, which may stand for several (`composedHookResult`, `eventHooks`):
   * then each part counts and is reported on its own, so one that never settles hides no other's
   * failure, and a part that is itself composed (`eventHooks` inside `eventHooks`) likewise, down
   * to MAX_HOOK_PART_DEPTH levels and MAX_HOOK_PARTS parts in all (past them, a result is followed
   * as one). The batch already counts this result once.
   */
  const followHook = (receiver: Receiver, event: SecurityEvent, batch: Batch, result: PromiseLike<unknown>, depth: number, budget: { left: number }) => {
    const parts = depth < MAX_HOOK_PART_DEPTH ? partsOf(receiver, event, result, budget) : undefined;
    if (parts === undefined) return follow(receiver, event, batch, result);
    // The combined result is its direct caller's (it rejects with the first failure): dropped.
    dropRejection(result);
    if (parts.length === 0) return finished(batch);
    batch.left += parts.length - 1;
    for (const part of parts) {
      let thenable: boolean;
      try {
        thenable = isThenable(part);
      } catch (error) {
        report(receiver, event, error);
        finished(batch);
        continue;
      }
      if (thenable) followHook(receiver, event, batch, part as PromiseLike<unknown>, depth + 1, budget);
      else finished(batch);
    }
  };
  /**
   * A copy of the parts a composed result carries (a host's own array may change while they are
   * followed), or undefined for any other result. Parts that cannot be read (a getter or a proxy
   * that throws) are reported, and the result is then followed as one, as are parts past the budget.
   */
  const partsOf = (receiver: Receiver, event: SecurityEvent, result: PromiseLike<unknown>, budget: { left: number }): unknown[] | undefined => {
    try {
      const parts = (result as { [HOOK_PARTS]?: unknown })[HOOK_PARTS];
      if (!Array.isArray(parts)) return undefined;
      const length: unknown = (parts as unknown[]).length;
      if (typeof length !== "number" || !Number.isSafeInteger(length) || length < 0 || length > budget.left) return undefined;
      budget.left -= length;
      // Index by index into an array of our own, up to the length checked: a proxy answering a
      // larger length the second time copies no more, and one whose `slice` species or iterator
      // answers something else is not asked (a `{}` species threw in the drain's microtask, an
      // unhandled rejection, until 2026-12-03).
      const copy: unknown[] = [];
      for (let i = 0; i < length; i++) copy.push((parts as unknown[])[i]);
      return copy;
    } catch (error) {
      report(receiver, event, error);
      return undefined;
    }
  };
  /** Waits for one receiver's thenable result: its rejection is reported, and it counts as finished exactly once. */
  const follow = (receiver: Receiver, event: SecurityEvent, batch: Batch, result: PromiseLike<unknown>) => {
    // A thenable's `then` may be hostile: it may throw, or call back more than once, or both.
    const { backlog } = receiver;
    const entry = track(receiver, clock(), batch, event);
    const once = () => {
      // Settled before, or aged out (its batch was finished then).
      if (entry.off) return;
      entry.off = true;
      backlog.live--;
      finished(batch);
    };
    try {
      result.then(once, (error: unknown) => {
        report(receiver, event, error, entry.aged);
        once();
      });
    } catch (error) {
      report(receiver, event, error);
      once();
    }
  };
  const handOver = (event: SecurityEvent, batch: Batch) => {
    for (const receiver of list) deliver(receiver, event, batch);
  };
  let queue: SecurityEvent[] = [];
  // The batch of the events in `queue` (set while the queue is not empty).
  let queued: Batch | undefined;
  const drain = () => {
    const events = queue;
    const batch = queued!;
    queue = [];
    queued = undefined;
    for (const event of events) handOver(event, batch);
  };
  const receivers = list.length;
  const enabled = receivers > 0;
  // Ids are made from a block of random bytes drawn for ID_BLOCK / 16 events at once.
  let idBytes: Uint8Array = new Uint8Array(0);
  let idAt = 0;
  const stamp = (partial: EventInput): SecurityEvent => {
    if (idAt + 16 > idBytes.length) {
      idBytes = random(ID_BLOCK);
      idAt = 0;
    }
    // The site's own object literal becomes the event (every site passes a fresh one, `type`
    // first, so a JSON line of the event starts with it): id and time are added after its
    // fields, and it is frozen. Copying its fields into a new object cost about three times as
    // much (Object.assign's generic copy), on every token request.
    const id = uuidV4At(idBytes, idAt);
    idAt += 16;
    const time = clock();
    let event = partial as Record<string, unknown>;
    const nested = (NESTED as Partial<Record<string, Readonly<Record<string, true>>>>)[partial.type];
    try {
      // Its arrays become frozen copies, so no receiver can reach what the site (its answer) holds.
      if (nested !== undefined) for (const key in nested) event[key] = frozenCopy(event[key]);
      event.id = id;
      event.time = time;
    } catch {
      // A frozen or sealed object (no site passes one): stamped on a copy instead.
      event = { ...partial, id, time };
      if (nested !== undefined) for (const key in nested) event[key] = frozenCopy(event[key]);
    }
    return Object.freeze(event) as unknown as SecurityEvent;
  };
  const backlog = (): EventBacklogReading => {
    // Deliveries 60 s old are let go first (counted lost, told in a line), as the next event would.
    sweepAll();
    const reading = { hook: 0, audit: 0 };
    for (const receiver of list) reading[receiver.kind] += receiver.backlog.live;
    return reading;
  };
  if (watch !== undefined && enabled) {
    try {
      dropRejection(watch(backlog));
    } catch {
      // An observer never changes what the sink does.
    }
  }
  return {
    enabled,
    backlog,
    emit(partial) {
      if (!enabled) return;
      const event = stamp(partial);
      if (queue.push(event) === 1) {
        queued = { left: 0, seq: ++made };
        pending.add(queued);
        void RESOLVED.then(drain);
      }
      queued!.left += receivers;
    },
    defer(task) {
      // Nothing listens: the task's events are dropped (a rejection too, never left unhandled).
      if (!enabled) return void task.then(undefined, () => undefined);
      // The task itself counts until it settles; its events join its batch before that.
      const batch: Batch = { left: 1, seq: ++made };
      pending.add(batch);
      task.then(
        (inputs) => {
          try {
            for (const input of inputs) {
              const event = stamp(input);
              batch.left += receivers;
              handOver(event, batch);
            }
          } catch (error) {
            // A clock or random source that throws: reported; the batch still finishes.
            report("defer", undefined, error);
          } finally {
            finished(batch);
          }
        },
        (error: unknown) => {
          report("defer", undefined, error);
          finished(batch);
        },
      );
    },
    get waiting() {
      return waiters.size;
    },
    settled(timeoutMs = 0) {
      if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > 2_147_483_647) throw new TypeError("settled(timeoutMs): timeoutMs must be an integer from 0 (no bound) to 2147483647");
      // Deliveries 60 s old are not waited for (they may never settle).
      sweepAll();
      if (pending.size === 0) return Promise.resolve(0);
      // Every batch made so far: those of them still pending are what this call waits for.
      const upTo = made;
      return new Promise<number>((resolve) => {
        const waiter: Waiter = { upTo, resolve, timer: undefined };
        waiters.add(waiter);
        armAgeTimer();
        if (timeoutMs === 0) return;
        waiter.timer = setTimeout(() => {
          // Still here: not woken (a woken waiter's timer is cleared). A delivery let go by now is not counted.
          sweepAll();
          if (!waiters.delete(waiter)) return;
          resolve(unfinished(upTo));
        }, timeoutMs);
      });
    },
  };
}

/** One receiver of events: the audit store, or the hook (each hook of a composed one). */
interface Receiver {
  kind: "hook" | "audit";
  /** What its backlog lines call it. */
  name: string;
  /** Which hook of a composed one (`2 of 3`), when there are several. */
  of?: string;
  call: (event: SecurityEvent) => unknown;
  backlog: Backlog;
}

/** One receiver's unfinished deliveries (see `track` and `sweep` in {@link createEventSink}). */
interface Backlog {
  /** Deliveries unfinished and younger than PENDING_DELIVERY_AGE_MS. */
  live: number;
  /** Events not handed over in the current run of refusals (0: none). */
  refused: number;
  /** Deliveries in the order they started, from `head` on; finished or aged ones leave from the front. */
  started: Pending[];
  head: number;
  /** Deliveries let go (unfinished at 60 s) not yet told in a line, and when the last line was. */
  letGo: number;
  letGoToldAt: number | undefined;
}

/** One delivery being followed. */
interface Pending {
  at: number;
  /** Settled, or let go: counted off `live` and its batch's work once. */
  off: boolean;
  /** Let go at 60 s (counted lost then). */
  aged: boolean;
  batch: Batch;
  type: SecurityEventType;
}

const newBacklog = (): Backlog => ({ live: 0, refused: 0, started: [], head: 0, letGo: 0, letGoToldAt: undefined });

/** Work handed over together: the events of one step, or one deferred task and its events. */
interface Batch {
  /** Receiver calls (and a deferred task) not yet finished. */
  left: number;
  /** Its number: batches are numbered in the order they are made, from 1. */
  seq: number;
}

/** A `settled()` call still waiting: for the batches numbered up to `upTo`. */
interface Waiter {
  upTo: number;
  resolve: (unfinished: number) => void;
  /** Its bound's timer, when it has one. */
  timer: ReturnType<typeof setTimeout> | undefined;
}
