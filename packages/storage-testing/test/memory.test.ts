/**
 * The reference backend runs the suite. The core's own tests cannot import this package (it
 * depends on the core), so the memory run lives here.
 *
 * rawDump: memory has no raw form to dump, so the store is wrapped to log every argument of every
 * writing call, and the dump is that log as JSON. Memory stores exactly (copies of) what it is
 * given, so the log is a superset of its state: the secrets probe then checks what the core hands
 * to any backend, which is the half of "secrets only as hashes" that memory can show.
 */
import { createMemoryStorage, type Storage } from "@plantgate/core";
import { describeStorageConformance } from "../src/index.js";

// Every method but these reads is logged, so a store method added later (as `graceUse`,
// `replacePrivateJwk` and `refund` were, missing from a list of writes kept here before) is in
// the dump without anyone remembering to add it.
const READS = new Set(["get", "findByUsername", "findByHash", "list", "listPage", "maxAccessTokenTtl", "has"]);
const logs = new WeakMap<Storage, unknown[]>();

function recordingMemoryStorage(): Storage {
  const inner = createMemoryStorage({ audit: true }) as unknown as Record<string, Record<string, (...args: unknown[]) => Promise<unknown>>>;
  const log: unknown[] = [];
  const wrapped: Record<string, Record<string, (...args: unknown[]) => Promise<unknown>>> = {};
  for (const [storeName, store] of Object.entries(inner)) {
    wrapped[storeName] = {};
    for (const [method, fn] of Object.entries(store)) {
      wrapped[storeName]![method] = (...args) => {
        if (!READS.has(method)) log.push({ store: storeName, method, args });
        return fn.apply(store, args);
      };
    }
  }
  const storage = wrapped as unknown as Storage;
  logs.set(storage, log);
  return storage;
}

describeStorageConformance("memory storage", {
  create: async () => recordingMemoryStorage(),
  rawDump: async (storage) => JSON.stringify(logs.get(storage), (_key, value: unknown) => (typeof value === "bigint" ? value.toString() : value)),
});
