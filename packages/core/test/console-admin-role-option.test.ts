/**
 * `console.adminRole` is held to the rule every stored role follows (checkAccountInput): 1-100
 * characters, no control or invisible character, none at either end. Until 2026-12-02 any string of
 * 1-100 characters was taken: a role no account can be given, so nobody could sign in to the
 * console, and nothing said why.
 */
import { describe, expect, it } from "vitest";
import { createPlantgate, type PlantgateOptions } from "../src/index.js";

const quiet = { logger: { error() {}, warn() {} }, passwordHashIterations: 1000 };
const make = (adminRole: unknown) => createPlantgate({ ...quiet, console: { enabled: true, adminRole } } as unknown as PlantgateOptions);
const RULE = "console.adminRole must be a role an account can be given: 1-100 characters, without control or invisible characters (none at either end)";

describe("console.adminRole follows the role rule", () => {
  it.each([
    ["a leading space", " admin"],
    ["a trailing space", "admin "],
    ["a zero-width space", "admin\u200b"],
    ["a line feed", "ad\nmin"],
    ["U+0000", "ad\u0000min"],
    ["a lone surrogate", "admin\ud800"],
    ["a bidi override", "\u202eadmin"],
    ["101 characters", "a".repeat(101)],
    ["an empty string", ""],
    ["a number", 7],
  ])("%s is refused at start, naming the option and the rule", async (_what, role) => {
    // Such a role cannot be stored: the account that should hold it is refused.
    if (typeof role === "string" && role !== "") {
      const app = createPlantgate(quiet);
      await expect(app.admin.createAccount({ username: "root", password: "long-enough-1", roles: [role] })).rejects.toThrow(/^roles must be/);
    }
    expect(() => make(role)).toThrow(new TypeError(RULE));
  });

  it("a role an account can hold is taken (inner spaces and non-ASCII letters included)", () => {
    for (const role of ["admin", "site admin", "administrateur·rice", "Ops/Root"]) expect(() => make(role), role).not.toThrow();
  });
});
