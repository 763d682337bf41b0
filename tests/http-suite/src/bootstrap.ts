/** What every runner of the suite starts its server with: a fresh bootstrap client and administrator, and the walkers. */
import { randomBytes } from "node:crypto";
import type { Plantgate } from "@plantgate/core";

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

/** The bootstrap client and account of one runner (random, so no two runs share credentials). */
export interface SuiteIdentity {
  clientId: string;
  clientSecret: string;
  username: string;
  password: string;
}

/**
 * A fresh identity and the env that makes a server (node, Express, the Worker) create it: the
 * bootstrap account is an administrator and the console is on (the suite's console tests), and
 * password hashing is cheap enough for a test.
 */
export function suiteBootstrap(): { identity: SuiteIdentity; env: Record<string, string> } {
  const identity = { clientId: `suite-${hex(4)}`, clientSecret: hex(32), username: `alice-${hex(4)}`, password: hex(16) };
  const env = {
    PLANTGATE_BOOTSTRAP_CLIENT_ID: identity.clientId,
    PLANTGATE_BOOTSTRAP_CLIENT_SECRET: identity.clientSecret,
    PLANTGATE_BOOTSTRAP_USERNAME: identity.username,
    PLANTGATE_BOOTSTRAP_PASSWORD: identity.password,
    PLANTGATE_PASSWORD_HASH_ITERATIONS: "1000",
    PLANTGATE_BOOTSTRAP_ADMIN: "1",
  };
  return { identity, env };
}

/** Creates the `count` extra accounts the suite pages through (random names and passwords). */
export async function createWalkers(admin: Plantgate["admin"], count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await admin.createAccount({ username: `walker-${String(i).padStart(2, "0")}-${hex(3)}`, password: hex(16) });
  }
}
