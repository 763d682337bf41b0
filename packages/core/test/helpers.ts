import { createMemoryStorage, createPlantgate, StorageError, type AccountStore, type Plantgate, type PlantgateOptions, type Storage } from "../src/index.js";

export const BASE = "https://as.example.test";

/** A mutable clock the tests move by hand. */
export function manualClock(start = Date.UTC(2026, 0, 1)) {
  let now = start;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

export interface Harness {
  app: Plantgate;
  clock: ReturnType<typeof manualClock>;
  clientId: string;
  clientSecret: string;
  username: string;
  password: string;
}

/**
 * An app with one client (all grants and scopes) and one user. Password hashing uses few iterations
 * so the suite stays fast; the algorithm and code path are the production ones.
 */
export async function harness(options: PlantgateOptions = {}): Promise<Harness> {
  const clock = manualClock();
  const app = createPlantgate({ clock: clock.now, passwordHashIterations: 1000, logger: { error() {}, warn() {} }, ...options });
  const { clientSecret } = await app.admin.createClient({ clientId: "app-1" });
  await app.admin.createAccount({ username: "alice", password: "wonderland-42", displayName: "Alice" });
  return { app, clock, clientId: "app-1", clientSecret, username: "alice", password: "wonderland-42" };
}

export const basic = (id: string, secret: string) =>
  "Basic " + btoa(`${encodeURIComponent(id).replace(/%20/g, "+")}:${encodeURIComponent(secret).replace(/%20/g, "+")}`);

/** POSTs a raw form body to the token endpoint. */
export function tokenRequest(app: Plantgate, body: string | Record<string, string>, headers: Record<string, string> = {}) {
  return app.fetch(
    new Request(`${BASE}/UserService/connect/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: typeof body === "string" ? body : new URLSearchParams(body).toString(),
    }),
  );
}

/** POSTs a form to `path` (the token, revocation or introspection endpoint) from the client address `ip`. */
export function formFrom(app: Plantgate, path: string, body: Record<string, string>, headers: Record<string, string>, ip: string) {
  return app.fetch(
    new Request(`${BASE}${path}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body: new URLSearchParams(body).toString(),
    }),
    { clientIp: ip },
  );
}

/** A password-grant token response for the harness user. */
export async function passwordTokens(h: Harness, scope = "Platform_UserAPIs offline_access") {
  const res = await tokenRequest(
    h.app,
    { grant_type: "password", username: h.username, password: h.password, scope },
    { authorization: basic(h.clientId, h.clientSecret) },
  );
  if (res.status !== 200) throw new Error(`password grant failed: ${res.status} ${await res.text()}`);
  return (await res.json()) as { access_token: string; refresh_token?: string; scope: string; expires_in: number; token_type: string };
}

/** A client-credentials access token. */
export async function clientToken(h: Harness, scope?: string) {
  const res = await tokenRequest(
    h.app,
    { grant_type: "client_credentials", ...(scope !== undefined ? { scope } : {}) },
    { authorization: basic(h.clientId, h.clientSecret) },
  );
  if (res.status !== 200) throw new Error(`client_credentials failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { access_token: string }).access_token;
}

/**
 * A memory store whose signingKeys.delete fails with StorageError("down") while `deletes.fail` is
 * set (a storage outage in the middle of a rotation's deletions); `memory` is the store beneath.
 */
export function keyDeletesFailing(): { memory: Storage; storage: Storage; deletes: { fail: boolean } } {
  const memory = createMemoryStorage();
  const deletes = { fail: false };
  const storage: Storage = {
    ...memory,
    signingKeys: {
      ...memory.signingKeys,
      async delete(kid) {
        if (deletes.fail) throw new StorageError("down");
        return memory.signingKeys.delete(kid);
      },
    },
  };
  return { memory, storage, deletes };
}

/**
 * `accounts` with a gate on findByUsername: after `hold(username)`, the next lookup of that
 * username waits (`reached` resolves then) until `release()`, as a password check in flight would.
 */
export function lookupGate(accounts: AccountStore): { accounts: AccountStore; hold(username: string): { reached: Promise<void>; release(): void } } {
  let held: { username: string; reached: () => void; wait: Promise<void> } | null = null;
  return {
    accounts: {
      ...accounts,
      findByUsername: async (username) => {
        const h = held?.username === username ? held : null;
        if (h) {
          held = null;
          h.reached();
          await h.wait;
        }
        return accounts.findByUsername(username);
      },
    },
    hold(username) {
      let reached = (): void => {};
      let release = (): void => {};
      const atLookup = new Promise<void>((r) => (reached = r));
      held = { username, reached: () => reached(), wait: new Promise<void>((r) => (release = r)) };
      return { reached: atLookup, release: () => release() };
    },
  };
}
