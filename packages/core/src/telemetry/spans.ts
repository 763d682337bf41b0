/** Child spans around the steps worth timing (client authentication, the grant, signing). */
import type { SpanAttributeValue, TraceSpan, TraceSpanOptions, Tracer } from "./types.js";

/** OpenTelemetry's `SpanStatusCode.ERROR`. */
export const SPAN_ERROR = 2;

/**
 * The `error.type` of a failure: an OAuth or API error's code, else the error's class name
 * (never its message, which may carry what a backend said).
 */
export function errorType(error: unknown): string {
  if (typeof error === "object" && error !== null) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string" || typeof code === "number") return String(code);
    const name = (error as { name?: unknown }).name;
    if (typeof name === "string" && name.length <= 64) return name;
  }
  return "_OTHER";
}

/**
 * `tracer.startActiveSpan(name, options, fn)`, except that a tracer that throws before `fn` runs
 * (the OpenTelemetry SDK runs span processors' `onStart` inside it, and passes their throw on) runs
 * `fn` without a span (`undefined`): a tracer never changes an answer. A throw after `fn` ran is
 * `fn`'s own, and is passed on.
 */
export function activeSpan<T>(tracer: Tracer, name: string, options: TraceSpanOptions, fn: (span: TraceSpan | undefined) => T): T {
  let entered = false;
  try {
    return tracer.startActiveSpan(name, options, (span) => {
      entered = true;
      return fn(span);
    });
  } catch (error) {
    if (entered) throw error;
    return fn(undefined);
  }
}

/** Runs a span call (`end`, `setAttribute`, ...), ignoring a throw: the SDK runs processors' `onEnd` inside `end()`. */
export function quietly(call: () => unknown): void {
  try {
    call();
  } catch {
    // A tracer never changes an answer.
  }
}

/**
 * Runs `fn` inside an active span named `name` when a tracer is configured; without one it is
 * `fn()` and nothing else. A throw marks the span as an error with `error.type` and is rethrown.
 * A span call that throws (a span processor's `onStart` or `onEnd`) is ignored: `fn`'s outcome
 * is the answer, as without a tracer (before 2026-11-30 it became a 500).
 */
export function inSpan<T>(tracer: Tracer | undefined, name: string, attributes: Record<string, SpanAttributeValue> | undefined, fn: () => Promise<T>): Promise<T> {
  if (tracer === undefined) return fn();
  return activeSpan(tracer, name, attributes ? { attributes } : {}, async (span) => {
    if (span === undefined) return fn();
    try {
      return await fn();
    } catch (error) {
      quietly(() => {
        span.setAttribute("error.type", errorType(error));
        span.setStatus({ code: SPAN_ERROR });
      });
      throw error;
    } finally {
      quietly(() => span.end());
    }
  });
}

/**
 * The global `performance`, read once: on Node it is an accessor on globalThis, so each
 * `performance.now()` on the request path (request and storage timings) also ran its getter.
 */
export const perf = performance;
