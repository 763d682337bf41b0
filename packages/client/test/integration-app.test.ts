/**
 * The client against the real core app, in-process: `app.fetch` injected as the client's fetch.
 */
import { createPlantgate, type PlantgateOptions } from "@plantgate/core";
import { describe, expect, it } from "vitest";
import { createClient, type FetchLike } from "../src/index.js";
import { manualClock, recordingLogger } from "./support.js";
import { MAX, realServerSuite, type ManualClock } from "./real-suite.js";

const BASE = "https://platform.example.test";

async function appTarget(serverClock: ManualClock, options: PlantgateOptions = {}, base = BASE) {
  const errors: unknown[] = [];
  const app = createPlantgate({ clock: serverClock.now, passwordHashIterations: 1000, logger: recordingLogger(errors), ...options });
  const { clientSecret } = await app.admin.createClient({ clientId: "third-party" });
  await app.admin.createAccount({ username: "alice", password: "wonderland-42" });
  const fetch: FetchLike = (input, init) => app.fetch(new Request(input, init));
  return { baseUrl: base, fetch, app, clientId: "third-party", clientSecret, username: "alice", password: "wonderland-42", errors, close: async () => {} };
}

realServerSuite("against app.fetch (in-process)", (clock) => appTarget(clock));

describe("against app.fetch under a base path", () => {
  it("uses every route below baseUrl's path", async () => {
    const t = await appTarget(manualClock(Date.now()), { basePath: "/api" }, `${BASE}/api/`);
    const seen: string[] = [];
    const client = createClient({
      baseUrl: t.baseUrl,
      clientId: t.clientId,
      clientSecret: t.clientSecret,
      credentials: { username: t.username, password: t.password },
      scope: "Platform_UserAPIs offline_access",
      fetch: (url, init) => {
        seen.push(new URL(url).pathname);
        return t.fetch(url, init);
      },
    });
    expect((await client.listAccounts()).total).toBe(1);
    expect(await client.createPlant({ id: MAX, name: "Based" })).toEqual({ id: MAX, name: "Based" });
    await client.refresh();
    expect(seen).toEqual(["/api/UserService/connect/token", "/api/rbac/ServerCommand/GetAccountList", "/api/plants", "/api/UserService/connect/token"]);
    expect(t.errors).toEqual([]);
  });
});
