/**
 * `keys reencrypt` (console "Re-encrypt keys") while a rotation elsewhere (another instance's
 * automatic rotation, a `keys rotate` in another process) is storing its key: the rotation seals
 * its key under the KEK of the key signing when it read the rows, the old one, and until
 * 2026-12-02 that key stayed there after reencrypt had said every key moved (a deployment that
 * then dropped the old KEK failed every load of the keys). Now the rotation reads the rows again
 * after its create and seals its key again under the KEK the signing key is under by then, and
 * reencrypt passes over the rows until a pass finds none to move.
 */
import { describe, expect, it } from "vitest";
import { AdminError, createMemoryStorage, createPlantgate, generateKeyRecord, type SecurityEvent, type Storage } from "../src/index.js";
import { createKeyEncryption, parseKeyEncryptionKeys } from "../src/crypto/key-encryption.js";
import { manualClock } from "./helpers.js";

const kek = () => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
const quiet = { error() {}, warn() {} };

/**
 * Two KEKs (the old one, and the new one with its id), a clock and a memory store, and that store
 * with signingKeys.create held: `createHeld` resolves when a create is reached, `release` lets it on.
 */
async function setUp() {
  const oldKek = kek();
  const newKek = kek();
  const [newId] = await createKeyEncryption(parseKeyEncryptionKeys(newKek)).ids();
  const clock = manualClock();
  const memory = createMemoryStorage();
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let held!: () => void;
  const createHeld = new Promise<void>((r) => (held = r));
  const createGated: Storage = { ...memory, signingKeys: { ...memory.signingKeys, create: async (rec) => { held(); await gate; return memory.signingKeys.create(rec); } } };
  return { oldKek, newKek, newId: newId!, clock, memory, createGated, createHeld, release };
}

describe("reencrypt racing an automatic rotation", () => {
  it("after reencrypt resolves and the rotation is stored, no key is left under the old KEK", async () => {
    const { oldKek, newKek, newId, clock, memory, createGated, createHeld: heldCreate, release } = await setUp();
    const first = createPlantgate({ storage: memory, clock: clock.now, logger: quiet, keyEncryptionKeys: [oldKek] });
    await first.jwks();
    clock.advance(86_400_000 - 300_000); // the successor is due
    const b = createPlantgate({ storage: createGated, clock: clock.now, logger: quiet, keyEncryptionKeys: [newKek, oldKek], signingKeyMaxAgeSeconds: 86_400 });
    const a = createPlantgate({ storage: memory, clock: clock.now, logger: quiet, keyEncryptionKeys: [newKek, oldKek] });
    const rotating = b.jwks();
    await heldCreate; // b read the rows and sealed its successor; its create is in flight
    const result = await a.admin.reencryptSigningKeys();
    release();
    await rotating;
    const rows = await memory.signingKeys.list();
    expect(result.reencrypted).toHaveLength(1);
    expect({ rows: rows.length, underNew: rows.filter((r) => r.privateJwk.startsWith(`enc:A256GCM:${newId}:`)).length }).toEqual({ rows: 2, underNew: 2 });
  });

  it("a rotation stored while reencrypt's pass is under way, whose own check came before the move: reencrypt's next pass moves it", async () => {
    const { oldKek, newKek, newId, clock, memory } = await setUp();
    const first = createPlantgate({ storage: memory, clock: clock.now, logger: quiet, keyEncryptionKeys: [oldKek] });
    await first.jwks();
    const [k1] = await memory.signingKeys.list();
    clock.advance(86_400_000 - 300_000); // the successor is due
    // reencrypt's first move waits until the rotation is stored and checked.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let held!: () => void;
    const heldMove = new Promise<void>((r) => (held = r));
    let moves = 0;
    const gated: Storage = {
      ...memory,
      signingKeys: {
        ...memory.signingKeys,
        replacePrivateJwk: async (kid, expected, replacement) => {
          if (moves++ === 0) {
            held();
            await gate;
          }
          return memory.signingKeys.replacePrivateJwk(kid, expected, replacement);
        },
      },
    };
    const a = createPlantgate({ storage: gated, clock: clock.now, logger: quiet, keyEncryptionKeys: [newKek, oldKek] });
    const b = createPlantgate({ storage: memory, clock: clock.now, logger: quiet, keyEncryptionKeys: [newKek, oldKek], signingKeyMaxAgeSeconds: 86_400 });
    const reencrypting = a.admin.reencryptSigningKeys();
    await heldMove; // reencrypt read the rows (k1 alone) and is moving k1
    await b.jwks(); // b stores its successor under the old KEK, and sees k1 still under it
    const k2 = (await memory.signingKeys.list()).find((r) => r.kid !== k1!.kid)!;
    expect(k2.privateJwk.startsWith(`enc:A256GCM:${newId}:`)).toBe(false);
    release();
    expect(await reencrypting).toEqual({ reencrypted: [k1!.kid, k2.kid], unchanged: [], left: [], complete: true });
    const rows = await memory.signingKeys.list();
    expect(rows.map((r) => [r.kid, r.privateJwk.startsWith(`enc:A256GCM:${newId}:`)])).toEqual([
      [k1!.kid, true],
      [k2.kid, true],
    ]);
    // A server with the new KEK alone loads both.
    const onlyNew = createPlantgate({ storage: memory, clock: clock.now, logger: quiet, keyEncryptionKeys: [newKek] });
    expect(((await onlyNew.jwks()).keys as { kid: string }[]).map((k) => k.kid).sort()).toEqual([k1!.kid, k2.kid].sort());
  });

  it("keys rotate in another process, its create landing after reencrypt answered: it seals its key again under the new KEK", async () => {
    const { oldKek, newKek, newId, clock, memory, createGated, createHeld: heldCreate, release } = await setUp();
    await createPlantgate({ storage: memory, clock: clock.now, logger: quiet, keyEncryptionKeys: [oldKek] }).jwks();
    clock.advance(1000);
    const cli = createPlantgate({ storage: createGated, clock: clock.now, logger: quiet, keyEncryptionKeys: [newKek, oldKek] });
    const a = createPlantgate({ storage: memory, clock: clock.now, logger: quiet, keyEncryptionKeys: [newKek, oldKek] });
    const rotating = cli.admin.rotateSigningKey();
    await heldCreate; // the rotation read the rows and sealed its key under the old KEK
    const result = await a.admin.reencryptSigningKeys();
    release();
    const rotated = await rotating;
    expect(result.reencrypted).toHaveLength(1);
    const rows = await memory.signingKeys.list();
    expect(rows.map((r) => [r.kid === rotated.kid ? "rotated" : "first", r.privateJwk.startsWith(`enc:A256GCM:${newId}:`)])).toEqual([
      ["first", true],
      ["rotated", true],
    ]);
    const onlyNew = createPlantgate({ storage: memory, clock: clock.now, logger: quiet, keyEncryptionKeys: [newKek] });
    expect(((await onlyNew.jwks()).keys as { kid: string }[]).map((k) => k.kid)).toContain(rotated.kid);
  });

  it("rotations storing keys under the old KEK on every pass: reencrypt stops after 5 passes, refuses (re-encrypt again), and its event names the keys it moved", async () => {
    const { oldKek, newKek, clock, memory } = await setUp();
    const old = createPlantgate({ storage: memory, clock: clock.now, logger: quiet, keyEncryptionKeys: [oldKek] });
    await old.jwks();
    const [oldId] = await createKeyEncryption(parseKeyEncryptionKeys(oldKek)).ids();
    // After each move another process stores a key under the old KEK (sealed as a rotation that
    // read the rows before the move does).
    const sealOld = createKeyEncryption(parseKeyEncryptionKeys(oldKek));
    const busy: Storage = {
      ...memory,
      signingKeys: {
        ...memory.signingKeys,
        replacePrivateJwk: async (kid, expected, replacement) => {
          const done = await memory.signingKeys.replacePrivateJwk(kid, expected, replacement);
          clock.advance(1);
          const r = await generateKeyRecord("ES256", clock.now(), clock.now() + 360_000);
          await memory.signingKeys.create({ ...r, privateJwk: await sealOld.seal(r.kid, r.privateJwk, oldId) });
          return done;
        },
      },
    };
    const events: SecurityEvent[] = [];
    const a = createPlantgate({ storage: busy, clock: clock.now, logger: quiet, keyEncryptionKeys: [newKek, oldKek], onEvent: (e) => void events.push(e) });
    const failure = await a.admin.reencryptSigningKeys().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(AdminError);
    expect((failure as Error).message).toBe(
      "signing keys were still being stored under an older key encryption key after 5 passes (rotations under way elsewhere); re-encrypt again (pnpm plantgate keys reencrypt, or Re-encrypt keys in the console)",
    );
    await a.flushEvents();
    const moved = events.filter((e) => e.type === "signing_key.reencrypted").map((e) => (e as { reencrypted: string[] }).reencrypted);
    expect(moved.map((m) => m.length)).toEqual([5]);
  });
});
