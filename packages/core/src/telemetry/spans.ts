/** Child spans around the steps worth timing (client authentication, the grant, signing). */
import type { SpanAttributeValue, TraceSpan, TraceSpanOptions, Tracer } from "./types.js";
import { dropRejection } from "../util/thenable.js";

/** OpenTelemetry's `SpanStatusCode.ERROR`. */
export const SPAN_ERROR = 2;

/**
 * The `error.type` of a failure: an OAuth or API error's code, else the error's class name
 * (never its message, which may carry what a backend said). Either is taken only when it is a short
 * token, 1 to 64 of `A-Z a-z 0-9 _ . -` (`invalid_client`, `1503`, `23505`, `ER_DUP_ENTRY`,
 * `StorageError`); anything else (a custom storage passing on a driver error whose `code` is free
 * text, a name with spaces) is not cut down but left out, and the next candidate (the name, then
 * `_OTHER`) is used: a prefix of free text could still hold what it quoted. Before 2026-11-30 a
 * `code` went into the span attribute whatever its length or content.
 */
export function errorType(error: unknown): string {
  if (typeof error === "object" && error !== null) {
    const code = (error as { code?: unknown }).code;
    if ((typeof code === "string" || typeof code === "number") && ERROR_TYPE.test(String(code))) return String(code);
    const name = (error as { name?: unknown }).name;
    if (typeof name === "string" && ERROR_TYPE.test(name)) return name;
  }
  return "_OTHER";
}

/** What an `error.type` may be: a short token of a fixed alphabet (no spaces, `:`, `/` or `@`: no sentence, no URL). */
const ERROR_TYPE = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * `tracer.startActiveSpan(name, options, fn)`, except that a tracer never changes an answer:
 * - a throw before `fn` runs (the OpenTelemetry SDK runs span processors' `onStart` inside it, and
 *   passes their throw on) runs `fn` without a span (`undefined`);
 * - a throw after `fn` returned (a tracer failing on its way out, e.g. restoring the context) is
 *   dropped and `fn`'s result is returned (before 2026-11-30 it replaced that result);
 * - `fn`'s own synchronous throw is passed on, and `fn` is not run a second time.
 */
export function activeSpan<T>(tracer: Tracer, name: string, options: TraceSpanOptions, fn: (span: TraceSpan | undefined) => T): T {
  // 0: fn not entered; 1: fn entered (and threw, if still 1 in the catch); 2: fn returned `result`.
  let stage = 0;
  let result: T;
  try {
    return tracer.startActiveSpan(name, options, (span) => {
      stage = 1;
      result = fn(span);
      stage = 2;
      return result;
    });
  } catch (error) {
    if (stage === 2) return result!;
    if (stage === 1) throw error;
    return fn(undefined);
  }
}

/** Runs a span call (`end`, `setAttribute`, ...), ignoring a throw: the SDK runs processors' `onEnd` inside `end()`. */
export function quietly(call: () => unknown): void {
  try {
    dropRejection(call());
  } catch {
    // A tracer never changes an answer.
  }
}

/**
 * Runs `fn` inside an active span named `name` when a tracer is configured; without one it is
 * `fn()` and nothing else. A throw marks the span as an error with `error.type` and is rethrown.
 * A span call that throws (a span processor's `onStart` or `onEnd`) is ignored: `fn`'s outcome
 * is the answer, as without a tracer (before 2026-11-30 it became a 500). `fn` is given the span
 * (undefined without one), for an attribute known only once the step is under way; it sets it
 * through `quietly`.
 */
export function inSpan<T>(
  tracer: Tracer | undefined,
  name: string,
  attributes: Record<string, SpanAttributeValue> | undefined,
  fn: (span: TraceSpan | undefined) => Promise<T>,
): Promise<T> {
  if (tracer === undefined) return fn(undefined);
  return activeSpan(tracer, name, attributes ? { attributes } : {}, async (span) => {
    if (span === undefined) return fn(undefined);
    try {
      return await fn(span);
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
