/**
 * `signingKeyActivationDelaySeconds` is bounded as the other lifetimes in seconds are
 * (`accessTokenTtl`, `refreshTokenTtl`, `console.sessionTtlSeconds`): at most 10 years
 * (315 360 000 s). Until 2026-12-02 it had no upper bound: past about 8.6e12 s a rotated key's
 * `activatesAt` is beyond what a Date holds, and the keys' views (the CLI's `keys list`, the
 * console's keys view: `signingKeyView`) failed with a RangeError once such a key was stored.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, createPlantgate, optionsFromEnv, signingKeyView } from "../src/index.js";

const quiet = { logger: { error() {}, warn() {} }, passwordHashIterations: 1000 };
const TEN_YEARS = 315_360_000;

describe("signingKeyActivationDelaySeconds is at most 10 years", () => {
  it.each([TEN_YEARS + 1, 10_000_000_000_000])("%d is a TypeError naming the option when the app is made", async (delay) => {
    let made: ReturnType<typeof createPlantgate> | undefined;
    try {
      made = createPlantgate({ ...quiet, signingKeyActivationDelaySeconds: delay });
    } catch {
      // refused, as it should be
    }
    if (made) {
      // What it did before: taken; a rotation stored a key whose activation no Date holds.
      await made.jwks();
      await made.admin.rotateSigningKey();
      const listed = await made.admin.listSigningKeys();
      expect.soft(() => listed.map(signingKeyView), "the keys' views (CLI keys list, the console's keys view)").not.toThrow();
    }
    expect(() => createPlantgate({ ...quiet, signingKeyActivationDelaySeconds: delay })).toThrow(new TypeError(`signingKeyActivationDelaySeconds must be at most ${TEN_YEARS}`));
  });

  it("10 years is taken, and a rotated key then lists", async () => {
    const app = createPlantgate({ ...quiet, signingKeyActivationDelaySeconds: TEN_YEARS, signingKeyMaxAgeSeconds: TEN_YEARS + 60 });
    await app.jwks();
    await app.admin.rotateSigningKey();
    expect((await app.admin.listSigningKeys()).map((k) => signingKeyView(k).status)).toEqual(["next", "active"]);
  });

  it("PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY is held to the same bound, naming the variable", () => {
    expect(optionsFromEnv({ PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY: String(TEN_YEARS) }).signingKeyActivationDelaySeconds).toBe(TEN_YEARS);
    expect(() => optionsFromEnv({ PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY: String(TEN_YEARS + 1) })).toThrow(
      new ConfigError(`PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY must be at most ${TEN_YEARS}, got "${TEN_YEARS + 1}"`),
    );
  });
});
