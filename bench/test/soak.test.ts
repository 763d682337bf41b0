/**
 * A shortened soak (two simulated months at a higher hourly load) proves the bounded-growth
 * property in CI: pruned on its schedule, no table holds more than twice its live set at any month,
 * and the prune really removed rows of every kind that expires.
 */
import { describe, expect, it } from "vitest";
import { runSoak, soakSummary, soakTable, withinBound, YEAR } from "../src/soak-run.js";

describe("soak (shortened)", () => {
  it("two simulated months: every table stays within 2x its live set, and every expiring kind was pruned", async () => {
    const result = await runSoak({
      ...YEAR,
      days: 60,
      accounts: 10,
      passwordGrants: 0.5,
      refreshEveryDays: 5,
      failedLogins: 1,
      consoleSignIns: 0.5,
      accessRevocations: 0.5,
      familyRevocations: 0.05,
      pruneIntervalSeconds: 3600,
      bruteForceWindowSeconds: 7200,
      signingKeyMaxAgeSeconds: 20 * 86_400,
    });
    expect(result.samples.map((s) => s.month)).toEqual([1, 2]);
    expect(result.violations, soakTable(result.samples)).toEqual([]);
    for (const sample of result.samples) {
      for (const [table, { rows, live }] of Object.entries(sample.tables)) expect(rows, `month ${sample.month} ${table}`).toBeLessThanOrEqual(withinBound(live));
    }
    // Something of each kind expired and was deleted; the signing key rotated (day 20, 40) and the
    // replaced keys were pruned.
    expect(result.pruned.refreshTokens).toBeGreaterThan(0);
    expect(result.pruned.sessions).toBeGreaterThan(0);
    expect(result.pruned.attempts).toBeGreaterThan(0);
    expect(result.pruned.revokedTokens).toBeGreaterThan(0);
    expect(result.pruned.signingKeys).toBe(2);
    // Only the prune's row counts are summed (until 2026-11-30 its boolean `complete` was too, and
    // the output read "complete":1440); the runs are counted, and those that left work behind.
    expect(Object.keys(result.pruned)).toEqual(["refreshTokens", "sessions", "attempts", "revokedTokens", "assertionJtis", "signingKeys", "auditEvents"]);
    expect(result.pruneRuns).toBe(60 * 24);
    expect(result.incompletePruneRuns).toBe(0);
    const p = result.pruned;
    expect(soakSummary(result)).toBe(
      `requests: ${result.requests}, pruned: {"refreshTokens":${p.refreshTokens},"sessions":${p.sessions},"attempts":${p.attempts},"revokedTokens":${p.revokedTokens},"assertionJtis":0,"signingKeys":2,"auditEvents":0}, prune runs: 1440 (0 incomplete: none left work for the next run)`,
    );
  });

  it("the bound: twice the live set, and a tiny live set may carry 3 rows that expired since the last prune (one failed login's counters)", () => {
    expect([0, 1, 2, 3, 100].map(withinBound)).toEqual([3, 4, 5, 6, 200]);
  });
});
