/**
 * PLANTGATE_SCOPE_PREFIX's length is checked with the variables (optionsFromEnv), against the
 * Worker's own `maxScopeLength` option when it sets one (the default 128 otherwise): a prefix too
 * long is a start failure naming the variable before D1 is touched (until 2026-12-01 createPlantgate
 * refused it, naming the option), and one the option makes room for starts.
 */
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectD1Bridge, d1BridgeWorker, type D1Bridge } from "../../storage-sql/test/d1-bridge.js";
import { createWorker } from "../src/index.js";

let mf: Miniflare | undefined;
let bridge: D1Bridge | undefined;
beforeAll(async () => {
  // A real D1 database in workerd, reached from Node over the bridge Worker (see its file).
  mf = new Miniflare({ workers: [d1BridgeWorker("DB")] });
  bridge = await connectD1Bridge(mf);
});
afterAll(async () => {
  await bridge?.close();
  await mf?.dispose();
});

describe("PLANTGATE_SCOPE_PREFIX against maxScopeLength on the Worker", () => {
  it("too long for the default maxScopeLength: a start failure naming the variable", async () => {
    const errors: string[] = [];
    const worker = createWorker({ logger: { error: (m, c) => void errors.push(`${m} ${JSON.stringify(c)}`), warn: () => {} } });
    const res = await worker.fetch(new Request("http://worker.test/.well-known/jwks.json"), { DB: bridge!.database, PLANTGATE_SCOPE_PREFIX: "P".repeat(107) });
    expect(res.status).toBe(503);
    expect(errors).toEqual([
      `plantgate worker failed to start {"error":"PLANTGATE_SCOPE_PREFIX is 107 characters, so its scope <prefix>_AllAppsServerCommands is longer than maxScopeLength (128); shorten the prefix or raise maxScopeLength"}`,
    ]);
  });

  it("within the maxScopeLength the Worker's options give: taken, its scopes served", async () => {
    const errors: string[] = [];
    const worker = createWorker({ maxScopeLength: 256, logger: { error: (m, c) => void errors.push(`${m} ${JSON.stringify(c)}`), warn: () => {} } });
    const prefix = "P".repeat(200);
    const res = await worker.fetch(new Request("http://worker.test/.well-known/oauth-authorization-server"), { DB: bridge!.database, PLANTGATE_SCOPE_PREFIX: prefix });
    expect({ status: res.status, errors }).toEqual({ status: 200, errors: [] });
    expect(((await res.json()) as { scopes_supported: string[] }).scopes_supported).toContain(`${prefix}_AllAppsServerCommands`);
  });
});
