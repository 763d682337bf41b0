/** observers: one observer that hands each observation to several (a host's beside the metrics'). */
import type { RequestObservation, StorageObservation } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { observers } from "../src/index.js";

const request: RequestObservation = { route: "/UserService/connect/token", method: "POST", status: 200, durationMs: 1, grantType: "client_credentials", result: "success" };
const storage: StorageObservation = { store: "clients", operation: "get", durationMs: 1, failed: false };

describe("observers", () => {
  it("gives each observation to every observer in order; one that throws or rejects keeps none of the others from it and leaves no unhandled rejection", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const seen: string[] = [];
      const combined = observers(
        { request: (o) => void seen.push(`a ${o.status}`), storage: (o) => void seen.push(`a ${o.store}.${o.operation}`) },
        undefined,
        {
          request: () => {
            seen.push("b");
            throw new Error("b failed");
          },
        },
        {
          request: async () => {
            seen.push("c");
            throw new Error("c failed");
          },
          storage: async () => {
            seen.push("c storage");
            throw new Error("c failed");
          },
        },
        { request: (o) => void seen.push(`d ${o.route}`) },
      );
      expect(combined.request!(request)).toBeUndefined();
      expect(combined.storage!(storage)).toBeUndefined();
      await new Promise((r) => setTimeout(r, 20));
      expect(seen).toEqual(["a 200", "b", "c", "d /UserService/connect/token", "a clients.get", "c storage"]);
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("a hook none of them has stays absent (core then wraps no storage), and a hook that is not a function is refused as createPlantgate refuses it", () => {
    expect(Object.keys(observers({ request: () => undefined }, undefined))).toEqual(["request"]);
    expect(Object.keys(observers(undefined, {}))).toEqual([]);
    expect(() => observers({ request: () => undefined }, { storage: 5 as never })).toThrow(new TypeError("observer.storage must be a function"));
    expect(() => observers({ eventLost: "x" as never })).toThrow(new TypeError("observer.eventLost must be a function"));
    expect(() => observers({ eventBacklog: 1 as never })).toThrow(new TypeError("observer.eventBacklog must be a function"));
  });

  it("hands an app's reader of its unfinished event deliveries to every observer that reads them, each guarded (since 2026-12-03)", () => {
    const seen: string[] = [];
    const combined = observers(
      { request: () => undefined },
      {
        eventBacklog: () => {
          seen.push("a");
          throw new Error("a failed");
        },
      },
      { eventBacklog: (read) => void seen.push(`b ${JSON.stringify(read())}`) },
    );
    expect(Object.keys(combined)).toEqual(["request", "eventBacklog"]);
    expect(combined.eventBacklog!(() => ({ hook: 2, audit: 1 }))).toBeUndefined();
    expect(seen).toEqual(["a", 'b {"hook":2,"audit":1}']);
  });

  it("hands a lost event to every observer that counts them (the metrics' beside a host's), each guarded; until 2026-12-03 it did not exist", async () => {
    const seen: string[] = [];
    const combined = observers(
      { request: () => undefined },
      {
        eventLost: () => {
          seen.push("a");
          throw new Error("a failed");
        },
      },
      { eventLost: (o) => void seen.push(`b ${o.receiver} ${o.type}`) },
    );
    expect(Object.keys(combined)).toEqual(["request", "eventLost"]);
    expect(combined.eventLost!({ receiver: "audit", type: "token.issued" })).toBeUndefined();
    expect(seen).toEqual(["a", "b audit token.issued"]);
  });
});
