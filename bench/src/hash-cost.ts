import { pbkdf2, randomBytes } from "node:crypto";
import { promisify } from "node:util";
import { hashPassword } from "@plantgate/core";

const pbkdf2Async = promisify(pbkdf2);

/** Median milliseconds of one PBKDF2-SHA256 password hash, plantgate's (WebCrypto) and node:crypto's. */
export interface HashCost {
  iterations: number;
  plantgateMs: number;
  nodeCryptoMs: number;
  samples: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function time(fn: () => Promise<unknown>, samples: number): Promise<number> {
  const out: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return median(out);
}

/**
 * Measures the hash on its own, in the harness process (not pinned: it runs while no server is
 * under load), so the password-grant rows can run at a cheaper, documented iteration count.
 */
export async function measureHashCost(iterations: number, samples: number): Promise<HashCost> {
  const random = (n: number) => new Uint8Array(randomBytes(n));
  const salt = randomBytes(16);
  await hashPassword("warm-up-password", random, { iterations: 1000 });
  return {
    iterations,
    plantgateMs: await time(() => hashPassword("correct horse battery staple", random, { iterations }), samples),
    nodeCryptoMs: await time(() => pbkdf2Async("correct horse battery staple", salt, iterations, 32, "sha256"), samples),
    samples,
  };
}
