/**
 * A guess at a username whose own (username + IP) key refuses, sent while the client's budget is
 * at its limit, is refused by that key and leaves the budget as it was. Until later on 2026-12-02
 * (the budgets counted last, read first) it was counted on the budget read at its limit and pushed it
 * past; a success in flight then gave back its count and the budget stayed locked, so bob (another
 * user of the client) was refused. Found by the second diff review of the session.
 */
import { expect, it } from "vitest";
import { createMemoryStorage, createPlantgate, type Storage } from "../src/index.js";
import { BASE, basic, lookupGate } from "./helpers.js";

it("a guess at a username locked by its own key does not push the client's budget past its limit", async () => {
  const memory = createMemoryStorage();
  const lookups = lookupGate(memory.accounts);
  const storage: Storage = { ...memory, accounts: lookups.accounts };
  // maxFailures 1: 1 per username + IP, 5 per username, 10 per client.
  const app = createPlantgate({ storage, passwordHashIterations: 1000, logger: { error() {}, warn() {} }, bruteForce: { maxFailures: 1, windowSeconds: 600 }, maxConcurrentPasswordChecks: 100 });
  await app.admin.createAccount({ username: "alice", password: "alice-password-1" });
  await app.admin.createAccount({ username: "bob", password: "bob-password-1" });
  const { clientSecret } = await app.admin.createClient({ clientId: "app-1", grantTypes: ["password"] });
  const grant = (username: string, password: string, ip: string) =>
    app.fetch(
      new Request(`${BASE}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: basic("app-1", clientSecret) },
        body: new URLSearchParams({ grant_type: "password", username, password }).toString(),
      }),
      { clientIp: ip },
    );
  // Nine failures at nine usernames: the budget at 9; user-0's (username + IP) key at its limit.
  for (let i = 0; i < 9; i++) expect((await grant(`user-${i}`, "wrong", `198.51.100.${i + 1}`)).status).toBe(400);
  // alice's right password counts the budget's tenth (its limit) and is held at its password check.
  const held = lookups.hold("alice");
  const alice = grant("alice", "alice-password-1", "203.0.113.1");
  await held.reached;
  // A guess at user-0 from its own address: refused by its own (username + IP) lock.
  const guess = await grant("user-0", "wrong-again", "198.51.100.1");
  expect(guess.status).toBe(429);
  held.release();
  expect((await alice).status).toBe(200);
  // alice's count given back: the budget is under its limit again (9), unless the guess spent it.
  const bob = await grant("bob", "bob-password-1", "203.0.113.2");
  expect(bob.status).toBe(200);
});
