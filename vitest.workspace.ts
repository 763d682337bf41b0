/** The one list of test projects; vitest.config.ts hands it to `test.projects`. */
import { readdirSync } from "node:fs";

// Every package and test folder is a project, each with its own vitest.config.ts. The files on a
// D1 database in Miniflare reach it over the bridge of packages/storage-sql/test/d1-bridge.ts and run
// beside the others; Miniflare's synchronous D1 proxy, which lost its replies beside other files,
// is no longer used for them.
const dirs = (parent: string) =>
  readdirSync(new URL(`./${parent}`, import.meta.url), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `${parent}/${entry.name}`);

// tests/hostile is a second project too: its files with a Workers path, on workerd (HOSTILE_RUNTIME=workerd).
const projects: string[] = [...dirs("packages"), ...dirs("tests"), "tests/hostile/vitest.workerd.config.ts", "examples/custom-storage", "examples/cloudflare-worker", "bench"];

export default projects;
