/**
 * A receiver of security events that falls behind (a webhook hook that hangs, an audit store that
 * never answers) holds a bounded backlog: past `maxPendingEventDeliveries` deliveries of its own
 * still unfinished, an event is not handed to it (counted lost, one warn line a run), and it takes
 * events again once its backlog has halved. A delivery unfinished for a minute no longer counts
 * (a Worker's call whose request context is gone never settles). Until 2026-12-03 every event was
 * handed over whatever was unfinished: a hook that never settled held a call, an event and its
 * record per token request, without bound.
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, type EventLossObservation, type SecurityEvent } from "../src/index.js";
import { createEventSink } from "../src/events/emitter.js";
import { optionsFromEnv } from "../src/env.js";
import { basic, BASE, harness } from "./helpers.js";

type Line = [level: "warn" | "error", message: string];

/** A sink whose hook never settles until released, on a clock the test moves. */
function backedUp(maxPending: number) {
  let now = 1_000_000;
  const lines: Line[] = [];
  const lost: EventLossObservation[] = [];
  const gates: Array<() => void> = [];
  const called: string[] = [];
  const sink = createEventSink({
    hook: (event) => {
      called.push((event as { client_id: string }).client_id);
      return new Promise<void>((resolve) => gates.push(resolve));
    },
    audit: undefined,
    logger: { error: (m) => lines.push(["error", m]), warn: (m) => lines.push(["warn", m]) },
    clock: () => now,
    random: (n) => new Uint8Array(n),
    lost: (o) => void lost.push(o),
    maxPending,
  });
  const emit = (id: string) => sink.emit({ type: "client.created", client_id: id } as never);
  const step = () => new Promise((r) => setTimeout(r, 0));
  return { sink, lines, lost, gates, called, emit, step, advance: (ms: number) => (now += ms) };
}

describe("event backlog: a receiver that falls behind", () => {
  it("past the bound an event is not handed to the hook: counted lost, one warn line for the run, and the hook takes events again once its backlog has halved", async () => {
    const t = backedUp(10);
    for (let i = 0; i < 25; i++) t.emit(`a${i}`);
    await t.step();
    expect(t.called).toEqual(Array.from({ length: 10 }, (_, i) => `a${i}`));
    expect(t.lost).toEqual(Array.from({ length: 15 }, () => ({ receiver: "hook", type: "client.created" })));
    expect(t.lines).toEqual([["warn", "onEvent hook: 10 deliveries of security events unfinished; events are not handed to it until half of them finish (counted in plantgate_events_lost_total)"]]);
    // Four finish: 6 unfinished, more than half the bound: still refused, no new line.
    for (const release of t.gates.splice(0, 4)) release();
    await t.step();
    t.emit("b0");
    await t.step();
    expect(t.called.length).toBe(10);
    expect(t.lost.length).toBe(16);
    expect(t.lines.length).toBe(1);
    // One more finishes: 5 unfinished, half the bound: the next event is handed over, and the run's count told.
    t.gates.shift()!();
    await t.step();
    t.emit("c0");
    t.emit("c1");
    await t.step();
    expect(t.called.slice(10)).toEqual(["c0", "c1"]);
    expect(t.lost.length).toBe(16);
    expect(t.lines).toEqual([
      ["warn", "onEvent hook: 10 deliveries of security events unfinished; events are not handed to it until half of them finish (counted in plantgate_events_lost_total)"],
      ["warn", "onEvent hook: taking security events again; 16 were not handed to it"],
    ]);
    // An event never handed over counts as handled for settled(): b0's batch is done; a's (5 calls
    // unfinished) and c's (2) wait.
    expect(await t.sink.settled(5)).toBe(2);
    for (const release of t.gates.splice(0)) release();
    expect(await t.sink.settled(1000)).toBe(0);
  });

  it("a delivery unfinished for 60 s no longer counts against the bound (it may never settle), nor holds back settled(); one that settles later changes no count", async () => {
    const t = backedUp(4);
    for (let i = 0; i < 4; i++) t.emit(`old${i}`);
    await t.step();
    t.advance(59_999);
    t.emit("refused");
    await t.step();
    expect(t.called).toEqual(["old0", "old1", "old2", "old3"]);
    expect(t.lost).toEqual([{ receiver: "hook", type: "client.created" }]);
    t.advance(2);
    for (let i = 0; i < 4; i++) t.emit(`new${i}`);
    await t.step();
    expect(t.called.slice(4)).toEqual(["new0", "new1", "new2", "new3"]);
    // The old ones settling now does not free room taken by the new ones.
    for (const release of t.gates.splice(0, 4)) release();
    await t.step();
    t.emit("over");
    await t.step();
    expect(t.called.length).toBe(8);
    expect(t.lost.length).toBe(2);
    expect(t.lines.map(([, m]) => m)).toEqual([
      "onEvent hook: 4 deliveries of security events unfinished; events are not handed to it until half of them finish (counted in plantgate_events_lost_total)",
      "onEvent hook: taking security events again; 1 were not handed to it",
      "onEvent hook: 4 deliveries of security events unfinished; events are not handed to it until half of them finish (counted in plantgate_events_lost_total)",
    ]);
    // The old batch is done (aged), the refused events' too: only the new ones' batch is unfinished.
    expect(await t.sink.settled(5)).toBe(1);
    let unbound: number | undefined;
    void t.sink.settled().then((n) => (unbound = n));
    await t.step();
    expect(unbound, "a flush without a bound waits for a delivery under 60 s old").toBeUndefined();
    t.advance(60_000);
    // A flush called once they are 60 s old does not wait for them; the waiting one is woken with it.
    expect(await t.sink.settled()).toBe(0);
    await t.step();
    expect([unbound, t.sink.waiting]).toEqual([0, 0]);
  });

  it("a hook that never settles, for a day: the deliveries and batches held stay within the bound (each is let go at 60 s)", async () => {
    const t = backedUp(50);
    const minutes = 24 * 60;
    for (let minute = 0; minute < minutes; minute++) {
      for (let i = 0; i < 100; i++) t.emit(`m${minute}-${i}`);
      // The drain is one microtask away.
      await Promise.resolve();
      await Promise.resolve();
      t.advance(60_000);
    }
    // 50 handed over a minute (until the 60 s pass, the other 50 refused): every minute's backlog let go the next.
    expect(t.called.length).toBe(minutes * 50);
    expect(t.lost.length).toBe(minutes * 50);
    expect(t.gates.length).toBe(minutes * 50);
    // Two lines a minute: the run of refusals starting, and ending at the next minute's first event.
    expect(t.lines.length).toBe(2 * minutes - 1);
    // settled() sweeps first: the last minute's deliveries are 60 s old too; nothing is held.
    expect(await t.sink.settled(5)).toBe(0);
    expect(t.sink.waiting).toBe(0);
  });

  it("a hook that never settles, 30 000 events: it is called 10 000 times (the default bound), the rest counted lost; a hook that answers at once is never held back", async () => {
    let calls = 0;
    const lost: EventLossObservation[] = [];
    const lines: string[] = [];
    const sink = createEventSink({
      hook: () => {
        calls++;
        return new Promise<void>(() => {});
      },
      audit: undefined,
      logger: { error: (m) => lines.push(m), warn: (m) => lines.push(m) },
      clock: () => 5,
      random: (n) => new Uint8Array(n),
      lost: (o) => void lost.push(o),
    });
    for (let i = 0; i < 30_000; i++) {
      sink.emit({ type: "client.created", client_id: "c" } as never);
      if (i % 1000 === 999) await new Promise((r) => setTimeout(r, 0));
    }
    await new Promise((r) => setTimeout(r, 0));
    expect([calls, lost.length]).toEqual([10_000, 20_000]);
    expect(lines).toEqual(["onEvent hook: 10000 deliveries of security events unfinished; events are not handed to it until half of them finish (counted in plantgate_events_lost_total)"]);

    let syncCalls = 0;
    const quick = createEventSink({ hook: () => void syncCalls++, audit: undefined, logger: { error: () => {}, warn: () => {} }, clock: () => 5, random: (n) => new Uint8Array(n), maxPending: 1 });
    for (let i = 0; i < 100; i++) quick.emit({ type: "client.created", client_id: "c" } as never);
    await new Promise((r) => setTimeout(r, 0));
    expect(syncCalls).toBe(100);
  });

  it("the audit store has a backlog of its own: an append that never answers holds back the trail only, and the hook still gets every event", async () => {
    const storage = createMemoryStorage({ audit: true });
    let appends = 0;
    storage.audit!.append = () => {
      appends++;
      return new Promise<void>(() => {});
    };
    const seen: string[] = [];
    const lost: EventLossObservation[] = [];
    const lines: string[] = [];
    const h = await harness({
      storage,
      maxPendingEventDeliveries: 2,
      onEvent: (e: SecurityEvent) => void seen.push(e.type),
      observer: { eventLost: (o) => void lost.push(o) },
      logger: { error: (m) => lines.push(`error ${m}`), warn: (m) => lines.push(`warn ${m}`) },
    });
    const before = { appends, seen: seen.length, lost: lost.length };
    for (let i = 0; i < 5; i++) {
      const res = await h.app.fetch(
        new Request(`${BASE}/UserService/connect/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) },
          body: "grant_type=client_credentials",
        }),
        { clientIp: "198.51.100.7" },
      );
      expect(res.status).toBe(200);
      expect(Object.keys(await res.json()).sort()).toEqual(["access_token", "expires_in", "scope", "token_type"]);
    }
    await new Promise((r) => setTimeout(r, 0));
    // The harness's own set-up events (client.created, account.created) took the 2 places: their appends never answered either.
    expect(before.appends).toBe(2);
    expect(appends).toBe(2);
    expect(seen.slice(before.seen)).toEqual(Array.from({ length: 5 }, () => "token.issued"));
    expect(lost.slice(before.lost)).toEqual(Array.from({ length: 5 }, () => ({ receiver: "audit", type: "token.issued" })));
    expect(lines.filter((l) => l.includes("audit store:"))).toEqual([
      "warn audit store: 2 deliveries of security events unfinished; events are not handed to it until half of them finish (counted in plantgate_events_lost_total)",
    ]);
  });

  it("maxPendingEventDeliveries: a whole number from 1 to 1000000 (env PLANTGATE_MAX_PENDING_EVENT_DELIVERIES), else a TypeError naming it", () => {
    for (const bad of [0, -1, 1.5, 1_000_001, Number.NaN, "10" as unknown as number]) {
      expect(() => createPlantgate({ maxPendingEventDeliveries: bad })).toThrow(new TypeError("maxPendingEventDeliveries must be an integer from 1 to 1000000"));
    }
    expect(() => createPlantgate({ maxPendingEventDeliveries: 1_000_000 })).not.toThrow();
    expect(optionsFromEnv({ PLANTGATE_MAX_PENDING_EVENT_DELIVERIES: "250" }).maxPendingEventDeliveries).toBe(250);
    for (const bad of ["0", "1000001", "1e3", "x"]) {
      expect(() => optionsFromEnv({ PLANTGATE_MAX_PENDING_EVENT_DELIVERIES: bad })).toThrow(/PLANTGATE_MAX_PENDING_EVENT_DELIVERIES/);
    }
  });
});
