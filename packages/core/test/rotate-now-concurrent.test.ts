/**
 * `rotateSigningKey({ now: true })` deletes every stored key whose activatesAt is
 * later than its own (packages/core/src/admin/index.ts, the `cancelled` loop), read after its
 * create. A second `--now` rotation in another process a few ms later (two operators reacting to the
 * same leak, the console on two instances) is stored after the first key, is active at once and
 * has signed tokens; the README says only "the next keys stored before it" are deleted and that a
 * key "made after the leak" is left. The first call deletes it, and the tokens it signed are then
 * refused everywhere.
 */
import { decodeProtectedHeader } from "jose";
import { expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, type Storage } from "../src/index.js";
import { BASE, basic, harness, tokenRequest } from "./helpers.js";

const kidOf = (token: string) => decodeProtectedHeader(token).kid!;
const quiet = { error() {}, warn() {} };

it("a concurrent rotate --now's key, stored after this one's and already signing, is not cancelled", async () => {
  const memory = createMemoryStorage();
  // A's rotation: its list() after the create (the cancel read) is held until released.
  let holdAfterCreate = false;
  let created = false;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let reached!: () => void;
  const atCancelRead = new Promise<void>((r) => (reached = r));
  const gatedStorage: Storage = {
    ...memory,
    signingKeys: {
      ...memory.signingKeys,
      async create(rec) {
        const stored = await memory.signingKeys.create(rec);
        if (holdAfterCreate) created = true;
        return stored;
      },
      async list() {
        if (created) {
          created = false;
          reached();
          await gate;
        }
        return memory.signingKeys.list();
      },
    },
  };
  const h = await harness({ storage: gatedStorage });
  const b = createPlantgate({ storage: memory, clock: h.clock.now, logger: quiet });
  await tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic("app-1", h.clientSecret) }); // first key
  h.clock.advance(1000);

  holdAfterCreate = true;
  const rotatingA = h.app.admin.rotateSigningKey({ now: true }); // operator A: stores kA, then waits at its cancel read
  await atCancelRead;
  holdAfterCreate = false;
  h.clock.advance(5);
  const { kid: kB, cancelled: cancelledByB } = await b.admin.rotateSigningKey({ now: true }); // operator B, 5 ms later
  expect(cancelledByB).toEqual([]);
  // B's instance signs a user's token with kB at once.
  const res = await tokenRequest(b, { grant_type: "password", username: h.username, password: h.password, scope: "Platform_UserAPIs" }, { authorization: basic("app-1", h.clientSecret) });
  expect(res.status).toBe(200);
  const token = ((await res.json()) as { access_token: string }).access_token;
  expect(kidOf(token)).toBe(kB);

  release();
  const { kid: kA, cancelled } = await rotatingA;
  const stored = (await memory.signingKeys.list()).map((k) => k.kid);
  // kB was made after the leak, stored after kA, and has signed: it should be left.
  expect.soft({ cancelled, kBStillStored: stored.includes(kB) }).toEqual({ cancelled: [], kBStillStored: true });
  expect(kA).not.toBe(kB);
  // The token kB signed: a fresh instance (any other server) refuses it.
  const c = createPlantgate({ storage: memory, clock: h.clock.now, logger: quiet });
  const api = await c.fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${token}` } }));
  expect(api.status).toBe(200);
});
