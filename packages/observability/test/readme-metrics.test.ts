/**
 * The README's metrics table against what `createMetrics()` registers: the same plantgate metric
 * names, each with the documented type and labels. A metric or label added, removed or renamed on
 * one side only fails here.
 */
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { createMetrics } from "../src/index.js";

const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");

/** `{name: "type labels,..."}` of the README's "### Metrics" table rows for plantgate's own metrics. */
function documented(): Record<string, string> {
  const section = readme.slice(readme.indexOf("\n### Metrics\n"));
  const rows = section.split("\n").filter((line) => line.startsWith("| `plantgate_"));
  return Object.fromEntries(
    rows.map((line) => {
      const [name, type, labels] = line.slice(1).split("|").map((cell) => cell.trim());
      const labelNames = [...labels!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
      return [name!.replace(/`/g, ""), `${type} ${labelNames.join(",")}`];
    }),
  );
}

it("README's metrics table: every plantgate metric with its type and labels", async () => {
  const metrics = createMetrics({ processMetrics: false });
  // One observation of each kind, so every labelled metric has a series to read its labels from.
  metrics.observer.request!({ route: "/UserService/connect/token", method: "POST", status: 200, durationMs: 1, grantType: "password", result: "success" });
  metrics.observer.storage!({ store: "clients", operation: "get", durationMs: 1, failed: true });
  metrics.countEvent({ type: "refresh_token.reuse_detected", id: "e", time: 0, family_id: "f", client_id: "c", account_id: "a", client_ip: null });
  const registered: Record<string, string> = {};
  for (const metric of await metrics.registry.getMetricsAsJSON()) {
    const labels = new Set(metric.values.flatMap((value) => Object.keys(value.labels)).filter((label) => label !== "le"));
    registered[metric.name] = `${metric.type} ${[...labels].join(",")}`;
  }
  expect(registered).toEqual(documented());
});
