/** Child spans around the steps worth timing (client authentication, the grant, signing). */
import type { SpanAttributeValue, Tracer } from "./types.js";

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
 * Runs `fn` inside an active span named `name` when a tracer is configured; without one it is
 * `fn()` and nothing else. A throw marks the span as an error with `error.type` and is rethrown.
 */
export function inSpan<T>(tracer: Tracer | undefined, name: string, attributes: Record<string, SpanAttributeValue> | undefined, fn: () => Promise<T>): Promise<T> {
  if (tracer === undefined) return fn();
  return tracer.startActiveSpan(name, attributes ? { attributes } : {}, async (span) => {
    try {
      return await fn();
    } catch (error) {
      span.setAttribute("error.type", errorType(error));
      span.setStatus({ code: SPAN_ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * The global `performance`, read once: on Node it is an accessor on globalThis, so each
 * `performance.now()` on the request path (request and storage timings) also ran its getter.
 */
export const perf = performance;
