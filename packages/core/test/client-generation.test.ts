/**
 * Client generations (2026-12-02): a token is its client's when the generation it carries equals
 * the client's, whatever the clocks of the processes that created the client and issued the token
 * say; a token or client without one (from before, or a backend that does not keep the field) is
 * told apart by time, as before.
 */
import { decodeJwt } from "jose";
import { expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, type ClientRecord, type Storage } from "../src/index.js";
import { BASE, basic, clientToken, harness, manualClock, passwordTokens, type Harness } from "./helpers.js";
import { expectTokenError, FORM, INVALID_REFRESH, refreshRequest } from "./token-helpers.js";

const REVOKE = `${BASE}/UserService/connect/revocation`;
const INTROSPECT = `${BASE}/UserService/connect/introspect`;
const NOT_ISSUED = { error: "invalid_request", error_description: "The token was not issued to this client." };

const post = (h: Harness, url: string, params: Record<string, string>, secret = h.clientSecret) =>
  h.app.fetch(new Request(url, { method: "POST", headers: { "content-type": FORM, authorization: basic(h.clientId, secret) }, body: new URLSearchParams(params).toString() }));
const introspect = async (h: Harness, token: string, secret = h.clientSecret) => {
  const res = await post(h, INTROSPECT, { token }, secret);
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
};

/** A harness over a memory store this test can also write straight into. */
async function withStorage(): Promise<Harness & { storage: Storage }> {
  const storage = createMemoryStorage();
  return { ...(await harness({ storage })), storage };
}

/** The client as a backend that does not keep `generation` (or one written before it) hands it back. */
async function stripGeneration(storage: Storage, clientId: string): Promise<ClientRecord> {
  const record = (await storage.clients.get(clientId))!;
  const { generation: _dropped, ...legacy } = record;
  await storage.clients.delete(clientId);
  expect(await storage.clients.create(legacy)).toBe(true);
  return legacy;
}

it("tokens carry the client's generation: the access token's cgen claim and the refresh record's clientGeneration", async () => {
  const h = await withStorage();
  const client = (await h.storage.clients.get(h.clientId))!;
  expect(client.generation).toMatch(/^[A-Za-z0-9_-]{16}$/);
  const { access_token, refresh_token } = await passwordTokens(h);
  expect(decodeJwt(access_token).cgen).toBe(client.generation);
  expect(decodeJwt(await clientToken(h)).cgen).toBe(client.generation);
  const { refreshTokenKey } = await import("../src/oauth/refresh-key.js");
  const { sha256 } = await import("../src/crypto/index.js");
  const record = await h.storage.refreshTokens.findByHash(await refreshTokenKey(sha256, refresh_token!));
  expect(record?.clientGeneration).toBe(client.generation);
  // Another client, another generation.
  await h.app.admin.createClient({ clientId: "app-2" });
  expect((await h.storage.clients.get("app-2"))!.generation).not.toBe(client.generation);
});

it("a client re-created within the same second does not inherit the old one's tokens: introspection, revocation, refresh", async () => {
  const h = await harness();
  const access = await clientToken(h);
  const { access_token: userAccess, refresh_token } = await passwordTokens(h);
  h.clock.advance(200); // same second, later in it
  await h.app.admin.deleteClient(h.clientId);
  const { clientSecret } = await h.app.admin.createClient({ clientId: h.clientId, scopes: ["Platform_UserAPIs"] });
  const again = { ...h, clientSecret };
  for (const token of [access, userAccess, refresh_token!]) expect(await introspect(again, token)).toEqual({ active: false });
  await expectTokenError(await post(again, REVOKE, { token: access }), 400, NOT_ISSUED);
  await expectTokenError(await post(again, REVOKE, { token: refresh_token! }), 400, NOT_ISSUED);
  await expectTokenError(await refreshRequest(again, refresh_token!, {}, { authorization: basic(h.clientId, clientSecret) }), 400, INVALID_REFRESH);
  // Its own, issued in that same second, are its own.
  expect((await introspect(again, await clientToken(again))).active).toBe(true);
});

it("a client created by a process whose clock runs ahead: its tokens from an instance behind are its own (refresh, introspection, revocation)", async () => {
  const storage = createMemoryStorage();
  const behind = manualClock();
  const app = createPlantgate({ storage, clock: behind.now, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
  const ahead = createPlantgate({ storage, clock: () => behind.now() + 5000, passwordHashIterations: 1000, logger: { error() {}, warn() {} } });
  await app.admin.createAccount({ username: "alice", password: "wonderland-42" });
  const { clientSecret } = await ahead.admin.createClient({ clientId: "fresh" });
  const h: Harness = { app, clock: behind, clientId: "fresh", clientSecret, username: "alice", password: "wonderland-42" };
  const { access_token, refresh_token } = await passwordTokens(h);
  expect((await introspect(h, access_token)).active).toBe(true);
  const refreshed = await refreshRequest(h, refresh_token!, {}, { authorization: basic("fresh", clientSecret) });
  expect(refreshed.status).toBe(200);
  // The rotation carries the generation on: a second refresh, still inside the skew, is its own too
  // (a successor record without it falls back to time and is refused; found by the diff review).
  const { refresh_token: successor } = (await refreshed.json()) as { refresh_token: string };
  const second = await refreshRequest(h, successor, {}, { authorization: basic("fresh", clientSecret) });
  expect(second.status).toBe(200);
  const revoked = await post(h, REVOKE, { token: access_token, token_type_hint: "access_token" });
  expect(revoked.status).toBe(200);
  expect(await introspect(h, access_token)).toEqual({ active: false });
});

it("a client without a generation (stored before 2026-12-02, or by a backend that does not keep it): tokens are told apart by time, as before", async () => {
  const h = await withStorage();
  await stripGeneration(h.storage, h.clientId);
  const access = await clientToken(h);
  expect(decodeJwt(access).cgen).toBeUndefined();
  const { refresh_token } = await passwordTokens(h);
  // Its own tokens work.
  expect((await introspect(h, access)).active).toBe(true);
  // Re-created a second later by a backend that keeps no generation: the earlier tokens are not the new client's.
  h.clock.advance(1000);
  await h.app.admin.deleteClient(h.clientId);
  const { clientSecret } = await h.app.admin.createClient({ clientId: h.clientId });
  await stripGeneration(h.storage, h.clientId);
  const again = { ...h, clientSecret };
  expect(await introspect(again, access)).toEqual({ active: false });
  await expectTokenError(await refreshRequest(again, refresh_token!, {}, { authorization: basic(h.clientId, clientSecret) }), 400, INVALID_REFRESH);
});

it("a token without a generation (issued before the upgrade) against a client with one: told apart by time, so a re-created client still refuses it", async () => {
  const h = await withStorage();
  await stripGeneration(h.storage, h.clientId); // the tokens below carry none, as before the upgrade
  const access = await clientToken(h);
  const { refresh_token } = await passwordTokens(h);
  h.clock.advance(1000);
  await h.app.admin.deleteClient(h.clientId);
  const { clientSecret } = await h.app.admin.createClient({ clientId: h.clientId }); // with a generation
  expect((await h.storage.clients.get(h.clientId))!.generation).toBeDefined();
  const again = { ...h, clientSecret };
  expect(await introspect(again, access)).toEqual({ active: false });
  await expectTokenError(await post(again, REVOKE, { token: refresh_token! }), 400, NOT_ISSUED);
  await expectTokenError(await refreshRequest(again, refresh_token!, {}, { authorization: basic(h.clientId, clientSecret) }), 400, INVALID_REFRESH);
});

it("a client upgraded in place keeps its earlier tokens: a refresh token without a generation refreshes, and its successor carries the generation", async () => {
  const h = await withStorage();
  const withGeneration = (await h.storage.clients.get(h.clientId))!;
  expect(withGeneration.generation).toMatch(/^[A-Za-z0-9_-]{16}$/);
  await stripGeneration(h.storage, h.clientId);
  const { refresh_token } = await passwordTokens(h);
  // The client record gains its generation (what a backend that starts keeping the field would hand back for a new client; here the same client).
  await h.storage.clients.delete(h.clientId);
  await h.storage.clients.create(withGeneration);
  h.clock.advance(1000);
  const res = await refreshRequest(h, refresh_token!, {}, { authorization: basic(h.clientId, h.clientSecret) });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { access_token: string };
  expect(decodeJwt(body.access_token).cgen).toBe(withGeneration.generation);
});
