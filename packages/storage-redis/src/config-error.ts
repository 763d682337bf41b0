/**
 * Thrown when `PLANTGATE_REDIS_URL` is malformed, Redis cannot be reached at start-up, or its user
 * may not run what the hot stores need (EVALSHA, EVAL, the scripts' commands on the prefix's keys;
 * also thrown by `checkRedisPermissions`). Its message never holds a password.
 */
export class RedisConfigError extends Error {
  override readonly name = "RedisConfigError";
}
