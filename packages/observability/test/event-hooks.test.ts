/** eventHooks: one onEvent that hands each event to several hooks (a host's beside the server's own). */
import type { SecurityEvent } from "@plantgate/core";
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
    expect(seen).toEqual(["a:e1", "b", "c", "d:client.deleted"]);
    // All succeed: resolves to undefined, after the slow one.
    let done = false;
    const ok = eventHooks(() => undefined, () => new Promise<void>((resolve) => setTimeout(() => ((done = true), resolve()), 20)));
    await expect(ok(event)).resolves.toBeUndefined();
    expect(done).toBe(true);
  });
});
