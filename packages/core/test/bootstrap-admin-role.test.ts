/**
 * PLANTGATE_BOOTSTRAP_ADMIN=1 makes the console's administrator: the role it gives is the console's
 * `adminRole`. Until 2026-12-02 applyBootstrap gave the literal role "admin", so beside a custom
 * `console.adminRole` the bootstrapped administrator (or the demo user) could not sign in, and
 * checkBootstrap's warning about a stored account without the role looked for "admin" too.
 */
import { describe, expect, it } from "vitest";
import { applyBootstrap, bootstrapFromEnv, checkBootstrap, createMemoryStorage, createPlantgate, optionsFromEnv } from "../src/index.js";
import { ADMIN, call } from "./console-helpers.js";

const quiet = { logger: { error() {}, warn() {} }, passwordHashIterations: 1000 };
const env = { PLANTGATE_BOOTSTRAP_ADMIN: "1", PLANTGATE_BOOTSTRAP_USERNAME: ADMIN.username, PLANTGATE_BOOTSTRAP_PASSWORD: ADMIN.password };

describe("the bootstrap gives the configured console.adminRole", () => {
  it("the bootstrap account gets console.adminRole and can sign in to the console", async () => {
    const fromEnv = optionsFromEnv(env);
    const app = createPlantgate({ ...quiet, ...fromEnv, console: { ...fromEnv.console!, adminRole: "plantgate-admin" } });
    expect(await applyBootstrap(app.admin, bootstrapFromEnv(env))).toBeNull();
    expect((await app.admin.listAccounts()).map((a) => [a.username, a.roles])).toEqual([[ADMIN.username, ["plantgate-admin"]]]);
    expect((await call(app, "POST", "/api/session", { body: ADMIN })).status).toBe(200);
  });

  it("without a bootstrap account, the demo user gets console.adminRole and can sign in", async () => {
    const demoEnv = { PLANTGATE_BOOTSTRAP_ADMIN: "1" };
    const app = createPlantgate({ ...quiet, ...optionsFromEnv(demoEnv), console: { enabled: true, adminRole: "ops" } });
    const demo = (await applyBootstrap(app.admin, bootstrapFromEnv(demoEnv), { demo: true }))!;
    expect((await app.admin.listAccounts()).map((a) => a.roles)).toEqual([["ops"]]);
    expect((await call(app, "POST", "/api/session", { body: { username: demo.username, password: demo.password } })).status).toBe(200);
  });

  it("the default stays admin", async () => {
    const app = createPlantgate({ ...quiet, ...optionsFromEnv(env) });
    await applyBootstrap(app.admin, bootstrapFromEnv(env));
    expect((await app.admin.listAccounts())[0]!.roles).toEqual(["admin"]);
    expect(app.admin.consoleAdminRole).toBe("admin");
  });

  it("checkBootstrap warns about a stored account without the configured role, not without \"admin\"", async () => {
    const storage = createMemoryStorage();
    const app = createPlantgate({ ...quiet, storage, console: { enabled: true, adminRole: "ops" } });
    await app.admin.createAccount({ ...ADMIN, roles: ["admin"] });
    const warnings = await checkBootstrap(bootstrapFromEnv(env), storage, { adminRole: "ops" });
    expect(warnings).toEqual([
      'PLANTGATE_BOOTSTRAP_ADMIN=1: the account PLANTGATE_BOOTSTRAP_USERNAME names exists without the console\'s admin role "ops" and keeps its roles (the role is given only to an account the bootstrap creates); make an administrator with `plantgate user create --roles ops`, or bootstrap another username',
    ]);
    const holding = createMemoryStorage();
    const other = createPlantgate({ ...quiet, storage: holding, console: { enabled: true, adminRole: "ops" } });
    await other.admin.createAccount({ ...ADMIN, roles: ["ops"] });
    expect(await checkBootstrap(bootstrapFromEnv(env), holding, { adminRole: "ops" })).toEqual([]);
  });
});
