// The full Worker: the API reference page at /docs and the console's page (the console itself is on
// with PLANTGATE_CONSOLE=1). For the minimal Worker, drop both: `export default createWorker();`
import { createWorker, type CreateWorkerOptions } from "@plantgate/cloudflare";
import { consolePage } from "@plantgate/console";
import { swaggerUi } from "@plantgate/docs";

type SecurityEvent = Parameters<NonNullable<CreateWorkerOptions["onEvent"]>>[0];
// Workers Logs reads a JSON object per console.log call: security events as one line each, with
// `event` (the type) first, as the Node example servers write them; errors and warnings likewise.
// The line's own members come first and are set again after the fields: until 2026-12-02 the fields
// were spread after them, so an event or context field named `level`, `time`, `event`, `event_time`
// or `msg` replaced the line's own (a field so named is left out now; no event type has one).
const line = (level: string, own: Record<string, unknown>, fields: Record<string, unknown> = {}) => {
  const head = { level, time: new Date().toISOString(), ...own };
  return JSON.stringify(Object.assign({ ...head, ...fields }, head));
};
const FAILURES = new Set(["client.authentication_failed", "account.login_failed", "account.locked_out", "refresh_token.reuse_detected"]);
function logEvent(event: SecurityEvent): void {
  const { type, time, ...fields } = event;
  console.log(line(FAILURES.has(type) ? "warn" : "info", { event: type, event_time: time }, fields));
}
const logger = {
  error: (msg: string, context?: Record<string, unknown>) => console.error(line("error", { msg }, context)),
  warn: (msg: string, context?: Record<string, unknown>) => console.warn(line("warn", { msg }, context)),
};

export default createWorker({ docs: swaggerUi(), console: { enabled: false, page: consolePage() }, onEvent: logEvent, logger });
