/** eventHooks: one onEvent that hands each event to several hooks (a host's beside the server's own). */
import { createPlantgate, type SecurityEvent } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { eventHooks } from "../src/index.js";

const event = { type: "client.deleted", id: "e1", time: 1, client_id: "c", actor: null } as unknown as SecurityEvent;

describe("eventHooks", () => {
  it("gives each event to every hook in order; one that throws or rejects does not stop the others, and the result rejects with the first failure", async () => {
    const seen: string[] = [];
    const hook = eventHooks(
      (e) => void seen.push(`a:${e.id}`),
      () => {
        seen.push("b");
        throw new Error("b failed");
      },
      async () => {
        seen.push("c");
        throw new Error("c failed");
      },
      (e) => void seen.push(`d:${e.type}`),
    );
    await expect(hook(event)).rejects.toThrow(new Error("b failed"));
    // The first failure in the order given, not in time: a later hook failing first is not it.
    const ordered = eventHooks(
      () => new Promise<void>((_, reject) => setTimeout(() => reject(new Error("slow first failed")), 20)),
      () => {
        throw new Error("fast second failed");
      },
    );
    await expect(ordered(event)).rejects.toThrow(new Error("slow first failed"));
    expect(seen).toEqual(["a:e1", "b", "c", "d:client.deleted"]);
    // All succeed: resolves to undefined, after the slow one.
    let done = false;
    const ok = eventHooks(() => undefined, () => new Promise<void>((resolve) => setTimeout(() => ((done = true), resolve()), 20)));
    await expect(ok(event)).resolves.toBeUndefined();
    expect(done).toBe(true);
  });
});

describe("eventHooks with one hook failing fast beside a slow one (flushEvents resolved before the slow one until the review mend)", () => {
  it("the combined hook settles only once every hook has, so flushEvents waits for the slow one", async () => {
    const delivered: string[] = [];
    const app = createPlantgate({
      issuer: "https://hooks.plantgate.test",
      logger: { error() {}, warn() {} },
      onEvent: eventHooks(
        () => {
          throw new Error("the log sink failed");
        },
        async (e) => {
          await new Promise((resolve) => setTimeout(resolve, 100));
          delivered.push(e.type);
        },
      ),
    });
    await app.admin.createClient({ clientId: "c1" });
    expect(await app.flushEvents()).toBe(0);
    expect(delivered).toEqual(["client.created"]);
  });
});

describe("eventHooks with a hook that writes to an event's array before the JSON line's hook (obs review: the arrays were the answer's own and unfrozen)", () => {
  it("the later hook sees the event as emitted, and the admin call's answer is as without the first hook", async () => {
    const lines: string[] = [];
    const app = createPlantgate({
      issuer: "https://hooks.plantgate.test",
      logger: { error() {}, warn() {} },
      onEvent: eventHooks(
        (e) => {
          if (e.type === "client.created") e.grant_types.sort();
        },
        (e) => void lines.push(JSON.stringify(e)),
      ),
    });
    const { client } = await app.admin.createClient({ clientId: "c1", grantTypes: ["refresh_token", "password"] });
    expect(await app.flushEvents()).toBe(0);
    const created = lines.map((l) => JSON.parse(l) as { type: string; grant_types?: string[] }).find((e) => e.type === "client.created");
    expect({ answer: client.grantTypes, logged: created?.grant_types }).toEqual({ answer: ["refresh_token", "password"], logged: ["refresh_token", "password"] });
  });
});

describe("eventHooks: each hook's failure is reported on its own, when it happens", () => {
  /** An app over `onEvent` whose logger notes the hook failures it is told. */
  function appWith(onEvent: ReturnType<typeof eventHooks>) {
    const failures: string[] = [];
    const app = createPlantgate({
      issuer: "https://hooks.plantgate.test",
      logger: { error: (message: string, context?: unknown) => void failures.push(`${message}: ${(context as { error?: string } | undefined)?.error}`), warn() {} },
      onEvent,
    });
    return { app, failures };
  }

  it("a hook that never settles keeps no other hook's failure from being logged (a webhook without a timeout hid them until 2026-12-03); flushEvents still counts the hung one", async () => {
    const { app, failures } = appWith(
      eventHooks(
        () => new Promise<void>(() => {}),
        () => {
          throw new Error("the log sink failed");
        },
      ),
    );
    await app.admin.createClient({ clientId: "c1" });
    expect(await app.flushEvents(200)).toBe(1);
    expect(failures).toEqual(["onEvent hook failed: the log sink failed"]);
  });

  it("eventHooks inside eventHooks (a host's composed hook given to startServer, which composes it with the server's own): the inner hung hook hides no inner failure", async () => {
    const { app, failures } = appWith(
      eventHooks(
        () => undefined,
        eventHooks(
          () => new Promise<void>(() => {}),
          async () => {
            throw new Error("the inner sink failed");
          },
        ),
      ),
    );
    await app.admin.createClient({ clientId: "c1" });
    expect(await app.flushEvents(200)).toBe(1);
    expect(failures).toEqual(["onEvent hook failed: the inner sink failed"]);
  });

  it("two hooks failing: two lines, each with its own error (only the first was logged until 2026-12-03)", async () => {
    const { app, failures } = appWith(
      eventHooks(
        async () => {
          throw new Error("first failed");
        },
        () => {
          throw new Error("second failed");
        },
        () => undefined,
      ),
    );
    await app.admin.createClient({ clientId: "c1" });
    expect(await app.flushEvents(1000)).toBe(0);
    expect(failures.sort()).toEqual(["onEvent hook failed: first failed", "onEvent hook failed: second failed"]);
  });

  it("each failure line names which hook failed (hook: \"2 of 3\"; since 2026-12-03), with the event's type and id and the error only", async () => {
    const contexts: unknown[] = [];
    const app = createPlantgate({
      issuer: "https://hooks.plantgate.test",
      logger: { error: (message: string, context?: unknown) => void contexts.push({ message, ...(context as object) }), warn() {} },
      onEvent: eventHooks(
        () => undefined,
        async () => {
          throw new Error("webhook down");
        },
        eventHooks(() => {
          throw new Error("queue full");
        }),
      ),
    });
    await app.admin.createClient({ clientId: "c1" });
    expect(await app.flushEvents(1000)).toBe(0);
    expect(contexts).toEqual([
      { message: "onEvent hook failed", type: "client.created", id: expect.stringMatching(/^[0-9a-f-]{36}$/), hook: "3 of 3", error: "queue full" },
      { message: "onEvent hook failed", type: "client.created", id: expect.stringMatching(/^[0-9a-f-]{36}$/), hook: "2 of 3", error: "webhook down" },
    ]);
  });
});
