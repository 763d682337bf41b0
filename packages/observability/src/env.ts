/** The two environment variables of the example servers' logs and metrics. */
import { ConfigError, type EnvVars } from "@plantgate/core";
import type { LevelWithSilent } from "pino";
import { LOG_LEVELS } from "./logs.js";

/** What {@link observabilityFromEnv} reads. */
export interface ObservabilitySettings {
  /** `PLANTGATE_LOG_LEVEL`; default `info`. */
  logLevel: LevelWithSilent;
  /** `PLANTGATE_METRICS_PORT`; null (unset or empty) = no metrics listener. `0` picks a free port. */
  metricsPort: number | null;
}

/**
 * Reads `PLANTGATE_LOG_LEVEL` (trace, debug, info, warn, error, fatal, silent; default info) and
 * `PLANTGATE_METRICS_PORT` (0-65535; unset = no metrics). Anything else is a `ConfigError`.
 *
 * @example
 * const { logLevel, metricsPort } = observabilityFromEnv(process.env);
 */
export function observabilityFromEnv(env: EnvVars): ObservabilitySettings {
  const level = env.PLANTGATE_LOG_LEVEL;
  if (level !== undefined && level !== "" && !(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new ConfigError(`PLANTGATE_LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got "${level}"`);
  }
  const port = env.PLANTGATE_METRICS_PORT;
  if (port !== undefined && port !== "" && (!/^\d{1,5}$/.test(port) || Number(port) > 65535)) {
    throw new ConfigError(`PLANTGATE_METRICS_PORT must be a port number 0-65535, got "${port}"`);
  }
  return {
    logLevel: level === undefined || level === "" ? "info" : (level as LevelWithSilent),
    metricsPort: port === undefined || port === "" ? null : Number(port),
  };
}
