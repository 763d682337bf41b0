/**
 * The longest access-token lifetime (how long a replaced signing key stays published and trusted)
 * comes from `clients.maxAccessTokenTtl()` when the store has it: key re-reads with several keys,
 * prune and the keys admin calls never read every client (before, each did: with 10,000 clients a
 * full read per instance per minute for hours after a rotation). A store written before the method
 * gets the same lifetimes from `list()`. Token issuance never asks. The demo bootstrap's "any
 * client yet?" reads one page, not every client.
 */
import { decodeProtectedHeader } from "jose";
import { describe, expect, it } from "vitest";
import { applyBootstrap, createMemoryStorage, createPlantgate, type ClientStore, type Plantgate, type Storage } from "../src/index.js";
import { BASE, clientToken, harness, type Harness } from "./helpers.js";

const kidOf = (token: string) => decodeProtectedHeader(token).kid!;
const DAY_S = 86_400;

async function jwksKids(app: Plantgate): Promise<string[]> {
  const res = await app.fetch(new Request(`${BASE}/.well-known/jwks.json`));
  expect(res.status).toBe(200);
  return ((await res.json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid).sort();
}

/**
 * A memory store whose clients' `list` and `maxAccessTokenTtl` calls are counted on the object
 * handed to createPlantgate (app.storage may hand out wrapped stores); without `withMax`, a store
 * written before the method (it is removed).
 */
function countingStorage(withMax = true) {
  const storage: Storage = createMemoryStorage();
  const clients = storage.clients;
  const calls = { list: 0, maxAccessTokenTtl: 0, listPage: 0 };
  const list = clients.list.bind(clients);
  clients.list = () => {
    calls.list++;
    return list();
  };
  const listPage = clients.listPage!.bind(clients);
  clients.listPage = (after, limit) => {
    calls.listPage++;
    return listPage(after, limit);
  };
  if (withMax) {
    const max = clients.maxAccessTokenTtl!.bind(clients);
    clients.maxAccessTokenTtl = () => {
      calls.maxAccessTokenTtl++;
      return max();
    };
  } else delete (clients as Partial<ClientStore>).maxAccessTokenTtl;
  return { storage, calls };
}

/**
 * A client with one-day tokens, then `keys rotate --now`: the replaced key k1 must stay published
 * and trusted for a day (plus the reload minute), not the default 7200 s, and prune must keep it
 * until then. Checked by the JWKS (a key re-read with two keys), `keys list`, prune and a second
 * rotation.
 */
async function retiredKeyLivesForTheLongestLifetime(h: Harness): Promise<void> {
  await h.app.admin.createClient({ clientId: "long", accessTokenTtl: DAY_S });
  const k1 = kidOf(await clientToken(h));
  h.clock.advance(1000);
  const { kid: k2, deleted } = await h.app.admin.rotateSigningKey({ now: true });
  expect(deleted).toEqual([]);
  expect(kidOf(await clientToken(h))).toBe(k2);

  // Past the default lifetime + the reload minute: still published, still retired, not pruned.
  h.clock.advance((7200 + 60) * 1000 + 1);
  expect(await jwksKids(h.app)).toEqual([k1, k2].sort());
  expect((await h.app.admin.listSigningKeys()).map((k) => [k.kid, k.status])).toEqual([[k2, "active"], [k1, "retired"]]);
  expect((await h.app.admin.prune()).signingKeys).toBe(0);
  h.clock.advance((DAY_S - 7200) * 1000 - 2);
  expect(await jwksKids(h.app), "a millisecond before the day and the minute are over").toEqual([k1, k2].sort());

  // The day and the minute over: unpublished, prunable, and the next prune deletes it.
  h.clock.advance(1);
  expect(await jwksKids(h.app)).toEqual([k2]);
  expect((await h.app.admin.listSigningKeys()).map((k) => [k.kid, k.status])).toEqual([[k2, "active"], [k1, "prunable"]]);
  expect((await h.app.admin.prune()).signingKeys).toBe(1);
  expect((await h.app.storage.signingKeys.list()).map((k) => k.kid)).toEqual([k2]);
  const third = await h.app.admin.rotateSigningKey({ now: true });
  expect(third.deleted).toEqual([]);
}

describe("the longest access-token lifetime, for signing-key retirement", () => {
  it("with clients.maxAccessTokenTtl: key re-reads with two keys, prune, keys list and rotate never read every client", async () => {
    const { storage, calls } = countingStorage();
    const h = await harness({ storage });
    calls.list = 0;
    await retiredKeyLivesForTheLongestLifetime(h);
    expect(calls.list).toBe(0);
    expect(calls.maxAccessTokenTtl).toBeGreaterThanOrEqual(6);
  });

  it("token issuance never asks for it (only a re-read of the keys, at most once a minute, does)", async () => {
    const { storage, calls } = countingStorage();
    const h = await harness({ storage });
    await h.app.admin.rotateSigningKey();
    // The rotation dropped the loaded keys: this issuance re-reads them (two keys: one ask).
    await clientToken(h);
    const asked = calls.maxAccessTokenTtl;
    for (let i = 0; i < 20; i++) {
      h.clock.advance(1000);
      await clientToken(h);
    }
    expect(calls.maxAccessTokenTtl).toBe(asked);
    expect(calls.list).toBe(0);
  });

  it("a store without it (written before it) gets the same lifetimes from list()", async () => {
    const { storage, calls } = countingStorage(false);
    expect(storage.clients.maxAccessTokenTtl).toBeUndefined();
    const h = await harness({ storage });
    calls.list = 0;
    await retiredKeyLivesForTheLongestLifetime(h);
    expect(calls.list).toBeGreaterThanOrEqual(6);
  });

  it("a store without it and 150,000 clients: the fallback still answers (spreading them into Math.max overflowed the stack)", { timeout: 60_000 }, async () => {
    const { storage } = countingStorage(false);
    const h = await harness({ storage });
    const record = (await storage.clients.get(h.clientId))!;
    for (let i = 0; i < 150_000; i++) {
      const clientId = `bulk-${String(i).padStart(6, "0")}`;
      expect(await storage.clients.create({ ...record, clientId, accessTokenTtl: i === 75_000 ? 2 * DAY_S : i % 2 === 0 ? null : 60 })).toBe(true);
    }
    const k1 = kidOf(await clientToken(h));
    h.clock.advance(1000);
    const { kid: k2 } = await h.app.admin.rotateSigningKey({ now: true });
    // Past one day: the two-day client keeps k1 published, and prune keeps it.
    h.clock.advance((DAY_S + 60) * 1000 + 1);
    expect(await jwksKids(h.app)).toEqual([k1, k2].sort());
    expect((await h.app.admin.prune()).signingKeys).toBe(0);
    h.clock.advance(DAY_S * 1000);
    expect((await h.app.admin.prune()).signingKeys).toBe(1);
  });
});

describe("the demo bootstrap's \"any client yet?\"", () => {
  it("reads one page of the clients (listPage), never every client; an empty store still gets the demo", async () => {
    const { storage, calls } = countingStorage();
    const app = createPlantgate({ storage, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
    const demo = await applyBootstrap(app.admin, { client: null, account: null }, { demo: true });
    expect(demo?.clientId).toBe("demo-client");
    expect(await applyBootstrap(app.admin, { client: null, account: null }, { demo: true }), "a store with a client gets no demo").toBeNull();
    expect((await storage.clients.listPage!(null, 10)).map((c) => c.clientId)).toEqual(["demo-client"]);
    expect(calls.list).toBe(0);
    expect(calls.listPage).toBeGreaterThanOrEqual(2);
  });
});
