import type { PlantgateOptions } from "./options.js";

/** Environment variables, as `process.env` or a Worker's `env` hands them over. */
export type EnvVars = Record<string, string | undefined>;

/** Thrown for a malformed environment variable; the message names the variable, never its value if secret. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

function int(env: EnvVars, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  if (!/^\d{1,12}$/.test(raw) || Number(raw) < 1) throw new ConfigError(`${name} must be a positive integer, got "${raw}"`);
  return Number(raw);
}

/**
 * The plantgate options that come from the environment, shared by the example servers and the CLI
 * so both see the same store and settings:
 * `PLANTGATE_ISSUER`, `PLANTGATE_SCOPE_PREFIX`, `PLANTGATE_SIGNING_KEY` (private JWK as JSON),
 * `PLANTGATE_PASSWORD_HASH_ITERATIONS`, `PLANTGATE_ACCESS_TOKEN_TTL`.
 *
 * @example
 * const app = createPlantgate({ ...optionsFromEnv(process.env), storage });
 */
export function optionsFromEnv(env: EnvVars): PlantgateOptions {
  const out: PlantgateOptions = {};
  if (env.PLANTGATE_ISSUER) {
    try {
      new URL(env.PLANTGATE_ISSUER);
    } catch {
      throw new ConfigError(`PLANTGATE_ISSUER must be an absolute URL, got "${env.PLANTGATE_ISSUER}"`);
    }
    out.issuer = env.PLANTGATE_ISSUER;
  }
  if (env.PLANTGATE_SCOPE_PREFIX) out.scopePrefix = env.PLANTGATE_SCOPE_PREFIX;
  if (env.PLANTGATE_SIGNING_KEY) {
    try {
      const jwk = JSON.parse(env.PLANTGATE_SIGNING_KEY) as unknown;
      if (typeof jwk !== "object" || jwk === null || !("d" in jwk)) throw new Error();
    } catch {
      throw new ConfigError("PLANTGATE_SIGNING_KEY must be a private JWK in JSON (an object with a 'd' member)");
    }
    out.signingKey = env.PLANTGATE_SIGNING_KEY;
  }
  const iterations = int(env, "PLANTGATE_PASSWORD_HASH_ITERATIONS");
  if (iterations !== undefined) out.passwordHashIterations = iterations;
  const ttl = int(env, "PLANTGATE_ACCESS_TOKEN_TTL");
  if (ttl !== undefined) out.accessTokenTtl = ttl;
  return out;
}
