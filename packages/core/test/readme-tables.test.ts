/**
 * The README's reference tables against the code they describe: the security events table
 * (`SECURITY_EVENT_TYPES` is "every event type name, in the README's order"), the API error table
 * (`ApiErrorCode`) and the token endpoint's error table (`OAuthError`'s statuses). A type, code or
 * status added, removed or renamed on one side only fails here, so the README cannot drift unseen.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ApiErrorCode, OAuthError, SECURITY_EVENT_TYPES } from "../src/index.js";
import { OAUTH_ERROR_CODES } from "../src/schemas/errors.js";

const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8");

/** The rows (cells, trimmed) of the first table under the heading `heading`, header and rule left out. */
function tableUnder(heading: string, after = 0): string[][] {
  const at = readme.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`README has no heading ${heading}`);
  const lines = readme.slice(at).split("\n");
  let first = lines.findIndex((line) => line.startsWith("|"));
  for (let skip = after; skip > 0; skip--) {
    first = lines.findIndex((line, i) => i > first && !line.startsWith("|"));
    first = lines.findIndex((line, i) => i > first && line.startsWith("|"));
  }
  const rows: string[][] = [];
  for (let i = first + 2; i < lines.length && lines[i]!.startsWith("|"); i++) {
    // Split on the cell separators only: a `\|` inside a cell is text.
    rows.push(lines[i]!.slice(1, -1).split(/(?<!\\)\|/).map((cell) => cell.trim()));
  }
  return rows;
}

const codeSpans = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

describe("README tables", () => {
  it("security events: one row per type, in SECURITY_EVENT_TYPES' order", () => {
    const types = tableUnder("## Security events").flatMap((row) => codeSpans(row[0]!));
    expect(types).toEqual([...SECURITY_EVENT_TYPES]);
  });

  it("API errors: every ApiErrorCode, in its order, and nothing else", () => {
    const rows = tableUnder("## Error codes", 1);
    expect(rows.map((row) => Number(codeSpans(row[0]!)[0] ?? row[0]))).toEqual(Object.values(ApiErrorCode));
    // Each status is a number the HTTP answer can carry.
    for (const row of rows) expect(row[1], row[0]).toMatch(/^[1-5]\d\d$/);
  });

  it("token endpoint errors: every OAuth error code with the status OAuthError gives it", () => {
    const rows = tableUnder("## Error codes");
    const codes = new Set(rows.map((row) => codeSpans(row[1]!)[0]));
    // The codes the token endpoint's schema declares (the OpenAPI document's list too).
    const all = OAUTH_ERROR_CODES;
    expect([...codes].sort()).toEqual([...all].sort());
    // The one row per code whose status is OAuthError's own (the table adds 405 and 429 rows for
    // a wrong method and a throttle, answered by other code paths).
    for (const code of all) {
      const statuses = rows.filter((row) => codeSpans(row[1]!)[0] === code).map((row) => Number(row[0]));
      expect(statuses, code).toContain(new OAuthError(code, "x").status);
    }
  });
});
