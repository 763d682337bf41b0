/**
 * GetAccountList reads its page while the token's revocation is looked up (withBearerRead): both
 * storage calls are in flight together, and the answers keep requireBearer's precedence (revoked
 * 401, then missing scope 403, then the read's own outcome).
 */
import { describe, expect, it } from "vitest";
import { createMemoryStorage, type Storage } from "../src/index.js";
import { clientToken, harness } from "./helpers.js";
import { getAccounts, read } from "./api-helpers.js";

const INVALID = { error: 1202, message: "The access token is invalid or expired." };

/** A memory store whose revocation lookups wait for `release()`, recording what storage saw meanwhile. */
function gatedStorage() {
  const storage = createMemoryStorage();
  const seen: string[] = [];
  let release!: () => void;
  let gate = new Promise<void>((r) => (release = r));
  const has = storage.revokedTokens.has.bind(storage.revokedTokens);
  const list = storage.accounts.list.bind(storage.accounts);
  let gated = false;
  const wrapped: Storage = {
    ...storage,
    revokedTokens: {
      ...storage.revokedTokens,
      has: async (jti) => {
        seen.push("revoked.has");
        if (gated) await gate;
        return has(jti);
      },
    },
    accounts: {
      ...storage.accounts,
      list: async (offset, limit) => {
        seen.push("accounts.list");
        return list(offset, limit);
      },
    },
  };
  return {
    storage: wrapped,
    seen,
    gate() {
      gated = true;
      seen.length = 0;
      gate = new Promise<void>((r) => (release = r));
    },
    release: () => release(),
  };
}

describe("GetAccountList: bearer revocation lookup and page read together", () => {
  it("starts the page read before the revocation lookup answers, and answers the page once it does", async () => {
    const s = gatedStorage();
    const h = await harness({ storage: s.storage });
    const token = await clientToken(h, "Platform_UserAPIs");
    s.gate();
    const pending = getAccounts(h.app, token, "page=1&pageSize=5");
    await new Promise((r) => setTimeout(r, 20));
    expect(s.seen).toEqual(["revoked.has", "accounts.list"]);
    s.release();
    const r = await read(await pending);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ page: 1, pageSize: 5, total: 1, totalPages: 1 });
  });

  it("a revoked token gets 401 invalid_token, and the page that was read is not sent", async () => {
    const s = gatedStorage();
    const h = await harness({ storage: s.storage });
    const token = await clientToken(h, "Platform_UserAPIs");
    const { jti, exp } = JSON.parse(atob(token.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/"))) as { jti: string; exp: number };
    await s.storage.revokedTokens.add(jti, exp * 1000);
    s.gate();
    const pending = getAccounts(h.app, token, "page=1&pageSize=5");
    await new Promise((r) => setTimeout(r, 20));
    s.release();
    const r = await read(await pending);
    expect(r.status).toBe(401);
    expect(r.body).toEqual(INVALID);
    expect(r.text).not.toContain("alice");
  });

  it("a revoked token gets 401 even when its query is invalid (the read's 400 comes after the bearer check)", async () => {
    const s = gatedStorage();
    const h = await harness({ storage: s.storage });
    const token = await clientToken(h, "Platform_UserAPIs");
    const { jti, exp } = JSON.parse(atob(token.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/"))) as { jti: string; exp: number };
    await s.storage.revokedTokens.add(jti, exp * 1000);
    const r = await read(await getAccounts(h.app, token, "page=0"));
    expect(r.status).toBe(401);
    expect(r.body).toEqual(INVALID);
  });

  it("a token without the route's scope starts no read and gets 403", async () => {
    const s = gatedStorage();
    const h = await harness({ storage: s.storage, requiredScopes: { listAccounts: ["Platform_AllAppsServerCommands"] } });
    const token = await clientToken(h, "Platform_UserAPIs");
    s.gate();
    const pending = getAccounts(h.app, token, "page=1");
    await new Promise((r) => setTimeout(r, 20));
    s.release();
    const r = await read(await pending);
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ error: 1203, message: "This operation needs one of the scopes: Platform_AllAppsServerCommands." });
    expect(s.seen).toEqual(["revoked.has"]);
  });
});
