// `pnpm soak`: a simulated year of traffic through plantgate's core on SQLite, pruned on its
// schedule; prints every table's rows / live set at each simulated month and exits 1 when a table
// holds more than twice its live set. SOAK_DAYS shortens it.
import { runSoak, soakSummary, soakTable, YEAR } from "./soak-run.js";

const settings = { ...YEAR, ...(process.env.SOAK_DAYS ? { days: Number(process.env.SOAK_DAYS) } : {}) };
if (process.env.SOAK_PRUNE_INTERVAL_SECONDS) settings.pruneIntervalSeconds = Number(process.env.SOAK_PRUNE_INTERVAL_SECONDS);
console.log(
  `soak: ${settings.days} simulated days, prune every ${settings.pruneIntervalSeconds} s, brute-force window ${settings.bruteForceWindowSeconds} s (SQLite)`,
);
const result = await runSoak(settings, (s) => {
  const cells = Object.entries(s.tables).map(([t, { rows, live }]) => `${t.replace(/^pg_/, "")} ${rows}/${live}`);
  console.log(`month ${String(s.month).padStart(2)}: ${cells.join("  ")}`);
});
console.log("\n" + soakTable(result.samples) + "\n");
console.log(`${soakSummary(result)}, ${(result.elapsedMs / 1000).toFixed(1)} s`);
if (result.violations.length > 0) {
  console.error(`FAIL: a table above 2x its live set:\n  ${result.violations.join("\n  ")}`);
  process.exit(1);
}
console.log("ok: every table within 2x its live set at every month");
