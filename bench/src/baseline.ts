// BENCH_BASELINE=<git ref>: the same workloads on another commit's plantgate, in the same run, for
// A/B figures of a change (both servers built and started the same way, one after the other).
// The commit's files are exported with `git archive` into a folder in the temp directory (kept
// between runs, keyed by the commit) and installed with its own lockfile; its bench server is
// then bundled and started exactly as this checkout's.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BENCH_DIR } from "./proc.js";

/** Another commit's bench folder, ready to build servers from. */
export interface Baseline {
  /** Abbreviated commit id, for labels. */
  commit: string;
  /** The commit's `bench/` folder (what {@link BENCH_DIR} is for this checkout). */
  benchDir: string;
}

const REPO = join(BENCH_DIR, "..");

/** Exports and installs `ref` (once per commit; the folder is reused by later runs). */
export function prepareBaseline(ref: string, log: (line: string) => void): Baseline {
  const commit = execFileSync("git", ["-C", REPO, "rev-parse", "--short=10", `${ref}^{commit}`], { encoding: "utf8" }).trim();
  const root = join(tmpdir(), `plantgate-bench-baseline-${commit}`);
  const ready = join(root, ".bench-baseline-ready");
  if (!existsSync(ready)) {
    log(`baseline ${ref} (${commit}): exporting and installing into ${root}`);
    rmSync(root, { recursive: true, force: true });
    mkdirSync(root, { recursive: true });
    execFileSync("sh", ["-c", `git -C "${REPO}" archive ${commit} | tar -x -C "${root}"`], { stdio: ["ignore", "ignore", "inherit"] });
    execFileSync("pnpm", ["install", "--frozen-lockfile", "--prefer-offline", "--silent"], { cwd: root, stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, CI: "true" } });
    execFileSync("sh", ["-c", `touch "${ready}"`]);
  }
  return { commit, benchDir: join(root, "bench") };
}
