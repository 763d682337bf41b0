/**
 * The published conformance suite on composed storage: SQLite (in memory) for clients, accounts,
 * refresh tokens, plants and keys, and the machine's Redis for attempts, revoked tokens and
 * console sessions and client-assertion jtis, exactly as `{ ...sql, ...redisHotStores(client) }`.
 */
import { describeStorageConformance } from "@plantgate/storage-testing";
import { afterAll, beforeAll } from "vitest";
import { composedTarget, connect, describeIfRedis, probeRedis, redact, REDIS_URL, type TestClient } from "./support.js";

const problem = await probeRedis();

describeIfRedis(`redis at ${redact(REDIS_URL)}`, problem, () => {
  let client: TestClient | undefined;
  beforeAll(async () => {
    client = await connect();
  });
  afterAll(() => client?.destroy());

  describeStorageConformance("sqlite + redis hot stores (key prefix per test)", composedTarget(() => client!));
});
