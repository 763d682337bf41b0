/**
 * Several secrets per client (rotation without downtime): add-secret keeps the earlier ones,
 * expiry, revoke one, rotate (regenerate) kills all, last use recorded, views never show a hash.
 */
import { describe, expect, it } from "vitest";
import { AdminConflictError, AdminError, AdminNotFoundError, createMemoryStorage, MAX_TTL_SECONDS, StorageError } from "../src/index.js";
import { basic, harness, tokenRequest } from "./helpers.js";
import { expectTokenError, expectTokenSuccess } from "./token-helpers.js";

const failed = { error: "invalid_client", error_description: "Client authentication failed." };
const cc = (id: string, secret: string) => tokenRequest(h0.app, { grant_type: "client_credentials" }, { authorization: basic(id, secret) });
let h0: Awaited<ReturnType<typeof harness>>;

describe("overlapping client secrets", () => {
  it("lifetimes are bounded (1 to 10 years of seconds, the console's bound): a larger one is an AdminError and stores nothing, so no listing meets a date it cannot show", async () => {
    h0 = await harness();
    // Each message names the field the caller passed (until 2026-11-30 createClient's said expiresIn).
    const rule = "must be from 1 to 315360000 seconds";
    for (const expiresIn of [Number.MAX_SAFE_INTEGER, MAX_TTL_SECONDS + 1, 0]) {
      await expect(h0.app.admin.addClientSecret(h0.clientId, { expiresIn })).rejects.toThrow(new AdminError(`expiresIn ${rule}`, { field: "expiresIn" }));
      await expect(h0.app.admin.createClient({ clientId: `c-${expiresIn}`, secretExpiresIn: expiresIn })).rejects.toThrow(new AdminError(`secretExpiresIn ${rule}`, { field: "secretExpiresIn" }));
      await expect(h0.app.admin.createClient({ clientId: `t-${expiresIn}`, refreshTokenTtl: expiresIn })).rejects.toThrow(new AdminError("refreshTokenTtl must be from 1 to 315360000 seconds", { field: "refreshTokenTtl" }));
    }
    expect((await h0.app.admin.getClient(h0.clientId)).secrets).toHaveLength(1);
    expect((await h0.app.admin.listClients()).map((c) => c.clientId)).toEqual([h0.clientId]);
    const longest = await h0.app.admin.addClientSecret(h0.clientId, { expiresIn: MAX_TTL_SECONDS });
    expect(longest.secret.expiresAt).toBe(h0.clock.now() + MAX_TTL_SECONDS * 1000);
  });

  it("addClientSecret gives a second working secret while the first still works; rotate then refuses both", async () => {
    h0 = await harness();
    const second = await h0.app.admin.addClientSecret(h0.clientId);
    expect(second.clientSecret).not.toBe(h0.clientSecret);
    await expectTokenSuccess(await cc(h0.clientId, h0.clientSecret));
    await expectTokenSuccess(await cc(h0.clientId, second.clientSecret));
    await expectTokenSuccess(await tokenRequest(h0.app, { grant_type: "client_credentials", client_id: h0.clientId, client_secret: second.clientSecret }));
    const third = await h0.app.admin.rotateClientSecret(h0.clientId);
    await expectTokenError(await cc(h0.clientId, h0.clientSecret), 401, failed);
    await expectTokenError(await cc(h0.clientId, second.clientSecret), 401, failed);
    await expectTokenSuccess(await cc(h0.clientId, third.clientSecret));
    const [view] = await h0.app.admin.listClients();
    expect(view!.secrets).toEqual([{ id: third.secret.id, createdAt: h0.clock.now(), expiresAt: null, lastUsedAt: h0.clock.now() }]);
  });

  it("generated client ids and secret ids never start with '-' (a command line would read one as an option); given ones are kept", async () => {
    // Every draw starts with 0xf8 (its base64url starts with "-"), then counts up: tokens differ.
    let next = 0;
    const draws: Uint8Array[] = [];
    const randomBytes = (n: number) => {
      const bytes = new Uint8Array(n).map(() => next++ & 0xff);
      bytes[0] = 0xf8;
      draws.push(bytes);
      return bytes;
    };
    const h = await harness({ randomBytes });
    const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64url");
    draws.length = 0;
    const created = await h.app.admin.createClient({ name: "Dash" });
    const [idDraw, secretDraw, secretIdDraw] = draws.filter((d) => d.length === 16 || d.length === 32 || d.length === 9);
    expect([idDraw, secretDraw, secretIdDraw].map((d) => [d!.length, text(d!)[0]])).toEqual([[16, "-"], [32, "-"], [9, "-"]]);
    expect(created.client.clientId).toBe(`_${text(idDraw!).slice(1)}`);
    expect(created.client.secrets.map((x) => x.id)).toEqual([`_${text(secretIdDraw!).slice(1)}`]);
    // The secret itself is not an id: it is the draw as it is.
    expect(created.clientSecret).toBe(text(secretDraw!));
    draws.length = 0;
    const added = await h.app.admin.addClientSecret(created.client.clientId);
    expect(added.secret.id).toBe(`_${text(draws.find((d) => d.length === 9)!).slice(1)}`);
    const named = await h.app.admin.createClient({ clientId: "-given-id", name: "Given" });
    expect(named.client.clientId).toBe("-given-id");
  });

  it("a secret with an expiry works until then and is refused from that instant", async () => {
    h0 = await harness();
    const temp = await h0.app.admin.addClientSecret(h0.clientId, { expiresIn: 60 });
    expect(temp.secret).toEqual({ id: expect.any(String), createdAt: h0.clock.now(), expiresAt: h0.clock.now() + 60_000, lastUsedAt: null });
    await expectTokenSuccess(await cc(h0.clientId, temp.clientSecret));
    h0.clock.advance(59_999);
    await expectTokenSuccess(await cc(h0.clientId, temp.clientSecret));
    h0.clock.advance(1);
    await expectTokenError(await cc(h0.clientId, temp.clientSecret), 401, failed);
    await expectTokenSuccess(await cc(h0.clientId, h0.clientSecret));
  });

  it("revokeClientSecret refuses that secret at once and keeps the other", async () => {
    h0 = await harness();
    const second = await h0.app.admin.addClientSecret(h0.clientId);
    const first = (await h0.app.admin.getClient(h0.clientId)).secrets.find((x) => x.id !== second.secret.id)!;
    await h0.app.admin.revokeClientSecret(h0.clientId, first.id);
    await expectTokenError(await cc(h0.clientId, h0.clientSecret), 401, failed);
    await expectTokenSuccess(await cc(h0.clientId, second.clientSecret));
    await expect(h0.app.admin.revokeClientSecret(h0.clientId, first.id)).rejects.toThrow(new AdminNotFoundError(`client "app-1" has no secret "${first.id}"`));
  });

  it("records the last use of the secret that matched (at most once a minute), never which one in the answer", async () => {
    h0 = await harness();
    h0.clock.advance(1_000); // secrets are listed oldest first
    const second = await h0.app.admin.addClientSecret(h0.clientId);
    const t0 = h0.clock.now();
    await expectTokenSuccess(await cc(h0.clientId, second.clientSecret));
    h0.clock.advance(30_000);
    await expectTokenSuccess(await cc(h0.clientId, second.clientSecret));
    const secrets = (await h0.app.admin.getClient(h0.clientId)).secrets;
    expect(secrets.map((s) => s.lastUsedAt)).toEqual([null, t0]);
    h0.clock.advance(30_000);
    await expectTokenSuccess(await cc(h0.clientId, second.clientSecret));
    expect((await h0.app.admin.getClient(h0.clientId)).secrets.map((s) => s.lastUsedAt)).toEqual([null, t0 + 60_000]);
  });

  it("a last use that cannot be recorded (a store that reads but cannot write) still authenticates, with one warn line a minute", async () => {
    const memory = createMemoryStorage();
    const warnings: string[] = [];
    const h = await harness({
      storage: { ...memory, clients: { ...memory.clients, touchSecret: async () => Promise.reject(new StorageError("clients.touchSecret failed", { cause: new Error("read-only transaction") })) } },
      logger: { error() {}, warn: (message) => void warnings.push(message) },
    });
    const cc = () => tokenRequest(h.app, { grant_type: "client_credentials" }, { authorization: basic(h.clientId, h.clientSecret) });
    // Until 2026-12-01: 503, so no client got a token while writes failed.
    await expectTokenSuccess(await cc());
    await expectTokenSuccess(await cc());
    const line = "a client secret's last use could not be recorded; the client is authenticated, and later uses try again (this line at most once a minute)";
    expect(warnings.filter((w) => w.startsWith("a client secret"))).toEqual([line]);
    h.clock.advance(60_000);
    await expectTokenSuccess(await cc());
    expect(warnings.filter((w) => w.startsWith("a client secret"))).toEqual([line, line]);
    expect((await memory.clients.get(h.clientId))!.secrets[0]!.lastUsedAt).toBeNull();
  });

  it("the admin views never hold a secret or a hash", async () => {
    h0 = await harness();
    const second = await h0.app.admin.addClientSecret(h0.clientId);
    const text = JSON.stringify([await h0.app.admin.listClients(), await h0.app.admin.getClient(h0.clientId), second.secret]);
    expect(text).not.toContain(h0.clientSecret);
    expect(text).not.toContain(second.clientSecret);
    expect(text).not.toMatch(/"hash"/);
  });

  it("at most 10 live secrets; expired ones are dropped when a secret is added", async () => {
    h0 = await harness();
    for (let i = 0; i < 8; i++) await h0.app.admin.addClientSecret(h0.clientId, { expiresIn: 10 });
    await h0.app.admin.addClientSecret(h0.clientId);
    await expect(h0.app.admin.addClientSecret(h0.clientId)).rejects.toThrow('client "app-1" already has 10 secrets; revoke one first');
    h0.clock.advance(10_000);
    await h0.app.admin.addClientSecret(h0.clientId);
    expect((await h0.app.admin.getClient(h0.clientId)).secrets).toHaveLength(3);
  });

  it("at most 10 live secrets also when adds race: the refused ones are taken back, the kept ones work, and one more fits afterwards if room is left", async () => {
    h0 = await harness();
    const [first] = (await h0.app.admin.getClient(h0.clientId)).secrets;
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => h0.app.admin.addClientSecret(h0.clientId)));
    const kept = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    const refused = results.flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []));
    expect(kept.length).toBeLessThanOrEqual(9);
    expect(refused).toEqual(Array(20 - kept.length).fill('AdminError: client "app-1" already has 10 secrets; revoke one first'));
    const stored = (await h0.app.admin.getClient(h0.clientId)).secrets.map((s) => s.id).sort();
    expect(stored).toEqual([first!.id, ...kept.map((k) => k.secret.id)].sort());
    for (const { clientSecret } of kept) await expectTokenSuccess(await cc(h0.clientId, clientSecret));
    // Sequential adds fill the rest exactly.
    for (let i = stored.length; i < 10; i++) await h0.app.admin.addClientSecret(h0.clientId);
    await expect(h0.app.admin.addClientSecret(h0.clientId)).rejects.toThrow('client "app-1" already has 10 secrets; revoke one first');
    expect((await h0.app.admin.getClient(h0.clientId)).secrets).toHaveLength(10);
  });

  it("two adds past the same count for the last place: the one that writes first keeps it, the other is refused and its secret taken back", async () => {
    const storage = createMemoryStorage();
    const addSecret = storage.clients.addSecret.bind(storage.clients);
    let armed = false;
    let writes = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // The second add to write waits until the first add has finished (both read the count before).
    storage.clients.addSecret = async (clientId, secret) => {
      if (armed && writes++ > 0) await gate;
      return addSecret(clientId, secret);
    };
    h0 = await harness({ storage });
    for (let i = 0; i < 8; i++) await h0.app.admin.addClientSecret(h0.clientId);
    armed = true;
    const adds = [h0.app.admin.addClientSecret(h0.clientId), h0.app.admin.addClientSecret(h0.clientId)];
    void Promise.race(adds).then(open, open);
    const results = await Promise.allSettled(adds);
    const kept = results.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
    expect([kept.length, results.flatMap((r) => (r.status === "rejected" ? [String(r.reason)] : []))]).toEqual([1, ['AdminError: client "app-1" already has 10 secrets; revoke one first']]);
    const stored = (await h0.app.admin.getClient(h0.clientId)).secrets;
    expect(stored).toHaveLength(10);
    expect(stored.map((x) => x.id)).toContain(kept[0]!.secret.id);
    await expectTokenSuccess(await cc(h0.clientId, kept[0]!.clientSecret));
  });

  it("an add whose secret a rotation replaced before the add finished is refused (that secret would not work), not reported as added", async () => {
    const storage = createMemoryStorage();
    const addSecret = storage.clients.addSecret.bind(storage.clients);
    let rotated: string | undefined;
    // A rotation (from another admin, another process) lands between the add and its check.
    storage.clients.addSecret = async (clientId, secret) => {
      const added = await addSecret(clientId, secret);
      rotated = (await h0.app.admin.rotateClientSecret(clientId)).secret.id;
      return added;
    };
    h0 = await harness({ storage });
    await expect(h0.app.admin.addClientSecret(h0.clientId)).rejects.toThrow(new AdminConflictError('the secrets of client "app-1" changed meanwhile; try again'));
    expect((await h0.app.admin.getClient(h0.clientId)).secrets.map((x) => x.id)).toEqual([rotated]);
  });

  it("an add whose check after the write fails (the store drops out) takes its secret back: no secret stays stored that nobody was shown", async () => {
    const storage = createMemoryStorage();
    const get = storage.clients.get.bind(storage.clients);
    const addSecret = storage.clients.addSecret.bind(storage.clients);
    let failNextGet = false;
    storage.clients.addSecret = async (clientId, secret) => {
      const added = await addSecret(clientId, secret);
      failNextGet = true;
      return added;
    };
    storage.clients.get = async (clientId) => {
      if (failNextGet) {
        failNextGet = false;
        throw new StorageError("client store: connection reset");
      }
      return get(clientId);
    };
    h0 = await harness({ storage });
    const before = (await h0.app.admin.getClient(h0.clientId)).secrets.map((x) => x.id);
    await expect(h0.app.admin.addClientSecret(h0.clientId)).rejects.toThrow(new StorageError("client store: connection reset"));
    // Until 2026-12-02 the new secret stayed: hashed, shown to nobody, counted toward the 10 until revoked.
    expect((await h0.app.admin.getClient(h0.clientId)).secrets.map((x) => x.id)).toEqual(before);
    await expectTokenSuccess(await cc(h0.clientId, h0.clientSecret));
  });

  it("a private_key_jwt client has no secrets to add, rotate or revoke", async () => {
    h0 = await harness();
    const jwks = { keys: [{ kty: "EC", crv: "P-256", x: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" }] };
    const { clientSecret } = await h0.app.admin.createClient({ clientId: "signer", authMethod: "private_key_jwt", jwks });
    expect(clientSecret).toBeNull();
    const msg = 'client "signer" authenticates with private_key_jwt and has no secrets';
    await expect(h0.app.admin.addClientSecret("signer")).rejects.toThrow(msg);
    await expect(h0.app.admin.rotateClientSecret("signer")).rejects.toThrow(msg);
  });
});
