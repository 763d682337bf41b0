// The storage-sql README states the schema version this code creates; an operator planning an
// upgrade reads it against `pendingMigrations` / the CLI's messages (it said 11 after 0012 made 12).
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { LATEST_SCHEMA_VERSION } from "../src/index.js";

it("README's LATEST_SCHEMA_VERSION figure is the code's", () => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const m = /`LATEST_SCHEMA_VERSION` is\s+the version this code creates \((\d+)\)/.exec(readme);
  expect(Number(m?.[1])).toBe(LATEST_SCHEMA_VERSION);
});
