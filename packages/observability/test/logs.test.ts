/** JSON-line logs: one object per line, `event` for events, levels from the environment. */
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { pino } from "pino";
import { ConfigError, type SecurityEvent } from "@plantgate/core";

const ISSUED: SecurityEvent = {
  type: "token.issued",
  id: "0b6a3c52-7a53-4f7e-9d47-3e1f8f0c2a11",
  time: 1767225600000,
  grant_type: "client_credentials",
  client_id: "reporting",
  subject: "client:reporting",
  scope: "Platform_UserAPIs",
  jti: "jti-1",
  expires_at: 1767232800000,
  family_id: null,
  client_ip: "203.0.113.7",
};
const AUTH_FAILED: SecurityEvent = {
  type: "client.authentication_failed",
  id: "5f0e6a61-2a9e-4d7a-8c43-8a0d0f1b2c33",
  time: 1767225601000,
  client_id: "reporting",
  reason: "invalid_secret",
  client_ip: null,
};
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
  it("follow the logger's level as it changes at run time: info events drop out at warn and come back", () => {
    const out = sink();
    const log = createLog({ destination: out.stream });
    const onEvent = eventLogger(log);
    onEvent(ISSUED);
    log.level = "warn";
    onEvent({ ...ISSUED, id: "11111111-2a9e-4d7a-8c43-8a0d0f1b2c33" });
    onEvent(AUTH_FAILED);
    log.level = "error";
    onEvent({ ...AUTH_FAILED, id: "22222222-2a9e-4d7a-8c43-8a0d0f1b2c33" });
    log.level = "info";
    onEvent({ ...ISSUED, id: "33333333-2a9e-4d7a-8c43-8a0d0f1b2c33" });
    expect(out.objects().map((o) => [o.level, o.event, o.id])).toEqual([
      ["info", "token.issued", ISSUED.id],
      ["warn", "client.authentication_failed", AUTH_FAILED.id],
      ["info", "token.issued", "33333333-2a9e-4d7a-8c43-8a0d0f1b2c33"],
    ]);
  });

  it("many event hooks on one logger share one level listener and all follow its level", () => {
    const out = sink();
    const log = createLog({ destination: out.stream });
    const hooks = Array.from({ length: 20 }, () => eventLogger(log));
    expect(log.listenerCount("level-change")).toBe(1);
    log.level = "warn";
    for (const [i, onEvent] of hooks.entries()) onEvent({ ...ISSUED, id: `${String(i).padStart(8, "0")}-2a9e-4d7a-8c43-8a0d0f1b2c33` });
    log.level = "info";
    hooks[7]!(ISSUED);
    expect(out.objects().map((o) => [o.level, o.event, o.id])).toEqual([["info", "token.issued", ISSUED.id]]);
    // Another logger gets its own.
    const other = createLog({ destination: sink().stream });
    eventLogger(other);
    expect([log.listenerCount("level-change"), other.listenerCount("level-change")]).toEqual([1, 1]);
  });

  it("writes events as JSON lines with a string member event, failures at warn", () => {
    const out = sink();
    const log = createLog({ destination: out.stream });
    const onEvent = eventLogger(log);
    onEvent(ISSUED);
    onEvent(AUTH_FAILED);
    const [a, b] = out.objects();
    expect(a).toEqual({
      level: "info",
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      event: "token.issued",
      event_time: 1767225600000,
      id: "0b6a3c52-7a53-4f7e-9d47-3e1f8f0c2a11",
      grant_type: "client_credentials",
      client_id: "reporting",
      subject: "client:reporting",
      scope: "Platform_UserAPIs",
      jti: "jti-1",
      expires_at: 1767232800000,
      family_id: null,
      client_ip: "203.0.113.7",
      msg: "token.issued",
    });
    expect(b).toEqual({
      level: "warn",
      time: expect.any(String),
      event: "client.authentication_failed",
      event_time: 1767225601000,
      id: "5f0e6a61-2a9e-4d7a-8c43-8a0d0f1b2c33",
      client_id: "reporting",
      reason: "invalid_secret",
      client_ip: null,
      msg: "client.authentication_failed",
    });
    expect(out.lines).toHaveLength(2);
  });

  it("writes an event line as pino itself would, and leaves odd events to pino (redaction included)", () => {
    // The event line is built without pino for speed: the same object pino makes from the same event.
    const fast = sink();
    eventLogger(createLog({ destination: fast.stream }))(ISSUED);
    const viaPino = sink();
    const { type, time, ...fields } = ISSUED;
    createLog({ destination: viaPino.stream }).info({ event: type, event_time: time, ...fields }, type);
    const strip = (o: Record<string, unknown>) => ({ ...o, time: "t" });
    expect(strip(fast.objects()[0]!)).toEqual(strip(viaPino.objects()[0]!));
    expect(Object.keys(fast.objects()[0]!)).toEqual(Object.keys(viaPino.objects()[0]!));
    // The core stamps `id` and `time` last: the same line as with them first.
    const { id: _id, time: _time, ...rest } = ISSUED;
    const stampedLast = sink();
    eventLogger(createLog({ destination: stampedLast.stream }))({ ...rest, id: ISSUED.id, time: ISSUED.time } as SecurityEvent);
    expect(stampedLast.lines[0]!.replace(/"time":"[^"]*"/, "")).toBe(fast.lines[0]!.replace(/"time":"[^"]*"/, ""));
    // Member by member as JSON.stringify would have them: an undefined member left out, arrays,
    // numbers, nested objects, a name that needs escaping; the same line pino makes.
    const varied = {
      ...ISSUED,
      gone: undefined,
      roles: ["a", 'b"'],
      ratio: 1.5,
      nested: { k: [1, null] },
      'we"ird': "x",
      // Strings written as they are (nothing to escape) and the ones that go through JSON.stringify.
      plain: "plain ascii",
      sep: "line\u2028separator",
      pair: "emoji \ud83c\udf31",
      control: "tab\there",
      slash: "back\\slash",
      unit: "\u001f",
      del: "\u007f",
      // Numbers as JSON writes them.
      negZero: -0,
      nan: Number.NaN,
      inf: Number.POSITIVE_INFINITY,
      big: 1e21,
      small: 5e-7,
      yes: true,
      no: false,
      fn: () => 1,
    } as unknown as SecurityEvent;
    const fastVaried = sink();
    eventLogger(createLog({ destination: fastVaried.stream }))(varied);
    const pinoVaried = sink();
    const { type: vType, time: vTime, ...vFields } = varied as unknown as Record<string, unknown>;
    createLog({ destination: pinoVaried.stream }).info({ event: vType, event_time: vTime, ...vFields }, vType as string);
    expect(fastVaried.lines[0]!.replace(/"time":"[^"]*"/, "")).toBe(pinoVaried.lines[0]!.replace(/"time":"[^"]*"/, ""));
    // Escaping: a hostile client id is one JSON string member, the line one line.
    const hostile = sink();
    eventLogger(createLog({ destination: hostile.stream }))({ ...AUTH_FAILED, client_id: 'a"b\nc\u2028\ud800' } as SecurityEvent);
    expect(hostile.lines).toHaveLength(1);
    expect(hostile.objects()[0]!.client_id).toBe('a"b\nc\u2028\ud800');
    // Not an event as the core makes them: through pino, whose redact list still applies.
    const odd = sink();
    const log = eventLogger(createLog({ destination: odd.stream }));
    log({ ...ISSUED, password: "hunter2" } as unknown as SecurityEvent);
    log({ time: ISSUED.time, type: "token.issued", id: ISSUED.id, nested: { a: 1 } } as unknown as SecurityEvent); // other key order
    expect(odd.objects()).toEqual([
      expect.objectContaining({ event: "token.issued", password: "[redacted]", msg: "token.issued" }),
      expect.objectContaining({ event: "token.issued", event_time: ISSUED.time, nested: { a: 1 }, msg: "token.issued" }),
    ]);
    expect(odd.lines.join("\n")).not.toContain("hunter2");
    // A value JSON.stringify cannot write (BigInt): the line goes through pino, not lost.
    const big = sink();
    eventLogger(createLog({ destination: big.stream }))({ ...ISSUED, count: 12n } as unknown as SecurityEvent);
    expect(big.lines).toHaveLength(1);
    expect(big.lines[0]).toContain('"event":"token.issued"');
  });

  it("events of one type with other members, or the same members in another order, each get their own line right", () => {
    // The member names are kept per event type; a different set or order must not reuse them.
    const fast = sink();
    const log = eventLogger(createLog({ destination: fast.stream }));
    const { id, time, ...rest } = ISSUED;
    const shapes = [
      ISSUED,
      { ...ISSUED, extra: "x" },
      { ...rest, id, time },
      { type: ISSUED.type, id, time, scope: "s" },
      { ...ISSUED, client_secret: "never-logged" },
      ISSUED,
      { ...ISSUED, extra: "y" },
    ] as unknown as SecurityEvent[];
    for (const event of shapes) log(event);
    const expected = shapes.map((event) => {
      const { type, time: t, ...fields } = event as unknown as Record<string, unknown>;
      const redacted = "client_secret" in fields ? { client_secret: "[redacted]" } : {};
      return { level: "info", time: expect.any(String), event: type, event_time: t, ...fields, ...redacted, msg: type };
    });
    expect(fast.objects()).toEqual(expected);
    expect(fast.lines.join("\n")).not.toContain("never-logged");
    // Members in the line in the event's order, `event`, `event_time` and `id` first.
    expect(Object.keys(fast.objects()[2]!)).toEqual(Object.keys(fast.objects()[0]!));
    expect(Object.keys(fast.objects()[3]!)).toEqual(["level", "time", "event", "event_time", "id", "scope", "msg"]);
  });

  it("redacts credential-named fields should one ever reach a line", () => {
    const out = sink();
    coreLogger(createLog({ destination: out.stream })).error("boom", { password: "hunter2", client_secret: "s3cret", detail: "x" });
    expect(out.objects()[0]).toMatchObject({ level: "error", msg: "boom", password: "[redacted]", client_secret: "[redacted]", detail: "x" });
    expect(out.lines[0]).not.toContain("hunter2");
    // Names added 2026-11-29: an RFC 7009/7662 `token`, a capitalised header name, cookies, camelCase tokens.
    const secrets = { token: "eyJ.revoked", Authorization: "Basic Yzpz", cookie: "pg_console=sess", "set-cookie": "a=b", clientAssertion: "eyJ.assert", assertion: "eyJ.a2", accessToken: "at", refreshToken: "rt" };
    coreLogger(createLog({ destination: out.stream })).warn("again", { ...secrets, detail: "y" });
    expect(out.objects()[1]).toEqual({ level: "warn", time: expect.any(String), msg: "again", detail: "y", ...Object.fromEntries(Object.keys(secrets).map((k) => [k, "[redacted]"])) });
  });

  it("loggers on stdout share one writer: one exit listener however many createLog() calls (each added one, and a sonic-boom, for good)", () => {
    createLog();
    const before = process.listenerCount("exit");
    for (let i = 0; i < 12; i++) createLog({ level: "warn" });
    expect(process.listenerCount("exit")).toBe(before);
  });

  it("an event hook on a logger createLog did not make (a child with bindings, a pino of the app's own) writes through that logger: its redaction, bindings and format", () => {
    const out = sink();
    const own = pino({ redact: ["client_ip", "client_id"] }, out.stream).child({ service: "auth" });
    eventLogger(own)(ISSUED);
    const child = createLog({ destination: out.stream }).child({ service: "auth" });
    eventLogger(child)(ISSUED);
    const [first, second] = out.objects();
    // Before 2026-11-29 both lines were written past the logger, client_ip and client_id in clear and no `service`.
    expect(first).toMatchObject({ level: 30, service: "auth", event: "token.issued", client_ip: "[Redacted]", client_id: "[Redacted]", msg: "token.issued" });
    expect(first).toHaveProperty("pid");
    expect(second).toMatchObject({ level: "info", service: "auth", event: "token.issued", client_ip: "203.0.113.7", msg: "token.issued" });
  });

  it("PLANTGATE_LOG_LEVEL sets the level; PLANTGATE_METRICS_PORT turns metrics on", () => {
    expect(observabilityFromEnv({})).toEqual({ logLevel: "info", metricsPort: null });
    expect(observabilityFromEnv({ PLANTGATE_LOG_LEVEL: "warn", PLANTGATE_METRICS_PORT: "9464" })).toEqual({ logLevel: "warn", metricsPort: 9464 });
    expect(() => observabilityFromEnv({ PLANTGATE_LOG_LEVEL: "loud" })).toThrow(ConfigError);
    expect(() => observabilityFromEnv({ PLANTGATE_LOG_LEVEL: "loud" })).toThrow('PLANTGATE_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent, got "loud"');
    expect(() => observabilityFromEnv({ PLANTGATE_METRICS_PORT: "70000" })).toThrow('PLANTGATE_METRICS_PORT must be a port number 0-65535, got "70000"');
    const out = sink();
    const obs = setupObservability({ logLevel: "warn", metricsPort: null }, { destination: out.stream });
    obs.options.onEvent(ISSUED);
    obs.options.onEvent(AUTH_FAILED);
    expect(out.objects().map((o) => o.event)).toEqual(["client.authentication_failed"]);
    expect(obs.metrics).toBeNull();
    expect(obs.options.observer).toBeUndefined();
  });
});
