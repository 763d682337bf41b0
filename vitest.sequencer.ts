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
 * Seconds each file took in a clean CI run on a 2-core machine (2026-11-29, two files at once);
 * files not named here keep vitest's order after these. Re-read them from a CI log when a file
 * changes much: `grep -E "^ [✓×] .*\.test\.ts \("`. A file that runs in a second project is named
 * for that project's run by its path, a space and the project's name (the tests/hostile files on
 * workerd: they took other times than in process); the path alone stands for every project not
 * named so. The workerd entries, world-setup's and store-admin-connection's were read on
 * 2026-11-30 from one run of each project alone on a 2-core machine (two files at once), not from
 * CI: world-setup took 0.3 s in process, listed so that it reads as measured.
 */
const SECONDS: Readonly<Record<string, number>> = {
  "tests/publish/test/pack-install.test.ts": 194,
  "packages/storage-sql/test/mysql-resume.test.ts": 50,
  "packages/storage-sql/test/d1.test.ts": 49,
  "tests/hostile/test/revocation-introspection.test.ts": 42,
  "tests/hostile/test/token-endpoint.test.ts": 40,
  "packages/storage-sql/test/postgres.test.ts": 38,
  "tests/console-e2e/test/console.test.ts": 38,
  "packages/storage-sql/test/d1-kysely.test.ts": 37,
  "packages/observability/test/stdout.test.ts": 35,
  "tests/http-suite/test/workerd.test.ts": 34,
  "packages/storage-sql/test/mysql.test.ts": 33,
  "tests/hostile/test/plants.test.ts @plantgate/hostile-tests-workerd": 32,
  "bench/test/soak.test.ts": 31,
  "tests/hostile/test/token-endpoint.test.ts @plantgate/hostile-tests-workerd": 31,
  "packages/cli/test/cli.test.ts": 26,
  "tests/hostile/test/discovery.test.ts": 26,
  "tests/hostile/test/console.test.ts": 24,
  "tests/http-suite/test/express.test.ts": 23,
  "tests/multi-instance/test/lockout-revocation.test.ts": 21,
  "tests/hostile/test/plants.test.ts": 20,
  "packages/storage-redis/test/behaviour.test.ts": 16,
  "tests/multi-instance/test/outage-under-load.test.ts": 16,
  "tests/hostile/test/account-list.test.ts": 15,
  "tests/hostile/test/account-list.test.ts @plantgate/hostile-tests-workerd": 10,
  "tests/hostile/test/store-admin-connection.test.ts": 3,
  "tests/hostile/test/world-setup.test.ts @plantgate/hostile-tests-workerd": 2,
  "tests/hostile/test/world-setup.test.ts": 0,
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
