/**
 * `issuer` and `audience` are strings, as their types say; from JavaScript (a config file, JSON
 * with a number) anything was taken until 2026-12-02: a number or an object as either made every
 * token request a 500 (the signing refused the claim), and `audience: ""` was taken too (tokens
 * with an empty `aud`). Now each is a TypeError naming the option when the app is made.
 */
import { describe, expect, it } from "vitest";
import { createPlantgate, type PlantgateOptions } from "../src/index.js";
import { basic, tokenRequest } from "./helpers.js";

const quiet = { logger: { error() {}, warn() {} }, passwordHashIterations: 1000 };

describe("issuer and audience must be non-empty strings", () => {
  it.each([
    ["issuer", 42],
    ["issuer", { url: "https://as.example.test" }],
    ["issuer", ""],
    ["audience", 42],
    ["audience", { aud: "api" }],
    ["audience", ["api"]],
    ["audience", ""],
  ])("%s: %j is a TypeError naming the option when the app is made", async (name, value) => {
    const make = () => createPlantgate({ ...quiet, [name]: value } as unknown as PlantgateOptions);
    // What it did before: taken, and every token request failed.
    let made: ReturnType<typeof createPlantgate> | undefined;
    try {
      made = make();
    } catch {
      // refused, as it should be
    }
    if (made) {
      const { clientSecret } = await made.admin.createClient({ clientId: "c1" });
      const res = await tokenRequest(made, { grant_type: "client_credentials" }, { authorization: basic("c1", clientSecret) });
      expect.soft(res.status, "token request with the value taken").not.toBe(500);
    }
    expect(make).toThrow(new TypeError(`${name} must be a non-empty string`));
  });

  it("string values are taken as before", () => {
    expect(() => createPlantgate({ ...quiet, issuer: "urn:example:as", audience: "api://plants" })).not.toThrow();
    expect(() => createPlantgate({ ...quiet, issuer: "https://as.example.test", audience: "x" })).not.toThrow();
  });
});
