/**
 * What plantgate reports about its own work, for hosts that count or trace it: the `tracer` and
 * `observer` options. Types only. The tracer shapes are the subset of `@opentelemetry/api`'s
 * `Tracer` and `Span` that plantgate calls, written out here so the core neither imports nor
 * type-depends on that package: an OpenTelemetry tracer fits them as it is (see the README
 * section "Tracing").
 */

import type { SecurityEventType } from "../events/types.js";

/** A span attribute value (OpenTelemetry's primitive `AttributeValue`s). */
export type SpanAttributeValue = string | number | boolean;

/** The part of an OpenTelemetry `Span` plantgate uses. */
export interface TraceSpan {
  setAttribute(key: string, value: SpanAttributeValue): unknown;
  /** `code`: 0 unset, 1 ok, 2 error (OpenTelemetry's `SpanStatusCode`). */
  setStatus(status: { code: 0 | 1 | 2; message?: string }): unknown;
  updateName(name: string): unknown;
  end(): void;
}

/** Options of a span: `kind` 0 internal, 1 server (OpenTelemetry's `SpanKind`). */
export interface TraceSpanOptions {
  kind?: 0 | 1 | 2 | 3 | 4;
  attributes?: Record<string, SpanAttributeValue>;
  /** A span of its own trace, whatever the active context holds. */
  root?: boolean;
}

/**
 * The part of an OpenTelemetry `Tracer` plantgate uses: `trace.getTracer("plantgate")` from
 * `@opentelemetry/api` is one. Spans are started active, so they nest under the host's current
 * span and under each other through the host's context manager (the OpenTelemetry Node SDK
 * registers one; so does a Workers OpenTelemetry setup).
 */
export interface Tracer {
  startActiveSpan<T>(name: string, options: TraceSpanOptions, fn: (span: TraceSpan) => T): T;
}

/**
 * One answered request, as the `observer.request` hook receives it after the answer is ready.
 * Every label is drawn from a small fixed set, so it can become a metric label as it is: never a
 * client id, username, address or raw path.
 */
export interface RequestObservation {
  /**
   * The route template, base path included: a route's path (`/UserService/connect/token`, or
   * `/auth/UserService/connect/token` under `basePath: "/auth"`), a mount (`/console`, `/docs`),
   * an RFC 8414 §3.1 metadata path as it is (`/.well-known/oauth-authorization-server/auth`, and
   * the issuer URL's path in place of the base path's), or `unmatched` (the 404 of a path
   * plantgate does not serve).
   */
  route: string;
  /** The request method if a standard one (GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS), else `_OTHER`. */
  method: string;
  /** The answer's status code. */
  status: number;
  /** Milliseconds from the request reaching plantgate to the answer being ready (body included). */
  durationMs: number;
  /**
   * Token endpoint: the `grant_type` if plantgate supports it, `unsupported` for another value,
   * `none` when absent or when the form could not be read. Revocation and introspection: `none`
   * for a client's lock-out refusal (with `result` `locked_out`; a token request refused before
   * its client is checked never has that pair). Undefined otherwise.
   */
  grantType: string | undefined;
  /**
   * Token endpoint: `success`, or the OAuth error code of the answer (`invalid_client`,
   * `invalid_grant`, ...), or `locked_out` for a brute-force refusal. Revocation and introspection:
   * `locked_out` for a client's lock-out refusal. Undefined otherwise.
   */
  result: string | undefined;
}

/** One storage call, as the `observer.storage` hook receives it when it has settled. */
export interface StorageObservation {
  /** The store (`clients`, `accounts`, `refreshTokens`, ...). */
  store: string;
  /** The method called (`get`, `consume`, ...). */
  operation: string;
  durationMs: number;
  /** Whether the call threw or rejected. */
  failed: boolean;
}

/**
 * Hooks that receive what happened, synchronously, after it happened: for metrics. They must be
 * cheap and must not throw (a throw is caught and dropped: it never changes an answer).
 *
 * @example
 * createPlantgate({ observer: { request: (o) => counter.inc({ route: o.route, status: o.status }) } });
 */
export interface Observer {
  request?(observation: RequestObservation): void;
  storage?(observation: StorageObservation): void;
  /**
   * A security event a receiver did not take (since 2026-12-03): the `onEvent` hook threw or
   * rejected, or the audit store's append failed (a rejection, an `AuditNotKeptError` among them).
   * Each such event is also logged, but for an `AuditNotKeptError` (the store said so itself).
   */
  eventLost?(observation: EventLossObservation): void;
  /**
   * Called once when an app is made that has a receiver of security events (an `onEvent` hook,
   * an audit store), with a function that reads, at the moment it is called, how many deliveries
   * to them are unfinished: what `plantgate_event_deliveries_pending` serves (since 2026-12-03).
   * Reading first lets go of deliveries unfinished for 60 s (counted lost, as they would be at the
   * next event). Each receiver's own count stays at or under `maxPendingEventDeliveries` (but a
   * result made with `composedHookResult`, which may pass it by its parts); `hook` sums the hooks
   * of a composed one, so it may reach that bound once for each. Keep the function only as long as
   * the app: it holds the app's event sink.
   */
  eventBacklog?(read: () => EventBacklogReading): void;
}

/** The unfinished deliveries of security events of one app, by receiver, as {@link Observer.eventBacklog}'s function reads them. */
export interface EventBacklogReading {
  /** To the `onEvent` hook (each hook of a composed one counted: the sum over them). */
  hook: number;
  /** To the audit store. */
  audit: number;
}

/** One security event a receiver did not take, as the `observer.eventLost` hook receives it. */
export interface EventLossObservation {
  /** `hook`: the `onEvent` hook (each part of a composed hook on its own); `audit`: the audit store. */
  receiver: "hook" | "audit";
  /** The event's type. */
  type: SecurityEventType;
}

/** The telemetry options of `createPlantgate` (part of `PlantgateOptions`). */
export interface TelemetryOptions {
  /**
   * An OpenTelemetry tracer (`trace.getTracer("plantgate")` from `@opentelemetry/api`): a server
   * span per request and child spans for client authentication, the grant, signing and every
   * storage call. Default: none, and then no span work at all. See the README section "Tracing".
   */
  tracer?: Tracer;
  /**
   * Hooks called after each request and each storage call with low-cardinality facts (route,
   * status, grant type, result, durations): what `@plantgate/observability` counts for
   * Prometheus. Default: none, and then nothing is timed.
   */
  observer?: Observer;
}

/** Checks the telemetry options at construction. */
export function checkTelemetryOptions(options: TelemetryOptions): void {
  if (options.tracer !== undefined && typeof (options.tracer as { startActiveSpan?: unknown })?.startActiveSpan !== "function") {
    throw new TypeError("tracer must be an OpenTelemetry Tracer (with startActiveSpan)");
  }
  const observer = options.observer as Record<string, unknown> | undefined;
  if (observer === undefined) return;
  if (typeof observer !== "object" || observer === null) throw new TypeError("observer must be an object of hooks");
  for (const hook of ["request", "storage", "eventLost", "eventBacklog"]) {
    if (observer[hook] !== undefined && typeof observer[hook] !== "function") throw new TypeError(`observer.${hook} must be a function`);
  }
}
