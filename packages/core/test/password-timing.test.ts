/**
 * RFC 9700 §2.4 / RFC 6749 §10.10 (and design.md "Passwords"): an unknown username costs the same
 * time as a known one with a wrong password, so response timing does not reveal which usernames
 * exist. Measured through the public fetch boundary at a realistic PBKDF2 cost (100 000 iterations,
 * the most workerd allows), with interleaved samples and medians so scheduler noise on a shared
 * machine does not decide the result.
 */
import { describe, expect, it, vi } from "vitest";
import { createPlantgate } from "../src/index.js";
import { BASE, basic } from "./helpers.js";
import { FORM } from "./token-helpers.js";

const ITERATIONS = 100_000;
const SAMPLES = 51;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

describe("password grant timing", () => {
  it("an account hashed before the cost was raised: a wrong password costs today's PBKDF2 iterations, as an unknown username does, the app's first included (counted, not timed)", async () => {
    // Accounts made at 1 000 iterations, then the server restarted at 20 000 (the operator raised it).
    const before = createPlantgate({ passwordHashIterations: 1_000, logger: { error() {}, warn() {} } });
    const { clientSecret } = await before.admin.createClient({ clientId: "timing" });
    await before.admin.createAccount({ username: "alice", password: "the-right-password" });
    const app = createPlantgate({ storage: before.storage, passwordHashIterations: 20_000, bruteForce: { maxFailures: 1_000_000 }, logger: { error() {}, warn() {} } });
    const deriveBits = crypto.subtle.deriveBits.bind(crypto.subtle);
    let iterations = 0;
    const spy = vi.spyOn(crypto.subtle, "deriveBits").mockImplementation((params, key, length) => {
      iterations += (params as Pbkdf2Params).iterations ?? 0;
      return deriveBits(params, key, length);
    });
    try {
      const attempt = async (username: string, password = "a-wrong-password") => {
        iterations = 0;
        const res = await app.fetch(
          new Request(`${BASE}/UserService/connect/token`, {
            method: "POST",
            headers: { "content-type": FORM, authorization: basic("timing", clientSecret) },
            body: new URLSearchParams({ grant_type: "password", username, password }).toString(),
          }),
        );
        expect(res.status).toBe(400);
        return iterations;
      };
      // The first unknown username of the app costs what every later one does (until 2026-12-01
      // 40 000: a dummy hash made on first use, then checked against).
      expect(await attempt("nobody-0")).toBe(20_000);
      // Before 2026-11-29: 1 000 for alice against 20 000 for an unknown name.
      expect([await attempt("alice"), await attempt("nobody-1")]).toEqual([20_000, 20_000]);
      // A password with U+0000 is refused before any hashing, for both: padded alike.
      expect([await attempt("alice", "x\u0000y"), await attempt("nobody-2", "x\u0000y")]).toEqual([20_000, 20_000]);
      // The right password of a disabled account is refused as slowly as a wrong one (no oracle).
      await app.admin.setAccountEnabled("alice", false);
      expect([await attempt("alice", "the-right-password"), await attempt("alice")]).toEqual([20_000, 20_000]);
    } finally {
      spy.mockRestore();
    }
  });

  // Run again (at most twice) when it fails: under a machine's heaviest load (a clean-clone CI beside
  // four review helpers' test runs, 2026-12-01) a paired median read 10.4% once, where it reads
  // 0-2% alone and with both cores busy; a real leak (a hash skipped for unknown names: 50% and
  // more) fails every run.
  it("RFC 9700 §2.4: unknown username vs wrong password differ by less than 10% (medians)", { timeout: 30_000, retry: 2 }, async () => {
    // A high lock-out threshold: the throttle still does its storage work on every attempt (the same
    // for both cases), but the measured user must never be locked mid-run.
    const app = createPlantgate({
      passwordHashIterations: ITERATIONS,
      bruteForce: { maxFailures: 1_000_000 },
      logger: { error() {}, warn() {} },
    });
    const { clientSecret } = await app.admin.createClient({ clientId: "timing" });
    await app.admin.createAccount({ username: "alice", password: "the-right-password" });
    const attempt = async (username: string) => {
      const body = new URLSearchParams({ grant_type: "password", username, password: "a-wrong-password" }).toString();
      const start = performance.now();
      const res = await app.fetch(
        new Request(`${BASE}/UserService/connect/token`, {
          method: "POST",
          headers: { "content-type": FORM, authorization: basic("timing", clientSecret) },
          body,
        }),
      );
      const elapsed = performance.now() - start;
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: "invalid_grant", error_description: "The username or password is incorrect." });
      return elapsed;
    };
    // Warm up both paths (JIT).
    await attempt("alice");
    await attempt("nobody-0");
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      // Alternate which case goes first so drift in machine load hits both equally.
      if (i % 2) {
        known.push(await attempt("alice"));
        unknown.push(await attempt(`nobody-${i}`));
      } else {
        unknown.push(await attempt(`nobody-${i}`));
        known.push(await attempt("alice"));
      }
    }
    const k = median(known);
    const u = median(unknown);
    // Sanity: the measurement is dominated by the password hash, not by noise around a no-op.
    expect(Math.min(k, u)).toBeGreaterThan(5);
    // The two attempts of a pair run back to back, so load from other test workers (which comes and
    // goes over seconds) hits both alike; the median of the paired differences is what a timing
    // attacker averaging many probes would see.
    const diff = median(known.map((t, i) => t - unknown[i]!));
    const detail = `medians: wrong password ${k.toFixed(1)} ms, unknown user ${u.toFixed(1)} ms; median paired difference ${diff.toFixed(2)} ms`;
    expect(Math.abs(diff) / Math.max(k, u), detail).toBeLessThan(0.1);
  });
});
