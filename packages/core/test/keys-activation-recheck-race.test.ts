/**
 * The keyring's re-read before first signing with a newly activated key
 * (packages/core/src/tokens/keys.ts signingKey). The commit says such a key "signs only after a
 * read of the store has it still stored". Requests that arrive while that re-read is under way skip
 * it (`rechecked` is set before the await) and sign with the key at once.
 */
import { decodeProtectedHeader } from "jose";
import { describe, expect, it } from "vitest";
import { createPlantgate, StorageError, type Plantgate, type Storage } from "../src/index.js";
import { basic, clientToken, harness, tokenRequest } from "./helpers.js";

const kidOf = (token: string) => decodeProtectedHeader(token).kid!;
const quiet = { error() {}, warn() {} };

async function issue(app: Plantgate, clientSecret: string): Promise<{ status: number; kid: string | null }> {
  const res = await tokenRequest(app, { grant_type: "client_credentials" }, { authorization: basic("app-1", clientSecret) });
  if (res.status !== 200) return { status: res.status, kid: null };
  return { status: 200, kid: kidOf(((await res.json()) as { access_token: string }).access_token) };
}

/** The harness storage, its signingKeys.list() held by `gate` when set, or failing with `fail`. */
function gated(storage: Storage) {
  const ctl: { gate: Promise<void> | null; fail: Error | null } = { gate: null, fail: null };
  const signingKeys = new Proxy(storage.signingKeys, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (prop !== "list" || typeof v !== "function") return typeof v === "function" ? v.bind(target) : v;
      return async (...args: unknown[]) => {
        if (ctl.fail) throw ctl.fail;
        if (ctl.gate) await ctl.gate;
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { storage: { ...storage, signingKeys } as Storage, ctl };
}

async function setUp() {
  const h = await harness();
  const g = gated(h.app.storage);
  const other = createPlantgate({ storage: g.storage, clock: h.clock.now, logger: quiet });
  const k1 = kidOf(await clientToken(h));
  const { kid: k2 } = await h.app.admin.rotateSigningKey();
  h.clock.advance(330_000);
  expect((await issue(other, h.clientSecret)).kid).toBe(k1); // other loads: k1 signs, k2 next in 30 s
  const { kid: k3, cancelled } = await h.app.admin.rotateSigningKey({ now: true });
  expect(cancelled).toEqual([k2]);
  h.clock.advance(31_000); // past k2's activation, before other's minute reload
  return { h, other, ctl: g.ctl, k1, k2, k3 };
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

  it("storage down (StorageError) at the activation: the token request is still answered 200", async () => {
    const { h, other, ctl } = await setUp();
    ctl.fail = new StorageError("down");
    expect((await issue(other, h.clientSecret)).status).toBe(200);
  });
});
