/**
 * The token endpoint with a strict brute-force limit (3 failures per 60 s, clock stopped), so the
 * generated failures lock clients and users within a few requests. Besides the usual invariants:
 * a 429 is `temporarily_unavailable` with `Retry-After`, and its body is the same byte for byte
 * whether the credentials in the request were right or wrong, so a lock-out reveals nothing.
 * `attempts` is excluded from the store comparison: its counters change on failures by design.
 */
import fc from "fast-check";
import { expect, it } from "vitest";
import { buildFormRequest, entitlement, formSpecArb, replayedFamily, type FormSpec } from "../src/form-request.js";
import { fail, familyRevocation, noServerError, oauthError, read, withStoreCheck } from "../src/invariants.js";
import { bump, runChunked, summary } from "../src/run.js";
import { COVERAGE_CHECKS, RUNS } from "../src/settings.js";
import { TOKEN_PATH } from "../src/world.js";

const RUNS_HERE = Math.ceil(RUNS / 5);

/** Mostly wrong secrets and passwords (a success resets the counters), the rest as generated. */
const lockoutSpecArb = fc.tuple(formSpecArb, fc.nat(9)).map(([spec, n]): FormSpec => {
  if (n >= 7) return spec;
  if (spec.template === "password" && n % 2 === 0) return { ...spec, params: [...spec.params, { k: "password", how: "append" }] };
  return { ...spec, auth: [...spec.auth, { k: "secret", how: "append" }] };
});

it(`token endpoint under a strict lock-out: ${RUNS_HERE} generated requests: 429 says nothing about the credentials, still no token for bad ones`, async () => {
  const lockBodies = new Map<string, number>();
  const tally = await runChunked(
    fc.tuple(lockoutSpecArb, fc.constantFrom(undefined, "198.51.100.7", "203.0.113.9", "2001:db8::1")),
    async (world, [spec, ip], tally) => {
      const { request, sent } = await buildFormRequest(world, spec, TOKEN_PATH);
      const ent = await entitlement(world, sent);
      const family = await replayedFamily(world, sent);
      const a = await withStoreCheck(
        world,
        async () => read(await world.app.fetch(request, ip === undefined ? undefined : { clientIp: ip })),
        (x) => x.status !== 200,
        // A replayed refresh token revokes its family (RFC 9700 §4.14.2), lock-out or not.
        (x) =>
          family === null || x.status === 429
            ? undefined
            : familyRevocation(family),
      );
      noServerError(a);
      if (a.status === 200) {
        if (ent === null) fail("a token for bad credentials under lock-out", a);
        bump(tally, "issued");
      } else {
        const code = oauthError(a, { head: sent.method === "HEAD" });
        if (a.status === 429) {
          if (code !== "temporarily_unavailable") fail("a 429 that is not temporarily_unavailable", a);
          lockBodies.set(a.text, (lockBodies.get(a.text) ?? 0) + 1);
          bump(tally, ent === null ? "429-bad-credentials" : "429-good-credentials");
        }
      }
      return a.status;
    },
    { runs: RUNS_HERE, world: { bruteForce: { maxFailures: 3, windowSeconds: 60 } } },
  );
  console.log(`lock-out: ${summary(tally)}`);
  if (COVERAGE_CHECKS) {
    expect(tally.labels.get("429-bad-credentials") ?? 0).toBeGreaterThan(RUNS_HERE / 100);
    expect(tally.labels.get("429-good-credentials") ?? 0).toBeGreaterThan(RUNS_HERE / 100);
  }
  // One body for every 429, right or wrong credentials alike. A small HOSTILE_RUNS (a replay) may
  // lock nothing at all; with the coverage checks on, the counts above say 429s were answered.
  expect([...lockBodies.keys()].length).toBeLessThanOrEqual(1);
});
