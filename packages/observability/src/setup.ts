/** The logs and metrics of a Node server in one call: what the example servers use. */
import type { Logger as Pino } from "pino";
import { composedEventHook, composedHookResult, ConfigError, dropRejection, type EventHook, type Logger, type Observer, type SecurityEvent } from "@plantgate/core";
import type { ObservabilitySettings } from "./env.js";
import { coreLogger, createLog, eventLogger, pruneLogger } from "./logs.js";
import { createMetrics, serveMetrics, type MetricsListener, type PlantgateMetrics } from "./metrics.js";

/** What {@link setupObservability} returns. */
export interface Observability {
  /** The JSON-line logger (for the host's own lines). */
  log: Pino;
  /** The metrics, or null when no metrics port was set. */
  metrics: PlantgateMetrics | null;
  /** To spread into `createPlantgate(...)`: the logger, the event hook, and the observer when metrics are on. */
  options: { logger: Logger; onEvent: (event: SecurityEvent) => void; observer?: Observer };
  /** For `schedulePrune(admin, { logger })`. */
  pruneLogger: ReturnType<typeof pruneLogger>;
  /**
   * Starts the metrics listener on `host` and the configured port; null when metrics are off.
   * Rejects with a `ConfigError` naming `PLANTGATE_METRICS_PORT` when it cannot listen (the port in use, by `PORT` too).
   */
  serveMetrics(host: string): Promise<MetricsListener | null>;
}

/**
 * Logs (always) and metrics (with a port) as the settings say.
 *
 * @example
 * const obs = setupObservability(observabilityFromEnv(process.env));
 * const app = createPlantgate({ ...obs.options });
 * const listener = await obs.serveMetrics("127.0.0.1");
 */
export function setupObservability(settings: ObservabilitySettings, options: { destination?: { write(line: string): void } } = {}): Observability {
  const log = createLog({ level: settings.logLevel, ...(options.destination ? { destination: options.destination } : {}) });
  const metrics = settings.metricsPort === null ? null : createMetrics();
  const logEvent = eventLogger(log);
  const onEvent = metrics
    ? (event: SecurityEvent) => {
        metrics.countEvent(event);
        logEvent(event);
      }
    : logEvent;
  return {
    log,
    metrics,
    options: { logger: coreLogger(log), onEvent, ...(metrics ? { observer: metrics.observer } : {}) },
    pruneLogger: pruneLogger(log),
    serveMetrics: async (host) => {
      if (metrics === null || settings.metricsPort === null) return null;
      try {
        return await serveMetrics(metrics, { port: settings.metricsPort, host });
      } catch (error) {
        // Node's "listen EADDRINUSE: address already in use 127.0.0.1:3000" did not say which of the
        // server's two ports it was (PLANTGATE_METRICS_PORT equal to PORT gave exactly that).
        const reason = error instanceof Error ? error.message : String(error);
        throw new ConfigError(`PLANTGATE_METRICS_PORT ${settings.metricsPort}: the metrics listener could not start (${reason})`);
      }
    },
  };
}

/**
 * One `onEvent` hook that hands each event to every hook given, in order: each runs even when one
 * before it throws or rejects, and the result settles once every hook has, rejecting with the
 * first failure in the order given (for a direct caller). Plantgate calls each hook itself
 * (`composedEventHook`): `flushEvents` waits for every one, each failure is logged on its own as it
 * happens (`onEvent hook failed`; until 2026-12-03 plantgate saw the combined result alone, so a
 * hook that never settled hid every other hook's failure, and of several failures only the first
 * was logged), and each has its own backlog bound (`maxPendingEventDeliveries`), so a webhook that
 * hangs holds back no other hook. For a host's own hook beside {@link Observability.options}' (the example
 * servers' `startServer(env, { onEvent })`): an `onEvent` in the overrides replaced theirs until
 * 2026-12-01, and the events' JSON lines and the lock-out and reuse counters stopped without a word.
 *
 * @example
 * const obs = setupObservability(observabilityFromEnv(process.env));
 * createPlantgate({ ...obs.options, onEvent: eventHooks(obs.options.onEvent, (event) => queue.push(event)) });
 */
export function eventHooks(...hooks: EventHook[]): EventHook {
  // Plantgate calls each hook itself (`composedEventHook`): each with a backlog of its own.
  return composedEventHook((event) => {
    const runs = hooks.map((hook) => {
      try {
        return Promise.resolve(hook(event));
      } catch (error) {
        return Promise.reject(error);
      }
    });
    // For a direct caller: settled only once every hook has, then the first failure in the order
    // given. Plantgate follows `runs` one by one instead (and drops this one's rejection).
    const combined = Promise.allSettled(runs).then((results) => {
      for (const result of results) if (result.status === "rejected") throw result.reason;
    });
    return composedHookResult(combined, runs);
  }, hooks);
}

/** Calls one observer hook: neither its throw nor an `async` one's rejection reaches the others or core. */
function observe<T>(hook: ((o: T) => unknown) | undefined, o: T): void {
  if (hook === undefined) return;
  try {
    dropRejection(hook(o));
  } catch {
    // An observer never changes an answer, nor keeps the next one from seeing it.
  }
}

/**
 * One `observer` that hands each request, storage and lost-event observation (and an app's reader of its
 * unfinished event deliveries) to every observer given, in
 * order, each with its own guard (a throw or rejection of one keeps none of the others from
 * seeing it). A hook none of them has stays absent, so core wraps no storage for it. For a host's
 * own observer beside {@link Observability.options}' metrics (the example servers'
 * `startServer(env, { observer })`): an `observer` in the overrides replaced the metrics' until
 * 2026-12-02, and the request, token and storage series stopped without a word while `/metrics`
 * still answered.
 *
 * @example
 * const obs = setupObservability(observabilityFromEnv(process.env));
 * createPlantgate({ ...obs.options, observer: observers(obs.options.observer, { request: (o) => statsd.timing(o.route, o.durationMs) }) });
 */
export function observers(...list: (Observer | undefined)[]): Observer {
  const given = list.filter((o): o is Observer => o !== undefined);
  const hooks = <K extends keyof Observer>(name: K): NonNullable<Observer[K]>[] =>
    given.flatMap((o) => {
      const hook: unknown = o[name];
      if (hook === undefined) return [];
      // As createPlantgate refuses one, rather than a TypeError on the first request.
      if (typeof hook !== "function") throw new TypeError(`observer.${name} must be a function`);
      return [hook.bind(o) as NonNullable<Observer[K]>];
    });
  const requests = hooks("request");
  const storage = hooks("storage");
  // Since 2026-12-03, with the hook itself: lost events reach every observer that counts them.
  const lost = hooks("eventLost");
  // Since 2026-12-03: each observer is handed the app's reader of its unfinished deliveries.
  const backlog = hooks("eventBacklog");
  return {
    ...(requests.length > 0 ? { request: (o) => { for (const hook of requests) observe(hook, o); } } : {}),
    ...(storage.length > 0 ? { storage: (o) => { for (const hook of storage) observe(hook, o); } } : {}),
    ...(lost.length > 0 ? { eventLost: (o) => { for (const hook of lost) observe(hook, o); } } : {}),
    ...(backlog.length > 0 ? { eventBacklog: (read) => { for (const hook of backlog) observe(hook, read); } } : {}),
  };
}
