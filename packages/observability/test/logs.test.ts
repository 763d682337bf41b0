/** JSON-line logs: one object per line, `event` for events, levels from the environment. */
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { ConfigError } from "@plantgate/core";
import { coreLogger, createLog, eventLogger, observabilityFromEnv, setupObservability } from "../src/index.js";

function sink() {
  const lines: string[] = [];
  let buffer = "";
  const stream = new Writable({
    write(chunk, _enc, done) {
      buffer += String(chunk);
      const parts = buffer.split("\n");
      buffer = parts.pop()!;
      lines.push(...parts);
      done();
    },
  });
  return { stream, lines, objects: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe("logs", () => {
  it("writes events as JSON lines with a string member event, failures at warn", () => {
    const out = sink();
    const log = createLog({ destination: out.stream });
    const onEvent = eventLogger(log);
    onEvent({ type: "token.issued", time: "2026-01-01T00:00:00.000Z", id: "e1", grantType: "client_credentials", clientId: "reporting" });
    onEvent({ type: "client.authentication_failed", time: "2026-01-01T00:00:01.000Z", id: "e2", clientId: "reporting", reason: "bad_secret" });
    const [a, b] = out.objects();
    expect(a).toEqual({
      level: "info",
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      event: "token.issued",
      eventTime: "2026-01-01T00:00:00.000Z",
      id: "e1",
      grantType: "client_credentials",
      clientId: "reporting",
      msg: "token.issued",
    });
    expect(b).toMatchObject({ level: "warn", event: "client.authentication_failed", reason: "bad_secret" });
    expect(out.lines).toHaveLength(2);
  });

  it("redacts credential-named fields should one ever reach a line", () => {
    const out = sink();
    coreLogger(createLog({ destination: out.stream })).error("boom", { password: "hunter2", client_secret: "s3cret", detail: "x" });
    expect(out.objects()[0]).toMatchObject({ level: "error", msg: "boom", password: "[redacted]", client_secret: "[redacted]", detail: "x" });
    expect(out.lines[0]).not.toContain("hunter2");
  });

  it("PLANTGATE_LOG_LEVEL sets the level; PLANTGATE_METRICS_PORT turns metrics on", () => {
    expect(observabilityFromEnv({})).toEqual({ logLevel: "info", metricsPort: null });
    expect(observabilityFromEnv({ PLANTGATE_LOG_LEVEL: "warn", PLANTGATE_METRICS_PORT: "9464" })).toEqual({ logLevel: "warn", metricsPort: 9464 });
    expect(() => observabilityFromEnv({ PLANTGATE_LOG_LEVEL: "loud" })).toThrow(ConfigError);
    expect(() => observabilityFromEnv({ PLANTGATE_LOG_LEVEL: "loud" })).toThrow('PLANTGATE_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent, got "loud"');
    expect(() => observabilityFromEnv({ PLANTGATE_METRICS_PORT: "70000" })).toThrow('PLANTGATE_METRICS_PORT must be a port number 0-65535, got "70000"');
    const out = sink();
    const obs = setupObservability({ logLevel: "warn", metricsPort: null }, { destination: out.stream });
    obs.options.onEvent({ type: "token.issued", id: "e1" });
    obs.options.onEvent({ type: "account.login_failed", id: "e2", username: "alice", reason: "bad_password" });
    expect(out.objects().map((o) => o.event)).toEqual(["account.login_failed"]);
    expect(obs.metrics).toBeNull();
    expect(obs.options.observer).toBeUndefined();
  });
});
