/**
 * `keys rotate --now` (a suspected leak) while a `next` key made before the leak is pending (a
 * rotation in the last 360 s, or automatic rotation's successor published 420 s ahead). The CLI
 * says "the new key signs from now on"; the README's leak procedure is rotate --now, wait a minute,
 * revoke the old kid. Until 2026-12-02 the pending pre-leak key took over minutes later (its
 * activation time is later than the --now key's), and the --now key was retired. Now rotate --now
 * deletes such keys (`cancelled`, in the answer and the event); an instance that loaded one as
 * `next` re-reads the keys before it would first sign with it, and automatic rotation then
 * schedules the --now key's successor as for any key.
 */
import { decodeProtectedHeader } from "jose";
import { describe, expect, it } from "vitest";
import { createPlantgate, StorageError, type Plantgate, type SecurityEvent } from "../src/index.js";
import { BASE, basic, clientToken, harness, keyDeletesFailing, tokenRequest } from "./helpers.js";

const kidOf = (token: string) => decodeProtectedHeader(token).kid!;
const quiet = { error() {}, warn() {} };

async function jwksKids(app: Plantgate): Promise<string[]> {
  const res = await app.fetch(new Request(`${BASE}/.well-known/jwks.json`));
  expect(res.status).toBe(200);
  return ((await res.json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid).sort();
}

/** The kid of a client-credentials token `app` issues to the harness client. */
async function signerOf(app: Plantgate, clientSecret: string): Promise<string> {
  const res = await tokenRequest(app, { grant_type: "client_credentials" }, { authorization: basic("app-1", clientSecret) });
  expect(res.status).toBe(200);
  return kidOf(((await res.json()) as { access_token: string }).access_token);
}

describe("rotate --now beside a pending next key", () => {
  it("the key made by rotate --now keeps signing after the pre-leak next key's activation time (manual rotation pending)", async () => {
    const h = await harness();
    const k1 = kidOf(await clientToken(h));
    h.clock.advance(1000);
    const { kid: k2, status: s2 } = await h.app.admin.rotateSigningKey(); // routine rotation: next
    expect(s2).toBe("next");
    h.clock.advance(60_000);
    // Leak suspected: the README's procedure.
    const { kid: k3 } = await h.app.admin.rotateSigningKey({ now: true });
    expect(kidOf(await clientToken(h))).toBe(k3);
    h.clock.advance(61_000);
    await h.app.admin.revokeSigningKey(k1);
    h.clock.advance(300_000); // past k2's activation (made before the leak)
    const signer = kidOf(await clientToken(h));
    expect({ signer, isPreLeakKey: signer === k2 }).toEqual({ signer: k3, isPreLeakKey: false });
  });

  it("the same with automatic rotation (signingKeyMaxAgeSeconds): its successor, published before the leak, takes over from the --now key", async () => {
    const h = await harness({ signingKeyMaxAgeSeconds: 86_400 });
    kidOf(await clientToken(h));
    h.clock.advance(86_400_000 - 400_000); // the successor is stored 420 s ahead
    await clientToken(h);
    const pending = (await h.app.admin.listSigningKeys()).filter((k) => k.status === "next").map((k) => k.kid);
    expect(pending).toHaveLength(1);
    const { kid: k3 } = await h.app.admin.rotateSigningKey({ now: true });
    h.clock.advance(420_000);
    const signer = kidOf(await clientToken(h));
    expect({ signer, isPreLeakKey: signer === pending[0] }).toEqual({ signer: k3, isPreLeakKey: false });
  });

  it("the answer, the signing_key.rotated event and the listing name the next key deleted (cancelled); a rotation without now cancels nothing", async () => {
    const events: SecurityEvent[] = [];
    const h = await harness({ onEvent: (e) => void events.push(e) });
    const k1 = kidOf(await clientToken(h));
    h.clock.advance(1000);
    const routine = await h.app.admin.rotateSigningKey();
    const routineAt = h.clock.now() + 360_000;
    expect(routine).toEqual({ kid: routine.kid, activatesAt: routineAt, status: "next", deleted: [], cancelled: [] });
    h.clock.advance(1000);
    const urgent = await h.app.admin.rotateSigningKey({ now: true });
    const urgentAt = h.clock.now();
    expect(urgent).toEqual({ kid: urgent.kid, activatesAt: urgentAt, status: "active", deleted: [], cancelled: [routine.kid] });
    await h.app.flushEvents();
    expect(events.filter((e) => e.type === "signing_key.rotated").map(({ id: _id, time: _time, ...e }) => e)).toEqual([
      { type: "signing_key.rotated", kid: routine.kid, alg: "ES256", activates_at: routineAt, immediate: false, automatic: false, deleted: [], cancelled: [], actor: null },
      { type: "signing_key.rotated", kid: urgent.kid, alg: "ES256", activates_at: urgentAt, immediate: true, automatic: false, deleted: [], cancelled: [routine.kid], actor: null },
    ]);
    expect((await h.app.admin.listSigningKeys()).map((k) => [k.kid, k.status])).toEqual([
      [urgent.kid, "active"],
      [k1, "retired"],
    ]);
    expect(await jwksKids(h.app)).toEqual([k1, urgent.kid].sort());
    // Nothing pending: a second --now cancels nothing.
    h.clock.advance(1000);
    expect((await h.app.admin.rotateSigningKey({ now: true })).cancelled).toEqual([]);
  });

  it("another instance that loaded the pre-leak next key (due within the minute) signs with the --now key at that key's activation, before its minute's reload, and no longer publishes it", async () => {
    const h = await harness();
    const other = createPlantgate({ storage: h.app.storage, clock: h.clock.now, logger: quiet });
    const k1 = kidOf(await clientToken(h));
    const { kid: k2 } = await h.app.admin.rotateSigningKey();
    h.clock.advance(330_000);
    // The other instance loads the keys now: k1 signs, k2 is next, due in 30 s.
    expect(await signerOf(other, h.clientSecret)).toBe(k1);
    expect(await jwksKids(other)).toEqual([k1, k2].sort());
    const { kid: k3, cancelled } = await h.app.admin.rotateSigningKey({ now: true });
    expect(cancelled).toEqual([k2]);
    // Past k2's activation, 31 s after the other instance's load: it re-reads before signing with k2.
    h.clock.advance(31_000);
    expect(await signerOf(other, h.clientSecret)).toBe(k3);
    expect(await jwksKids(other)).toEqual([k1, k3].sort());
    expect(await signerOf(h.app, h.clientSecret)).toBe(k3);
  });

  it("automatic rotation then schedules the --now key's successor at its age, as for any key", async () => {
    const h = await harness({ signingKeyMaxAgeSeconds: 86_400 });
    const k1 = kidOf(await clientToken(h));
    h.clock.advance(86_400_000 - 400_000);
    await clientToken(h); // the successor of k1 is stored, 420 s ahead
    const { kid: k3, cancelled } = await h.app.admin.rotateSigningKey({ now: true });
    const t3 = h.clock.now();
    expect(cancelled).toHaveLength(1);
    // Nothing is scheduled until 420 s before k3's age (k1 is prunable by then, deleted with the next rotation).
    h.clock.advance(86_400_000 - 421_000);
    expect(kidOf(await clientToken(h))).toBe(k3);
    expect((await h.app.admin.listSigningKeys()).map((k) => [k.kid, k.status])).toEqual([
      [k3, "active"],
      [k1, "prunable"],
    ]);
    h.clock.advance(61_000);
    expect(kidOf(await clientToken(h))).toBe(k3);
    const listed = await h.app.admin.listSigningKeys();
    expect(listed.map((k) => [k.status, k.activatesAt])).toEqual([
      ["next", t3 + 86_400_000],
      ["active", t3],
    ]);
    expect(listed[1]!.kid).toBe(k3);
    h.clock.advance(360_000);
    expect(kidOf(await clientToken(h))).toBe(listed[0]!.kid);
  });

  it("a failure deleting the next key: the --now key is stored and signs, its event says so, a warn line says to rotate with now again, and the call fails; the retry deletes it", async () => {
    const { memory, storage, deletes } = keyDeletesFailing();
    const events: SecurityEvent[] = [];
    const warnings: unknown[][] = [];
    const h = await harness({ storage, onEvent: (e) => void events.push(e), logger: { error() {}, warn: (...args: unknown[]) => void warnings.push(args) } });
    await clientToken(h);
    const { kid: k2 } = await h.app.admin.rotateSigningKey();
    h.clock.advance(1000);
    deletes.fail = true;
    await expect(h.app.admin.rotateSigningKey({ now: true })).rejects.toThrow(new StorageError("down"));
    const k3 = (await memory.signingKeys.list()).find((k) => k.activatesAt === h.clock.now())!.kid;
    expect(kidOf(await clientToken(h))).toBe(k3);
    await h.app.flushEvents();
    expect(events.filter((e) => e.type === "signing_key.rotated").map(({ id: _id, time: _time, ...e }) => e).at(-1)).toEqual({
      type: "signing_key.rotated", kid: k3, alg: "ES256", activates_at: h.clock.now(), immediate: true, automatic: false, deleted: [], cancelled: [], actor: null,
    });
    expect(warnings.filter((w) => String(w[0]).startsWith("signing key \""))).toEqual([
      [`signing key "${k3}" was stored and signs from now on, but deleting the next keys stored before it, which would take over from it, failed: rotate with now again`, { name: "StorageError", message: "down" }],
    ]);
    deletes.fail = false;
    h.clock.advance(1000);
    const retry = await h.app.admin.rotateSigningKey({ now: true });
    expect(retry.cancelled).toEqual([k2]);
  });
});
