/**
 * `signingKeyMaxAgeSeconds` against `signingKeyActivationDelaySeconds`: a new key is published the
 * activation delay (plus up to one key reload, 60 s) before it signs, so no key can be replaced at an
 * age below that. Until 2026-12-01 such a max age was taken and silently not kept (7 days beside a
 * 14-day delay: the first key signed for 14 days); now it is refused at start, naming both options
 * (both variables from the environment).
 */
import { decodeProtectedHeader } from "jose";
import { describe, expect, it } from "vitest";
import { ConfigError, createPlantgate, optionsFromEnv } from "../src/index.js";
import { clientToken, harness } from "./helpers.js";

const quiet = { logger: { error() {}, warn() {} }, passwordHashIterations: 1000 };
const DAY = 86_400;

describe("signingKeyMaxAgeSeconds below the activation delay + 60 s", () => {
  it("is a TypeError naming both options when the app is made", () => {
    expect(() => createPlantgate({ ...quiet, signingKeyMaxAgeSeconds: 7 * DAY, signingKeyActivationDelaySeconds: 14 * DAY })).toThrow(
      new TypeError(
        "signingKeyMaxAgeSeconds must be at least signingKeyActivationDelaySeconds + 60 (1209660): a new key is published that long before it signs, so a key cannot be replaced any younger; got 604800",
      ),
    );
    // The default delay (360 s): at least 420.
    expect(() => createPlantgate({ ...quiet, signingKeyMaxAgeSeconds: 419 })).toThrow(
      new TypeError(
        "signingKeyMaxAgeSeconds must be at least signingKeyActivationDelaySeconds + 60 (420): a new key is published that long before it signs, so a key cannot be replaced any younger; got 419",
      ),
    );
    expect(() => createPlantgate({ ...quiet, signingKeyMaxAgeSeconds: 420 })).not.toThrow();
    expect(() => createPlantgate({ ...quiet, signingKeyMaxAgeSeconds: 14 * DAY + 60, signingKeyActivationDelaySeconds: 14 * DAY })).not.toThrow();
  });

  it("is a ConfigError from optionsFromEnv naming both variables", () => {
    expect(() => optionsFromEnv({ PLANTGATE_SIGNING_KEY_MAX_AGE: String(7 * DAY), PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY: String(14 * DAY) })).toThrow(
      new ConfigError(
        "PLANTGATE_SIGNING_KEY_MAX_AGE must be at least PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY + 60 (1209660): a new key is published that long before it signs, so a key cannot be replaced any younger; got 604800",
      ),
    );
    expect(() => optionsFromEnv({ PLANTGATE_SIGNING_KEY_MAX_AGE: "60" })).toThrow(
      new ConfigError(
        "PLANTGATE_SIGNING_KEY_MAX_AGE must be at least PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY + 60 (420): a new key is published that long before it signs, so a key cannot be replaced any younger; got 60",
      ),
    );
    expect(optionsFromEnv({ PLANTGATE_SIGNING_KEY_MAX_AGE: "420" })).toEqual({ signingKeyMaxAgeSeconds: 420 });
    expect(optionsFromEnv({ PLANTGATE_SIGNING_KEY_MAX_AGE: String(30 * DAY), PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY: String(14 * DAY) })).toEqual({
      signingKeyMaxAgeSeconds: 30 * DAY,
      signingKeyActivationDelaySeconds: 14 * DAY,
    });
  });

  it("the least max age taken (the default delay + 60 s: 420) is kept: the first key no longer signs once it is 420 s old", async () => {
    const h = await harness({ signingKeyMaxAgeSeconds: 420 });
    const first = decodeProtectedHeader(await clientToken(h)).kid;
    // A minute at a time (each step's token request runs the reload that schedules the next key).
    for (let minute = 1; minute <= 7; minute++) {
      h.clock.advance(60_000);
      await clientToken(h);
    }
    expect(decodeProtectedHeader(await clientToken(h)).kid, "the first key still signs 420 s after it activated (max age 420 s)").not.toBe(first);
  });
});
