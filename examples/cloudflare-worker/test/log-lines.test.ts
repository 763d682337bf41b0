/**
 * The example Worker's log lines (its `onEvent` and `logger`), run in Node: `createWorker` is
 * replaced by one that hands back the options it was given, and console.log/warn/error are
 * captured. The line's own members (`level`, `time`, and `event`, `event_time` or `msg`) come first
 * and keep their values whatever the event or the context holds: until 2026-12-02 the fields were
 * spread after them, so a field named `level`, `event` or `msg` replaced the line's own.
 */
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import type { CreateWorkerOptions } from "@plantgate/cloudflare";

vi.mock("@plantgate/cloudflare", () => ({ createWorker: (options: CreateWorkerOptions) => ({ options }) }));
vi.mock("@plantgate/console", () => ({ consolePage: () => ({}) }));
vi.mock("@plantgate/docs", () => ({ swaggerUi: () => ({}) }));

const { options } = (await import("../src/index.js")).default as unknown as { options: CreateWorkerOptions };
type SecurityEvent = Parameters<NonNullable<CreateWorkerOptions["onEvent"]>>[0];

const lines: string[] = [];
beforeEach(() => {
  vi.useFakeTimers({ now: Date.UTC(2026, 11, 2, 10, 0, 0) });
  for (const method of ["log", "warn", "error"] as const) vi.spyOn(console, method).mockImplementation((text: unknown) => void lines.push(`${method} ${String(text)}`));
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
  lines.length = 0;
});

it("an event's line: level, time, event and event_time first and the Worker's own, whatever fields the event holds (a field so named replaced them)", async () => {
  const plain = { type: "token.issued", id: "e1", time: 1_700_000_000_000, grant_type: "client_credentials", client_id: "c", subject: "client:c", scope: "s", jti: "j" } as unknown as SecurityEvent;
  await options.onEvent!(plain);
  // An event with fields named like the line's own members (none of core's types has one today).
  const clashing = { type: "account.login_failed", id: "e2", time: 1_700_000_000_001, username: "u", level: "debug", event: "token.issued", event_time: 0, msg: "m" } as unknown as SecurityEvent;
  await options.onEvent!(clashing);
  expect(lines).toEqual([
    'log {"level":"info","time":"2026-12-02T10:00:00.000Z","event":"token.issued","event_time":1700000000000,"id":"e1","grant_type":"client_credentials","client_id":"c","subject":"client:c","scope":"s","jti":"j"}',
    'log {"level":"warn","time":"2026-12-02T10:00:00.000Z","event":"account.login_failed","event_time":1700000000001,"id":"e2","username":"u","msg":"m"}',
  ]);
});

it("an error's or warning's line: level, time and msg first and the Worker's own, whatever the context holds", () => {
  options.logger!.error("storage failed", { name: "StorageError", level: "info", time: "then", msg: "other" });
  options.logger!.warn("keys in clear", { level: "error" });
  expect(lines).toEqual([
    'error {"level":"error","time":"2026-12-02T10:00:00.000Z","msg":"storage failed","name":"StorageError"}',
    'warn {"level":"warn","time":"2026-12-02T10:00:00.000Z","msg":"keys in clear"}',
  ]);
});
