/**
 * The keyring's re-read before first signing with a newly activated key
 * (packages/core/src/tokens/keys.ts signingKey). The commit says such a key "signs only after a
 * read of the store has it still stored". Requests that arrive while that re-read is under way skip
 * it (`rechecked` is set before the await) and sign with the key at once.
 */
import { decodeProtectedHeader } from "jose";
import { describe, expect, it } from "vitest";
import { createPlantgate, StorageError, type Plantgate, type Storage } from "../src/index.js";
import { BASE, basic, clientToken, harness, tokenRequest } from "./helpers.js";

const kidOf = (token: string) => decodeProtectedHeader(token).kid!;
const quiet = { error() {}, warn() {} };

async function issue(app: Plantgate, clientSecret: string): Promise<{ status: number; kid: string | null }> {
  const res = await tokenRequest(app, { grant_type: "client_credentials" }, { authorization: basic("app-1", clientSecret) });
  if (res.status !== 200) return { status: res.status, kid: null };
  return { status: 200, kid: kidOf(((await res.json()) as { access_token: string }).access_token) };
}

/**
 * The harness storage, its signingKeys.list() held by `gate` when set, or failing with `fail`; or,
 * with `holdRead` set, the list() after `skip` more reads the store at once and is then held (its
 * answer is one from before whatever changes the store meanwhile).
 */
function gated(storage: Storage) {
  const ctl: { gate: Promise<void> | null; fail: Error | null; holdRead: { skip: number; reached: () => void; gate: Promise<void> } | null } = { gate: null, fail: null, holdRead: null };
  const signingKeys = new Proxy(storage.signingKeys, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (prop !== "list" || typeof v !== "function") return typeof v === "function" ? v.bind(target) : v;
      return async (...args: unknown[]) => {
        if (ctl.fail) throw ctl.fail;
        if (ctl.gate) await ctl.gate;
        const read = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        const hold = ctl.holdRead;
        if (hold !== null && hold.skip-- === 0) {
          ctl.holdRead = null;
          hold.reached();
          await hold.gate;
        }
        return read;
      };
    },
  });
  return { storage: { ...storage, signingKeys } as Storage, ctl };
}

/**
 * Two instances over one store: the harness's app, and `other` over it through {@link gated}. k1
 * signs; k2 was rotated in, due in 30 s; `other` has loaded both.
 */
async function twoInstances() {
  const h = await harness();
  const g = gated(h.app.storage);
  const other = createPlantgate({ storage: g.storage, clock: h.clock.now, logger: quiet });
  const k1 = kidOf(await clientToken(h));
  const { kid: k2 } = await h.app.admin.rotateSigningKey();
  h.clock.advance(330_000);
  expect((await issue(other, h.clientSecret)).kid).toBe(k1); // other loads: k1 signs, k2 next in 30 s
  return { h, other, ctl: g.ctl, k1, k2 };
}

async function setUp() {
  const { h, other, ctl, k1, k2 } = await twoInstances();
  const { kid: k3, cancelled } = await h.app.admin.rotateSigningKey({ now: true });
  expect(cancelled).toEqual([k2]);
  h.clock.advance(31_000); // past k2's activation, before other's minute reload
  return { h, other, ctl, k1, k2, k3 };
}

describe("the re-read before a newly activated key first signs", () => {
  it("a request arriving while that re-read is under way waits for it: it signs with the new key, not the cancelled (deleted) one", async () => {
    const { h, other, ctl, k2, k3 } = await setUp();
    let release!: () => void;
    ctl.gate = new Promise<void>((r) => (release = r));
    const first = issue(other, h.clientSecret); // starts the re-read, held
    await new Promise((r) => setTimeout(r, 20));
    const second = issue(other, h.clientSecret); // arrives during it
    await new Promise((r) => setTimeout(r, 20));
    ctl.gate = null;
    release();
    const kids = [(await first).kid, (await second).kid];
    // Every token should be signed with k3: k2 was deleted and no instance will ever verify it.
    expect({ kids, anySignedByDeletedKey: kids.includes(k2) }).toEqual({ kids: [k3, k3], anySignedByDeletedKey: false });
  });

  it("a load under way since before the deletion (a kid look's): the re-read waits for it, then reads again, and signs with the new key", async () => {
    const { h, other, ctl, k2 } = await twoInstances();
    h.clock.advance(5_000);
    const { kid: kx } = await h.app.admin.rotateSigningKey(); // a key other has not loaded
    h.clock.advance(2_000);
    // A token of a kid other does not know: its look reads the keys, sees kx stored and starts a
    // load, whose read is made now (k2 and kx still stored) and then held.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const reached = new Promise<void>((r) => (ctl.holdRead = { skip: 1, reached: r, gate }));
    const header = Buffer.from(JSON.stringify({ alg: "ES256", kid: "made-up" })).toString("base64url");
    const looking = other.fetch(new Request(`${BASE}/rbac/ServerCommand/GetAccountList`, { headers: { authorization: `Bearer ${header}.e30.AAAA` } }));
    await reached;
    const { kid: k3, cancelled } = await h.app.admin.rotateSigningKey({ now: true });
    expect(cancelled.sort()).toEqual([k2, kx].sort());
    h.clock.advance(24_000); // past k2's activation, before other's minute reload
    const issuing = issue(other, h.clientSecret); // its re-read joins the held load
    await new Promise((r) => setTimeout(r, 20));
    release();
    expect({ issued: await issuing, look: (await looking).status }).toEqual({ issued: { status: 200, kid: k3 }, look: 401 });
  });

  it("storage down (StorageError) at the activation: the token request is still answered 200", async () => {
    const { h, other, ctl } = await setUp();
    ctl.fail = new StorageError("down");
    expect((await issue(other, h.clientSecret)).status).toBe(200);
  });
});
