/**
 * `@plantgate/storage-testing`: the conformance suite every plantgate storage backend runs.
 * Call {@link describeStorageConformance} from a vitest test file with a {@link ConformanceTarget}.
 */
import type { Storage } from "@plantgate/core";
import { afterEach, beforeEach, describe } from "vitest";
import { accountsSuite } from "./suites/accounts.js";
import { assertionJtisSuite } from "./suites/assertion-jtis.js";
import { attemptsSuite } from "./suites/attempts.js";
import { auditSuite } from "./suites/audit.js";
import { clientPagesSuite } from "./suites/client-pages.js";
import { clientTtlSuite } from "./suites/client-ttl.js";
import { clientsSuite } from "./suites/clients.js";
import { concurrencySuite } from "./suites/concurrency.js";
import { limitsSuite } from "./suites/limits.js";
import { plantsSuite } from "./suites/plants.js";
import { pruneSuite } from "./suites/prune.js";
import { refreshGraceSuite } from "./suites/refresh-grace.js";
import { refreshTokensSuite } from "./suites/refresh-tokens.js";
import { revokedTokensSuite } from "./suites/revoked-tokens.js";
import { sessionsSuite } from "./suites/sessions.js";
import { signingKeysSuite } from "./suites/signing-keys.js";
import { secretsSuite, throughCoreSuite } from "./suites/through-core.js";
import type { ConformanceTarget, SuiteContext } from "./target.js";

export type { ConformanceTarget } from "./target.js";
export { throttleConcurrencyCases, type OpenTwoInstances } from "./throttle-concurrency.js";

/**
 * Registers the storage conformance suite as a vitest `describe` block named `name`. Every test
 * gets a fresh store from `target.create()` and hands it to `target.destroy()` afterwards.
 *
 * Covered: every method of every store (exact round-trips, duplicates, absent records, ordering,
 * paging (accounts by place, clients by `listPage` cursor), the longest client access-token lifetime (`maxAccessTokenTtl`), atomic all-or-nothing writes, counter windows, expiry clean-up with its batch limit), concurrent
 * `consume`/`create`/`increment` races, console sessions' forward-only `sessions.touch` (30 racing touches keep the latest end; none brings a deleted session back), a store's first signing key (`signingKeys.createIfEmpty`:
 * one of 30 racing calls stores its key), a configured key's stamp (`signingKeys.markSigning`: the later time kept, 30 racing stamps keep the latest), the refresh-token grace window (replay data stored with
 * `consume`, `graceUse` counted atomically and never for a revoked family, 50-way races), two
 * pruners at once, `admin.prune()` over the store, the core running over the store end to end (text
 * with a lone surrogate refused by core with the same answer as on every store, before the store), and,
 * when `target.rawDump` is given, that secrets (console sessions included) are stored only as hashes
 * and that, with a key encryption key, no private signing key material is in any row.
 *
 * @param name Shown as the outermost `describe`, e.g. `"postgres storage"`.
 * @param target How to create (and clean up, and dump) a store.
 *
 * @example
 * // test/conformance.test.ts of your backend
 * import { describeStorageConformance } from "@plantgate/storage-testing";
 * import { createMyStorage } from "../src/index.js";
 *
 * describeStorageConformance("my storage", {
 *   create: async () => createMyStorage({ database: await createEmptyDatabase() }),
 *   destroy: async (storage) => (storage as ReturnType<typeof createMyStorage>).close(),
 *   rawDump: async (storage) => (storage as ReturnType<typeof createMyStorage>).dumpAllRows(),
 * });
 */
export function describeStorageConformance(name: string, target: ConformanceTarget): void {
  // Sequential even under `--sequence.concurrent`: the hooks share one current store.
  describe.sequential(name, () => {
    let current: Storage | undefined;
    const context: SuiteContext = {
      storage() {
        if (!current) throw new Error("storage-testing: no store; did target.create() fail?");
        return current;
      },
      target,
    };

    beforeEach(async () => {
      current = undefined;
      const storage = await target.create();
      if (typeof storage !== "object" || storage === null) throw new TypeError("storage-testing: target.create() must resolve to a Storage");
      current = storage;
    });

    afterEach(async () => {
      const storage = current;
      current = undefined;
      if (storage && target.destroy) await target.destroy(storage);
    });

    clientsSuite(context);
    clientPagesSuite(context);
    clientTtlSuite(context);
    accountsSuite(context);
    refreshTokensSuite(context);
    refreshGraceSuite(context);
    plantsSuite(context);
    signingKeysSuite(context);
    attemptsSuite(context);
    assertionJtisSuite(context);
    revokedTokensSuite(context);
    sessionsSuite(context);
    auditSuite(context);
    limitsSuite(context);
    concurrencySuite(context);
    pruneSuite(context);
    throughCoreSuite(context);
    secretsSuite(context);
  });
}
