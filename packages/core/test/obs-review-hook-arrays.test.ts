/**
 * Review (obs): "A hook never changes an answer" (README, Security events). The event is frozen,
 * but its arrays are the very arrays the admin operation answers with: a hook that sorts one in
 * place (a common way to print a stable list) changes the console's answer.
 */
import { expect, it } from "vitest";
import type { SecurityEvent } from "../src/index.js";
import { call, consoleHarness, read, signIn } from "./console-helpers.js";

const body = { name: "Reporting", clientId: "reporting", grantTypes: ["refresh_token", "password"], scopes: ["offline_access", "Platform_UserAPIs"] };

async function createThroughConsole(onEvent?: (e: SecurityEvent) => void) {
  const h = await consoleHarness(onEvent ? { onEvent } : {});
  const root = await signIn(h.app);
  const r = await read(await call(h.app, "POST", "/api/clients", { cookie: root.cookie, csrf: root.csrf, body }));
  const client = (r.body as { client: { grantTypes: string[]; scopes: string[] } }).client;
  return { status: r.status, grantTypes: client.grantTypes, scopes: client.scopes };
}

it("a hook that sorts an event's array in place leaves the console's answer as without a hook", async () => {
  const without = await createThroughConsole();
  expect(without).toEqual({ status: 201, grantTypes: ["refresh_token", "password"], scopes: ["offline_access", "Platform_UserAPIs"] });
  const sorting = (e: SecurityEvent) => {
    if (e.type === "client.created") {
      e.grant_types.sort();
      e.scopes.sort();
    }
  };
  expect(await createThroughConsole(sorting)).toEqual(without);
});

it("a hook that empties an event's array leaves app.admin's answer as without a hook", async () => {
  const h = await consoleHarness({ onEvent: (e) => { if (e.type === "client.created") e.scopes.length = 0; } });
  const { client } = await h.app.admin.createClient({ clientId: "c2", scopes: ["Platform_UserAPIs"] });
  expect(client.scopes).toEqual(["Platform_UserAPIs"]);
});

it("a hook that empties signing_key.rotated's deleted leaves rotateSigningKey's answer as without a hook", async () => {
  const h = await consoleHarness({ onEvent: (e) => { if (e.type === "signing_key.rotated") e.deleted.length = 0; } });
  const first = await h.app.admin.rotateSigningKey({ now: true });
  await h.app.admin.rotateSigningKey({ now: true });
  h.clock.advance(48 * 3600_000); // the first key is past its use: the next rotation deletes it
  const third = await h.app.admin.rotateSigningKey({ now: true });
  expect(third.deleted).toContain(first.kid);
});

it("the event's arrays are frozen copies: a hook's write throws, and is reported, never reaching the answer", async () => {
  const errors: unknown[] = [];
  const seen: SecurityEvent[] = [];
  const h = await consoleHarness({ logger: { error: (...a: unknown[]) => void errors.push(a), warn() {} }, onEvent: (e) => { seen.push(e); if (e.type === "client.created" && e.client_id === "c3") e.scopes.push("admin"); } });
  const { client } = await h.app.admin.createClient({ clientId: "c3", scopes: ["Platform_UserAPIs"] });
  await h.app.flushEvents();
  const created = seen.find((e) => e.type === "client.created" && e.client_id === "c3") as Extract<SecurityEvent, { type: "client.created" }>;
  expect({ answer: client.scopes, event: created.scopes, frozen: Object.isFrozen(created.scopes) && Object.isFrozen(created.grant_types), shared: created.scopes === client.scopes }).toEqual({
    answer: ["Platform_UserAPIs"],
    event: ["Platform_UserAPIs"],
    frozen: true,
    shared: false,
  });
  expect(errors).toEqual([["onEvent hook failed", { type: "client.created", id: created.id, error: "Cannot add property 1, object is not extensible" }]]);
});

it("a hook that empties signing_key.rotated's cancelled leaves rotateSigningKey's answer as without a hook", async () => {
  const h = await consoleHarness({ onEvent: (e) => { if (e.type === "signing_key.rotated") e.cancelled.length = 0; } });
  await h.app.admin.rotateSigningKey({ now: true });
  const next = await h.app.admin.rotateSigningKey(); // a `next` key: the rotation with now deletes it
  h.clock.advance(1000);
  const rotated = await h.app.admin.rotateSigningKey({ now: true });
  await h.app.flushEvents();
  expect(rotated.cancelled).toEqual([next.kid]);
});
