/**
 * Management console: what ends an administrator's sessions when the account loses the admin role
 * (README: "removing the role ends its sessions at once"). Until 2026-12-01 only the session of the
 * call that met the account without its role ended; the others worked again with the role back.
 */
import { describe, expect, it } from "vitest";
import { call, consoleHarness, read, signIn } from "./console-helpers.js";

const NOT_ADMIN = { error: 1302, message: "This account is not a console administrator." };

describe("console: an account that lost the admin role", () => {
  it("once a call has met the account without its role, none of its sessions comes back when the role is given back (as after a disable)", async () => {
    const h = await consoleHarness();
    await h.app.admin.createAccount({ username: "eve", password: "eve-password-1", roles: ["admin"] });
    const eveId = (await h.storage.accounts.findByUsername("eve"))!.id;
    // eve signed in on two machines (or one cookie of hers was copied).
    const laptop = await signIn(h.app, "eve", "eve-password-1");
    const phone = await signIn(h.app, "eve", "eve-password-1");
    // The role is taken away (an operator editing the database); eve's laptop tab is refused.
    h.demoted.add(eveId);
    expect((await read(await call(h.app, "GET", "/api/clients", { cookie: laptop.cookie }))).body).toEqual(NOT_ADMIN);
    // The server now knows the account lost its role. The role is given back later.
    h.demoted.delete(eveId);
    // The laptop's session stays ended (1301); the phone's must too: the role's removal ended "its sessions".
    expect((await call(h.app, "GET", "/api/clients", { cookie: laptop.cookie })).status).toBe(401);
    const phoneAnswer = await call(h.app, "POST", "/api/clients", { cookie: phone.cookie, csrf: phone.csrf, body: { name: "Back", clientId: "back" } });
    expect(phoneAnswer.status).toBe(401);
    expect(await h.storage.clients.get("back")).toBeNull();
  });

  it("the 403 that ends the sessions clears the browser's cookie too, as the 401 of an ended session does (until 2026-12-02 the dead cookie stayed for its Max-Age)", async () => {
    const h = await consoleHarness();
    await h.app.admin.createAccount({ username: "eve", password: "eve-password-1", roles: ["admin"] });
    const eveId = (await h.storage.accounts.findByUsername("eve"))!.id;
    const laptop = await signIn(h.app, "eve", "eve-password-1");
    h.demoted.add(eveId);
    const demoted = await read(await call(h.app, "GET", "/api/clients", { cookie: laptop.cookie }));
    expect([demoted.status, demoted.body, demoted.setCookie]).toEqual([403, NOT_ADMIN, "plantgate_console=; Path=/console; Max-Age=0; HttpOnly; SameSite=Strict; Secure"]);
  });
});
