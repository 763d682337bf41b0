// The full Worker: the API reference page at /docs and the console's page (the console itself is on
// with PLANTGATE_CONSOLE=1). For the minimal Worker, drop both: `export default createWorker();`
import { createWorker, type CreateWorkerOptions } from "@plantgate/cloudflare";
import { consolePage } from "@plantgate/console";
import { swaggerUi } from "@plantgate/docs";

type SecurityEvent = Parameters<NonNullable<CreateWorkerOptions["onEvent"]>>[0];
// Workers Logs reads a JSON object per console.log call: security events as one line each, with
// `event` (the type) first, as the Node example servers write them; errors and warnings likewise.
const line = (level: string, fields: Record<string, unknown>) => JSON.stringify({ level, time: new Date().toISOString(), ...fields });
const FAILURES = new Set(["client.authentication_failed", "account.login_failed", "account.locked_out", "refresh_token.reuse_detected"]);
function logEvent(event: SecurityEvent): void {
  const { type, time, ...fields } = event;
  console.log(line(FAILURES.has(type) ? "warn" : "info", { event: type, event_time: time, ...fields }));
}
const logger = {
  error: (msg: string, context?: Record<string, unknown>) => console.error(line("error", { msg, ...context })),
  warn: (msg: string, context?: Record<string, unknown>) => console.warn(line("warn", { msg, ...context })),
};

export default createWorker({ docs: swaggerUi(), console: { enabled: false, page: consolePage() }, onEvent: logEvent, logger });
