import type { Storage } from "@plantgate/core";

/**
 * How the conformance suite gets at your backend.
 *
 * @example
 * const target: ConformanceTarget = {
 *   create: async () => createMyStorage({ url: process.env.DATABASE_URL, schema: `t_${crypto.randomUUID().slice(0, 8)}` }),
 *   destroy: async (storage) => (storage as MyStorage).dropAndClose(),
 *   rawDump: async (storage) => (storage as MyStorage).dumpAllRowsAsText(),
 * };
 */
export interface ConformanceTarget {
  /** A fresh, empty store per test. */
  create(): Promise<Storage>;
  /** Called after each test with what create() returned. */
  destroy?(storage: Storage): Promise<void>;
  /** Everything the backend persisted, as text (e.g. a dump of all rows), for the secrets-only-as-hashes probe. */
  rawDump?(storage: Storage): Promise<string>;
  /**
   * A second instance over the same data as `storage` (its own connection or pool, as another
   * server process would have), for races across instances. Omit it when the backend cannot
   * have two; those cases are then skipped.
   */
  connect?(storage: Storage): Promise<Storage>;
  /** Releases what connect() returned (called before destroy() of the first). */
  disconnect?(storage: Storage): Promise<void>;
  /**
   * A second instance over the same data as `storage` with the audit trail off: no `audit`, as a
   * server started with `PLANTGATE_AUDIT=0` after it was on has. It must have `auditPrune`, which
   * deletes the events the first instance kept (the audit case "events kept while the trail was
   * on ..."). Omit it when the backend keeps nothing across instances (memory); that case is then
   * skipped. Released with disconnect().
   */
  connectWithoutAudit?(storage: Storage): Promise<Storage>;
}

/** What each suite sees: the store of the running test, and the target (for `rawDump`). */
export interface SuiteContext {
  storage(): Storage;
  target: ConformanceTarget;
}
