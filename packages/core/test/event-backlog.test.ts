/**
 * A receiver of security events that falls behind (a webhook hook that hangs, an audit store that
 * never answers) holds a bounded backlog: past `maxPendingEventDeliveries` deliveries of its own
 * still unfinished, an event is not handed to it (counted lost, one warn line a run), and it takes
 * events again once its backlog has halved. A delivery unfinished for a minute no longer counts
 * (a Worker's call whose request context is gone never settles). Until 2026-12-03 every event was
 * handed over whatever was unfinished: a hook that never settled held a call, an event and its
 * record per token request, without bound.
 */
import { describe, expect, it, vi } from "vitest";
import { composedEventHook, createMemoryStorage, createPlantgate, type EventBacklogReading, type EventHook, type EventLossObservation, type SecurityEvent } from "../src/index.js";
import { createEventSink } from "../src/events/emitter.js";
import { optionsFromEnv } from "../src/env.js";
import { basic, BASE, harness } from "./helpers.js";

type Line = [level: "warn" | "error", message: string];

/** A client-credentials token request from one address; its answer is checked whole. */
async function issue(h: Awaited<ReturnType<typeof harness>>): Promise<void> {
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

/** A sink whose hook never settles, on the clock of vitest's fake timers (Date.now); `lost` gets its losses. */
function hungOnFakeClock(lost: EventLossObservation[]) {
  return createEventSink({
    hook: () => new Promise<void>(() => {}),
    audit: undefined,
    logger: { error: () => {}, warn: () => {} },
    clock: () => Date.now(),
    random: (n) => new Uint8Array(n),
    lost: (o) => void lost.push(o),
  });
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

  it("a delivery unfinished for 60 s is let go: counted lost (one line a minute at most), off the bound, and no longer waited for by settled(); one that settles later changes no count", async () => {
    const t = backedUp(4);
    const full = "onEvent hook: 4 deliveries of security events unfinished; events are not handed to it until half of them finish (counted in plantgate_events_lost_total)";
    const letGo = "onEvent hook: 4 deliveries of security events still unfinished after 60 s were let go (counted in plantgate_events_lost_total)";
    for (let i = 0; i < 4; i++) t.emit(`old${i}`);
    await t.step();
    t.advance(59_999);
    t.emit("refused");
    await t.step();
    expect(t.called).toEqual(["old0", "old1", "old2", "old3"]);
    expect(t.lost.length).toBe(1);
    t.advance(2);
    for (let i = 0; i < 4; i++) t.emit(`new${i}`);
    await t.step();
    expect(t.called.slice(4)).toEqual(["new0", "new1", "new2", "new3"]);
    // The four old ones were let go, and counted lost then: 1 refused + 4 let go.
    expect(t.lost.length).toBe(5);
    expect(t.lines.map(([, m]) => m)).toEqual([full, letGo, "onEvent hook: taking security events again; 1 were not handed to it"]);
    // An old one settling now frees no room taken by the new ones, and counts nothing.
    t.gates.splice(0, 1)[0]!();
    await t.step();
    t.emit("over");
    await t.step();
    expect(t.called.length).toBe(8);
    expect(t.lost.length).toBe(6);
    expect(t.lines.map(([, m]) => m).slice(3)).toEqual([full]);
    // The old batch is done (let go), the refused events' too: only the new ones' batch is unfinished.
    expect(await t.sink.settled(5)).toBe(1);
    // The new ones let go 60 s later: counted at once, their line 60 s after the last one.
    t.advance(60_000);
    expect(await t.sink.settled(5)).toBe(0);
    expect(t.lost.length).toBe(10);
    expect(t.lines.map(([, m]) => m).slice(4)).toEqual([letGo]);
    // One let go a minute after that line: told at once. Another 30 s later: counted at once, told
    // in the next line (at a sweep a minute after the last line).
    t.emit("within");
    await t.step();
    t.advance(30_000);
    t.emit("x");
    await t.step();
    t.advance(30_000);
    expect(await t.sink.settled(5)).toBe(1);
    const one = "onEvent hook: 1 deliveries of security events still unfinished after 60 s were let go (counted in plantgate_events_lost_total)";
    expect(t.lines.map(([, m]) => m).slice(5)).toEqual(["onEvent hook: taking security events again; 1 were not handed to it", one]);
    t.advance(30_000);
    expect(await t.sink.settled(5)).toBe(0);
    expect(t.lost.length).toBe(12);
    expect(t.lines.length).toBe(7);
    t.emit("y");
    await t.step();
    t.advance(30_000);
    expect(await t.sink.settled(5)).toBe(1);
    expect(t.lines.map(([, m]) => m).slice(7)).toEqual([one]);
  });

  it("a let-go delivery that rejects later is logged, not counted again; one under 60 s that rejects is counted once", async () => {
    let now = 0;
    const lost: EventLossObservation[] = [];
    const errors: string[] = [];
    const fails: Array<(e: Error) => void> = [];
    const sink = createEventSink({
      hook: () => new Promise<void>((_, reject) => fails.push(reject)),
      audit: undefined,
      logger: { error: (m) => errors.push(m), warn: () => {} },
      clock: () => now,
      random: (n) => new Uint8Array(n),
      lost: (o) => void lost.push(o),
    });
    sink.emit({ type: "client.created", client_id: "a" } as never);
    await new Promise((r) => setTimeout(r, 0));
    now = 60_000;
    expect(await sink.settled()).toBe(0);
    expect(lost.length).toBe(1);
    fails[0]!(new Error("webhook down"));
    await new Promise((r) => setTimeout(r, 0));
    expect([errors, lost.length]).toEqual([["onEvent hook failed"], 1]);
    sink.emit({ type: "client.created", client_id: "b" } as never);
    await new Promise((r) => setTimeout(r, 0));
    fails[1]!(new Error("webhook down"));
    await new Promise((r) => setTimeout(r, 0));
    expect([errors, lost.length]).toEqual([["onEvent hook failed", "onEvent hook failed"], 2]);
  });

  it("a flush already waiting, with nothing else happening, is woken when the delivery it waits for is 60 s old; a bounded one that ends later does not count it", async () => {
    vi.useFakeTimers({ now: 1_000_000, toFake: ["setTimeout", "clearTimeout", "Date"] });
    try {
      const lost: EventLossObservation[] = [];
      const sink = hungOnFakeClock(lost);
      sink.emit({ type: "client.created", client_id: "a" } as never);
      await Promise.resolve();
      await Promise.resolve();
      let unbound: number | undefined;
      void sink.settled().then((n) => (unbound = n));
      let bounded: number | undefined;
      void sink.settled(90_000).then((n) => (bounded = n));
      await vi.advanceTimersByTimeAsync(59_000);
      expect([unbound, bounded, sink.waiting]).toEqual([undefined, undefined, 2]);
      await vi.advanceTimersByTimeAsync(1_000);
      expect([unbound, bounded, sink.waiting, lost.length]).toEqual([0, 0, 0, 1]);
      // A bounded flush whose own bound ends after the delivery is 60 s old (the clock jumped): not counted.
      sink.emit({ type: "client.created", client_id: "b" } as never);
      await Promise.resolve();
      await Promise.resolve();
      const late = sink.settled(10);
      vi.setSystemTime(Date.now() + 120_000);
      await vi.advanceTimersByTimeAsync(10);
      expect(await late).toBe(0);
      expect(lost.length).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it("a flush called before the delivery it waits for starts (the same step, or a deferred task's events) is woken too when that is let go", async () => {
    vi.useFakeTimers({ now: 1_000_000, toFake: ["setTimeout", "clearTimeout", "Date"] });
    try {
      const sink = hungOnFakeClock([]);
      sink.emit({ type: "client.created", client_id: "a" } as never);
      let sameStep: number | undefined;
      void sink.settled().then((n) => (sameStep = n));
      let give!: (events: never[]) => void;
      sink.defer(new Promise((resolve) => (give = resolve)));
      let deferred: number | undefined;
      void sink.settled().then((n) => (deferred = n));
      await vi.advanceTimersByTimeAsync(30_000);
      give([{ type: "client.deleted", client_id: "b" }] as never[]);
      await vi.advanceTimersByTimeAsync(29_000);
      expect([sameStep, deferred]).toEqual([undefined, undefined]);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(sameStep).toBe(0);
      expect(deferred).toBeUndefined();
      await vi.advanceTimersByTimeAsync(30_000);
      expect([deferred, sink.waiting]).toEqual([0, 0]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("a hook that never settles, for a day: the deliveries and batches the sink holds stay within the bound (each is let go at 60 s)", async () => {
    const t = backedUp(50);
    const minutes = 24 * 60;
    for (let minute = 0; minute < minutes; minute++) {
      for (let i = 0; i < 100; i++) t.emit(`m${minute}-${i}`);
      // The drain is one microtask away.
      await Promise.resolve();
      await Promise.resolve();
      t.advance(60_000);
    }
    // 50 handed over a minute (until the 60 s pass, the other 50 refused): every minute's backlog let
    // go the next, and counted lost then. The sink waits for none of them after that; the hook's own
    // promises (never settling here) are the host's: 50 a minute stay unfinished on its side.
    expect(t.called.length).toBe(minutes * 50);
    expect(t.lost.length).toBe(minutes * 50 + (minutes - 1) * 50);
    expect(t.gates.length).toBe(minutes * 50);
    // Three lines a minute: the run of refusals starting, then at the next minute's first event the
    // ones let go and the run's end.
    expect(t.lines.length).toBe(3 * minutes - 2);
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
    for (let i = 0; i < 5; i++) await issue(h);
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

  it("a composed hook (composedEventHook): each hook is a receiver with a backlog of its own, so one that hangs holds back no other; nested ones are unfolded", async () => {
    const seen: string[] = [];
    const lost: EventLossObservation[] = [];
    const lines: string[] = [];
    let hung = 0;
    const recorder: EventHook = (event) => void seen.push((event as { client_id: string }).client_id);
    const webhook: EventHook = () => {
      hung++;
      return new Promise<void>(() => {});
    };
    let combinedCalls = 0;
    const combined = (hooks: EventHook[]) =>
      composedEventHook(() => {
        combinedCalls++;
      }, hooks);
    const sink = createEventSink({
      hook: combined([recorder, combined([webhook])]),
      audit: undefined,
      logger: { error: (m) => lines.push(m), warn: (m) => lines.push(m) },
      clock: () => 5,
      random: (n) => new Uint8Array(n),
      lost: (o) => void lost.push(o),
      maxPending: 3,
    });
    for (let i = 0; i < 5; i++) sink.emit({ type: "client.created", client_id: `c${i}` } as never);
    await new Promise((r) => setTimeout(r, 0));
    expect(seen).toEqual(["c0", "c1", "c2", "c3", "c4"]);
    expect([hung, combinedCalls]).toEqual([3, 0]);
    expect(lost).toEqual([{ receiver: "hook", type: "client.created" }, { receiver: "hook", type: "client.created" }]);
    expect(lines).toEqual(["onEvent hook 2 of 2: 3 deliveries of security events unfinished; events are not handed to it until half of them finish (counted in plantgate_events_lost_total)"]);
    // A direct caller calls the combined function, as before.
    const direct = combined([recorder]);
    void direct({ type: "client.created", client_id: "direct" } as never);
    expect(combinedCalls).toBe(1);
  });

  it("a composed hook whose list cannot be read, is no list of functions, or goes past 64 hooks or 8 levels is called as one hook", async () => {
    const calls: string[] = [];
    const run = async (hook: EventHook) => {
      calls.length = 0;
      const sink = createEventSink({ hook, audit: undefined, logger: { error: () => {}, warn: () => {} }, clock: () => 5, random: (n) => new Uint8Array(n) });
      sink.emit({ type: "client.created", client_id: "c" } as never);
      await sink.settled(1000);
      return [...calls];
    };
    const part = (name: string): EventHook => () => void calls.push(name);
    const whole = (name: string, hooks: unknown): EventHook => {
      const f: EventHook = () => void calls.push(name);
      Object.defineProperty(f, Symbol.for("plantgate.eventHookList"), { get: () => hooks });
      return f;
    };
    expect(await run(composedEventHook(part("whole"), [part("a"), part("b")]))).toEqual(["a", "b"]);
    expect(await run(whole("whole", [part("a"), "not a function"]))).toEqual(["whole"]);
    expect(await run(whole("whole", "not a list"))).toEqual(["whole"]);
    const throwing: EventHook = () => void calls.push("throwing");
    Object.defineProperty(throwing, Symbol.for("plantgate.eventHookList"), {
      get() {
        throw new Error("hostile");
      },
    });
    expect(await run(throwing)).toEqual(["throwing"]);
    expect(await run(composedEventHook(part("whole"), Array.from({ length: 65 }, (_, i) => part(`p${i}`))))).toEqual(["whole"]);
    expect(await run(composedEventHook(part("whole"), Array.from({ length: 64 }, (_, i) => part(`p${i}`))))).toEqual(Array.from({ length: 64 }, (_, i) => `p${i}`));
    // Two lists of 40: past 64 in all, the outer one is called as one.
    expect(await run(composedEventHook(part("outer"), [composedEventHook(part("x"), Array.from({ length: 40 }, () => part("x"))), composedEventHook(part("y"), Array.from({ length: 40 }, () => part("y")))]))).toEqual(["outer"]);
    // Nine levels: the ninth is not unfolded, its own function is called as one hook.
    let deep: EventHook = composedEventHook(part("level9"), [part("leaf")]);
    for (let level = 8; level >= 1; level--) deep = composedEventHook(part(`level${level}`), [deep]);
    expect(await run(deep)).toEqual(["level9"]);
    // A frozen function cannot carry a list: called as one.
    expect(await run(composedEventHook(Object.freeze(part("frozen")), [part("a")]))).toEqual(["frozen"]);
    // A list with a hole, or that contains its own hook (a cycle): called as one (a review of 2026-12-03).
    expect(await run(whole("holes", new Array(3)))).toEqual(["holes"]);
    const selfish: EventHook = composedEventHook(part("selfish"), []);
    composedEventHook(selfish, [part("a"), selfish]);
    expect(await run(selfish)).toEqual(["selfish"]);
    // Lists of 64 lists of 64 ...: every hook visited counts toward the 64, so this is called as one
    // at once (it took seconds at four levels, when only the hooks at the ends counted).
    let bomb: EventHook = composedEventHook(part("leaf"), []);
    for (let level = 0; level < 6; level++) bomb = composedEventHook(part(`bomb${level}`), Array.from({ length: 64 }, () => bomb));
    const started = Date.now();
    expect(await run(bomb)).toEqual(["bomb5"]);
    expect(Date.now() - started).toBeLessThan(1000);
    // A proxy that answers a length of 1 and then a huge one: one hook read, as the first length said.
    let reads = 0;
    const shifty = new Proxy([part("p0")], { get: (target, key, receiver) => (key === "length" ? (reads++ === 0 ? 1 : 2 ** 32 - 1) : Reflect.get(target, key, receiver)) });
    expect(await run(whole("shifty", shifty))).toEqual(["p0"]);
    // A proxy whose copy through `slice` (its species) or whose iterator would be something else:
    // read index by index, as the length said (a `{}` species threw out of createPlantgate, a review of 2026-12-03).
    const species = new Proxy([part("q0")], {
      get: (target, key, receiver) =>
        key === "constructor" ? { [Symbol.species]: function () { return {}; } } : key === Symbol.iterator ? function* () { yield 42; } : Reflect.get(target, key, receiver),
    });
    expect(await run(whole("species", species))).toEqual(["q0"]);
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

describe("observer.eventBacklog: the unfinished deliveries, read when asked", () => {
  const step = () => new Promise((r) => setTimeout(r, 0));

  it("an app with a hook and an audit store hands its observer one reader: deliveries unfinished by receiver, those 60 s old let go when it reads (counted lost, one line), 0 once all finish", async () => {
    const storage = createMemoryStorage({ audit: true });
    const appendGates: Array<() => void> = [];
    storage.audit!.append = () => new Promise<void>((resolve) => appendGates.push(resolve));
    const hookGates: Array<() => void> = [];
    const readers: Array<() => EventBacklogReading> = [];
    const lost: EventLossObservation[] = [];
    const lines: string[] = [];
    const h = await harness({
      storage,
      onEvent: () => new Promise<void>((resolve) => hookGates.push(resolve)),
      observer: { eventBacklog: (read) => void readers.push(read), eventLost: (o) => void lost.push(o) },
      logger: { error: (m) => lines.push(`error ${m}`), warn: (m) => lines.push(`warn ${m}`) },
    });
    expect(readers.length).toBe(1);
    const read = readers[0]!;
    await step();
    // The harness's own set-up events (client.created, account.created), to each receiver.
    expect(read()).toEqual({ hook: 2, audit: 2 });
    for (let i = 0; i < 3; i++) await issue(h);
    await step();
    expect(read()).toEqual({ hook: 5, audit: 5 });
    for (const release of hookGates.splice(0)) release();
    await step();
    expect(read()).toEqual({ hook: 0, audit: 5 });
    expect(lost).toEqual([]);
    // Nothing else happens for a minute: reading lets go of the five appends (as the next event would).
    h.clock.advance(60_000);
    expect(read()).toEqual({ hook: 0, audit: 0 });
    expect(lost).toEqual([
      ...Array.from({ length: 2 }, (_, i) => ({ receiver: "audit", type: ["client.created", "account.created"][i] })),
      ...Array.from({ length: 3 }, () => ({ receiver: "audit", type: "token.issued" })),
    ]);
    expect(lines.filter((l) => l.includes("security events"))).toEqual(["warn audit store: 5 deliveries of security events still unfinished after 60 s were let go (counted in plantgate_events_lost_total)"]);
    // An append let go that finishes later changes no reading.
    for (const release of appendGates.splice(0)) release();
    await step();
    expect(read()).toEqual({ hook: 0, audit: 0 });
    expect(await h.app.flushEvents()).toBe(0);
  });

  it("each hook of a composed one counts under hook (summed); a hook that answers at once never shows; an app with no receiver hands no reader", async () => {
    const gates: Array<() => void> = [];
    const readers: Array<() => EventBacklogReading> = [];
    const hanging: EventHook = () => new Promise<void>((resolve) => gates.push(resolve));
    const combined = composedEventHook(() => undefined, [hanging, () => undefined, hanging]);
    const h = await harness({ onEvent: combined, observer: { eventBacklog: (read) => void readers.push(read) } });
    await step();
    expect(readers.length).toBe(1);
    // Two events, two hanging hooks each; the memory store of the harness keeps no audit trail.
    expect(readers[0]!()).toEqual({ hook: 4, audit: 0 });
    await issue(h);
    await step();
    expect(readers[0]!()).toEqual({ hook: 6, audit: 0 });
    for (const release of gates.splice(0)) release();
    await step();
    expect(readers[0]!()).toEqual({ hook: 0, audit: 0 });

    const none: Array<() => EventBacklogReading> = [];
    createPlantgate({ observer: { eventBacklog: (read) => void none.push(read) } });
    expect(none).toEqual([]);
    const immediate: Array<() => EventBacklogReading> = [];
    const quick = await harness({ onEvent: () => undefined, observer: { eventBacklog: (read) => void immediate.push(read) } });
    await issue(quick);
    await step();
    expect(immediate.length).toBe(1);
    expect(immediate[0]!()).toEqual({ hook: 0, audit: 0 });
  });

  it("observer.eventBacklog must be a function (a TypeError naming it); one that throws or rejects changes nothing: the app is made and answers", async () => {
    for (const bad of [1, "x", {}, null]) {
      expect(() => createPlantgate({ onEvent: () => undefined, observer: { eventBacklog: bad as never } })).toThrow(new TypeError("observer.eventBacklog must be a function"));
    }
    const thrower = await harness({
      onEvent: () => undefined,
      observer: {
        eventBacklog: () => {
          throw new Error("observer down");
        },
      },
    });
    await issue(thrower);
    const rejecter = await harness({ onEvent: () => undefined, observer: { eventBacklog: async () => Promise.reject(new Error("observer down")) } });
    await issue(rejecter);
    await step();
  });
});
