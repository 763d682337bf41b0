/**
 * Management console: "Regenerate secret" when the store fails after the secret was replaced. The
 * new secret is the only way back for the client: until 2026-12-01 a re-read of the client after
 * the replacement came between, and its failure answered 503 without the secret while the old ones
 * were already refused (the client locked out, and the answer said nothing happened).
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, StorageError, type SecurityEvent, type Storage } from "../src/index.js";
import { ADMIN, call, read, signIn } from "./console-helpers.js";
import { basic, harness, tokenRequest } from "./helpers.js";

describe("console: regenerate a secret over a store that fails after the replacement", () => {
  it("a read failing after replaceSecrets: either the new secret is in the answer, or the old one still works", async () => {
    const memory = createMemoryStorage();
    let failReadsAfterReplace = false;
    const storage: Storage = {
      ...memory,
      clients: {
        ...memory.clients,
        replaceSecrets: async (...args: Parameters<typeof memory.clients.replaceSecrets>) => {
          const done = await memory.clients.replaceSecrets(...args);
          failReadsAfterReplace = true;
          return done;
        },
        get: async (id: string) => {
          if (failReadsAfterReplace) {
            failReadsAfterReplace = false;
            throw new StorageError("client store: connection reset");
          }
          return memory.clients.get(id);
        },
      },
    };
    const events: SecurityEvent[] = [];
    const h = await harness({ storage, console: { enabled: true }, onEvent: (e: SecurityEvent) => void events.push(e) });
    await h.app.admin.createAccount({ ...ADMIN, roles: ["admin"] });
    const root = await signIn(h.app);
    const res = await read(await call(h.app, "POST", `/api/clients/${h.clientId}/secret`, { cookie: root.cookie, csrf: root.csrf }));
    const oldSecretWorks = (await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) })).status === 200;
    const rotated = events.some((e) => e.type === "client.secret_rotated");
    expect({ status: res.status, body: res.body, oldSecretWorks, rotated }).toEqual({
      status: 200,
      body: { clientId: h.clientId, clientSecret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), secretUpdatedAt: new Date(h.clock.now()).toISOString() },
      oldSecretWorks: false,
      rotated: true,
    });
    // The secret shown is the one that works now.
    const shown = (res.body as { clientSecret: string }).clientSecret;
    expect((await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, shown) })).status).toBe(200);
  });
});
