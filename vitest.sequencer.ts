/**
 * The order test files start in: the slowest first (longest processing time first), so that the
 * run does not end with one long file on one worker while the other has nothing left. vitest's
 * own order runs the projects one after the other by name and, without a results cache (a clean
 * CI checkout has none), the larger files of each first: the package tests (publish, storage-sql)
 * came last, and the three minutes of pack-install started past the middle of the run.
 */
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Seconds each file took in a clean CI run on a 2-core machine (2026-12-01, bf425f5, two files at
 * once; every file of 5 s or more); files not named here keep vitest's order after these. Re-read
 * them from a CI log when a file changes much: `grep -E "^ [✓×] .*\.test\.ts \("`. A file that
 * runs in a second project is named for that project's run by its path, a space and the project's
 * name (the tests/hostile files on workerd: they take other times than in process); the path alone
 * stands for every project not named so. pack-install was measured before the package builds read
 * each other's declarations (e329680), which shortened its build by about a third.
 */
const SECONDS: Readonly<Record<string, number>> = {
  "tests/publish/test/pack-install.test.ts": 63,
  "packages/storage-sql/test/mysql-resume.test.ts": 39,
  "packages/cloudflare/test/hung-storage.test.ts": 29,
  "packages/storage-sql/test/d1.test.ts": 25,
  "packages/storage-sql/test/postgres.test.ts": 20,
  "packages/observability/test/stdout.test.ts": 19,
  "packages/storage-sql/test/mysql.test.ts": 18,
  "tests/interop/test/bootstrap-values.test.ts": 18,
  "packages/storage-redis/test/behaviour.test.ts": 17,
  "tests/console-e2e/test/console.test.ts": 17,
  "tests/http-suite/test/express.test.ts": 17,
  "packages/client/test/deadlines.test.ts": 17,
  "packages/cloudflare/test/hung-events.test.ts": 16,
  "tests/console-e2e/test/durability.test.ts": 15,
  "packages/client/test/cache-catch-up.test.ts": 15,
  "tests/console-e2e/test/sign-in.test.ts": 14,
  "packages/cloudflare/test/client-sdk-background.test.ts": 14,
  "packages/storage-sql/test/d1-kysely.test.ts": 14,
  "packages/observability/test/metrics-listener.test.ts": 13,
  "packages/cloudflare/test/env.test.ts": 13,
  "packages/cloudflare/test/jwks-uri.test.ts": 13,
  "packages/cli/test/cli.test.ts": 13,
  "tests/docs-browser/test/docs-security.test.ts": 12,
  "packages/cloudflare/test/client-sdk-shared-renewal.test.ts": 12,
  "tests/hostile/test/token-endpoint.test.ts": 11,
  "packages/storage-sql/test/unresponsive.test.ts": 11,
  "packages/cloudflare/test/schema-too-new.test.ts": 10,
  "tests/hostile/test/plants.test.ts @plantgate/hostile-tests-workerd": 10,
  "tests/hostile/test/revocation-introspection.test.ts": 10,
  "tests/interop/test/start-signal.test.ts": 10,
  "tests/interop/test/demo-credentials-unwritable.test.ts": 10,
  "packages/storage-sql/test/admin-races.test.ts": 9,
  "tests/hostile/test/token-endpoint.test.ts @plantgate/hostile-tests-workerd": 9,
  "packages/client/test/clock-steps.test.ts": 9,
  "tests/hostile/test/console.test.ts": 9,
  "packages/storage-sql/test/mysql-lock-wait.test.ts": 8,
  "packages/storage-sql/test/postgres-client-cache.test.ts": 8,
  "tests/http-suite/test/workerd.test.ts": 8,
  "packages/client/test/backoff.test.ts": 8,
  "tests/hostile/test/discovery.test.ts": 7,
  "tests/multi-instance/test/outage-under-load.test.ts": 7,
  "packages/cli/test/cli-password-prompt.test.ts": 7,
  "packages/storage-sql/test/first-key-lock.test.ts": 7,
  "tests/docs-browser/test/docs-page.test.ts": 7,
  "tests/console-e2e/test/keys-view.test.ts": 7,
  "packages/cloudflare/test/d1-timeout.test.ts": 6,
  "packages/cloudflare/test/isolates.test.ts": 6,
  "packages/node/test/serve.test.ts": 6,
  "tests/interop/test/pnpm-start-signal.test.ts": 6,
  "packages/core/test/client-keys-wait.test.ts": 6,
  "packages/storage-sql/test/sqlite.test.ts": 6,
  "bench/test/soak.test.ts": 6,
  "packages/client/test/signals.test.ts": 6,
  "packages/cloudflare/test/failed-start-events.test.ts": 5,
  "examples/custom-storage/test/conformance.test.ts": 5,
  "tests/multi-instance/test/lockout-revocation.test.ts": 5,
  "tests/hostile/test/account-list.test.ts @plantgate/hostile-tests-workerd": 5,
  "packages/express/test/example-server.test.ts": 5,
  "tests/interop/test/start-port.test.ts": 5,
  "tests/interop/test/observability-entry.test.ts": 5,
  "tests/console-e2e/test/robustness.test.ts": 5,
  "packages/storage-sql/test/sqlite-checkpoint.test.ts": 5,
  "tests/hostile/test/plants.test.ts": 5,
};

// fileURLToPath, not URL#pathname: a space in the path stays a space (not %20), and Windows gets C:\.
const root = fileURLToPath(new URL(".", import.meta.url));

export default class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const seconds = (file: TestSpecification) => {
      const path = relative(root, file.moduleId);
      return SECONDS[`${path} ${file.project.name}`] ?? SECONDS[path] ?? 0;
    };
    return ordered
      .map((file, index) => ({ file, index, seconds: seconds(file) }))
      .sort((a, b) => b.seconds - a.seconds || a.index - b.index)
      .map(({ file }) => file);
  }
}
