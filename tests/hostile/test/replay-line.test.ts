/**
 * The replay line a failed chunk prints (src/run.ts) names the runtime and the store it ran on, as
 * they were asked for, but never the password of a `HOSTILE_REDIS` URL: the line goes to the test output and CI logs.
 */
import { expect, it } from "vitest";
import { replayStoreEnv } from "../src/world.js";

it("the replay line names HOSTILE_RUNTIME, HOSTILE_STORE and HOSTILE_REDIS as run, a Redis URL without its password", () => {
  expect(replayStoreEnv({})).toBe("");
  expect(replayStoreEnv({ HOSTILE_RUNTIME: "" })).toBe("");
  expect(replayStoreEnv({ HOSTILE_RUNTIME: "workerd" })).toBe(" HOSTILE_RUNTIME=workerd");
  expect(replayStoreEnv({ HOSTILE_STORE: "memory", HOSTILE_REDIS: "" })).toBe("");
  expect(replayStoreEnv({ HOSTILE_STORE: "postgres", HOSTILE_REDIS: "1" })).toBe(" HOSTILE_STORE=postgres HOSTILE_REDIS=1");
  expect(replayStoreEnv({ HOSTILE_REDIS: "redis://127.0.0.1:6380/2" })).toBe(" HOSTILE_REDIS=redis://127.0.0.1:6380/2");
  const line = replayStoreEnv({ HOSTILE_STORE: "mysql", HOSTILE_REDIS: "redis://hostile:s3cret-pass@redis.example:6379/0" });
  expect(line).toBe(" HOSTILE_STORE=mysql HOSTILE_REDIS=redis://hostile:***@redis.example:6379/0");
  expect(line).not.toContain("s3cret");
});
