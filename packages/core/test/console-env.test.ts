/** The console's environment switches and the admin bootstrap the example servers use. */
import { describe, expect, it } from "vitest";
import { applyBootstrap, bootstrapFromEnv, ConfigError, consoleSettingsFromEnv, createMemoryStorage, createPlantgate, optionsFromEnv } from "../src/index.js";
import { ADMIN, call, signIn } from "./console-helpers.js";

const quiet = { logger: { error() {}, warn() {} }, passwordHashIterations: 1000 };

describe("console environment", () => {
  it("PLANTGATE_CONSOLE=1 or PLANTGATE_BOOTSTRAP_ADMIN=1 turns the console on; the TTL is read", () => {
    expect(optionsFromEnv({}).console).toBeUndefined();
    expect(optionsFromEnv({ PLANTGATE_CONSOLE: "0" }).console).toBeUndefined();
    expect(optionsFromEnv({ PLANTGATE_CONSOLE: "1" }).console).toEqual({ enabled: true });
    expect(optionsFromEnv({ PLANTGATE_BOOTSTRAP_ADMIN: "true", PLANTGATE_CONSOLE_SESSION_TTL: "900" }).console).toEqual({ enabled: true, sessionTtlSeconds: 900 });
    expect(() => optionsFromEnv({ PLANTGATE_CONSOLE: "yes" })).toThrow(new ConfigError('PLANTGATE_CONSOLE must be 1 or true, or 0 or false, got "yes"'));
    expect(() => optionsFromEnv({ PLANTGATE_CONSOLE: "1", PLANTGATE_CONSOLE_SESSION_TTL: "-5" })).toThrow(ConfigError);
    // Past the option's 10 years: refused under the variable's name (a TypeError naming
    // console.sessionTtlSeconds when the app was made, until 2026-11-30).
    expect(() => optionsFromEnv({ PLANTGATE_CONSOLE: "1", PLANTGATE_CONSOLE_SESSION_TTL: "315360001" })).toThrow(
      new ConfigError('PLANTGATE_CONSOLE_SESSION_TTL must be at most 315360000, got "315360001"'),
    );
    expect(optionsFromEnv({ PLANTGATE_CONSOLE: "1", PLANTGATE_CONSOLE_SESSION_TTL: "315360000" }).console).toEqual({ enabled: true, sessionTtlSeconds: 315_360_000 });
    expect(() => optionsFromEnv({ PLANTGATE_AUDIT_RETENTION_DAYS: "36501" })).toThrow(new ConfigError('PLANTGATE_AUDIT_RETENTION_DAYS must be at most 36500, got "36501"'));
    expect(optionsFromEnv({ PLANTGATE_AUDIT_RETENTION_DAYS: "36500" }).auditRetentionDays).toBe(36_500);
    expect(bootstrapFromEnv({ PLANTGATE_BOOTSTRAP_ADMIN: "1" })).toEqual({ client: null, account: null, admin: true });
    expect(bootstrapFromEnv({ PLANTGATE_BOOTSTRAP_ADMIN: "0" })).toEqual({ client: null, account: null });
  });

  it("PLANTGATE_CONSOLE_IDLE_TIMEOUT is read as console.idleTimeoutSeconds: 0 (off) to 10 years, anything else refused under its name", () => {
    expect(optionsFromEnv({ PLANTGATE_CONSOLE: "1", PLANTGATE_CONSOLE_IDLE_TIMEOUT: "900" }).console).toEqual({ enabled: true, idleTimeoutSeconds: 900 });
    expect(optionsFromEnv({ PLANTGATE_CONSOLE: "1", PLANTGATE_CONSOLE_IDLE_TIMEOUT: "0" }).console).toEqual({ enabled: true, idleTimeoutSeconds: 0 });
    expect(optionsFromEnv({ PLANTGATE_CONSOLE: "1", PLANTGATE_CONSOLE_IDLE_TIMEOUT: "" }).console).toEqual({ enabled: true });
    expect(optionsFromEnv({ PLANTGATE_CONSOLE: "1", PLANTGATE_CONSOLE_IDLE_TIMEOUT: "315360000" }).console).toEqual({ enabled: true, idleTimeoutSeconds: 315_360_000 });
    expect(() => optionsFromEnv({ PLANTGATE_CONSOLE: "1", PLANTGATE_CONSOLE_IDLE_TIMEOUT: "315360001" })).toThrow(
      new ConfigError('PLANTGATE_CONSOLE_IDLE_TIMEOUT must be at most 315360000, got "315360001"'),
    );
    expect(() => optionsFromEnv({ PLANTGATE_CONSOLE: "1", PLANTGATE_CONSOLE_IDLE_TIMEOUT: "30m" })).toThrow(
      new ConfigError('PLANTGATE_CONSOLE_IDLE_TIMEOUT must be a non-negative integer, got "30m"'),
    );
    // Without the console it is checked but not used.
    expect(optionsFromEnv({ PLANTGATE_CONSOLE_IDLE_TIMEOUT: "900" }).console).toBeUndefined();
    expect(() => optionsFromEnv({ PLANTGATE_CONSOLE_IDLE_TIMEOUT: "-1" })).toThrow(new ConfigError('PLANTGATE_CONSOLE_IDLE_TIMEOUT must be a non-negative integer, got "-1"'));
  });

  it("consoleSettingsFromEnv: the two console settings, for a console turned on in code; each only when set, checked as optionsFromEnv checks them", () => {
    expect(consoleSettingsFromEnv({})).toEqual({});
    expect(consoleSettingsFromEnv({ PLANTGATE_CONSOLE_SESSION_TTL: "", PLANTGATE_CONSOLE_IDLE_TIMEOUT: "" })).toEqual({});
    expect(consoleSettingsFromEnv({ PLANTGATE_CONSOLE_SESSION_TTL: "600", PLANTGATE_CONSOLE_IDLE_TIMEOUT: "0" })).toEqual({ sessionTtlSeconds: 600, idleTimeoutSeconds: 0 });
    // They do not say whether the console is on, nor does PLANTGATE_CONSOLE add to them.
    expect(consoleSettingsFromEnv({ PLANTGATE_CONSOLE: "1", PLANTGATE_CONSOLE_IDLE_TIMEOUT: "120" })).toEqual({ idleTimeoutSeconds: 120 });
    expect(() => consoleSettingsFromEnv({ PLANTGATE_CONSOLE_SESSION_TTL: "0" })).toThrow(new ConfigError('PLANTGATE_CONSOLE_SESSION_TTL must be a positive integer, got "0"'));
    expect(() => consoleSettingsFromEnv({ PLANTGATE_CONSOLE_IDLE_TIMEOUT: "315360001" })).toThrow(new ConfigError('PLANTGATE_CONSOLE_IDLE_TIMEOUT must be at most 315360000, got "315360001"'));
  });

  it("a console session lifetime past 10 years is refused when the app is made (every sign-in was a 500, its session already stored); 10 years signs in", async () => {
    expect(() => createPlantgate({ ...quiet, console: { enabled: true, sessionTtlSeconds: 9_000_000_000_000 } })).toThrow(new TypeError("console.sessionTtlSeconds must be at most 315360000"));
    const app = createPlantgate({ ...quiet, console: { enabled: true, sessionTtlSeconds: 315_360_000 } });
    await app.admin.createAccount({ ...ADMIN, roles: ["admin"] });
    expect((await signIn(app)).body.expiresAt).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it("PLANTGATE_BOOTSTRAP_ADMIN=1 on a start after the first (the admin exists) reads no list of accounts", async () => {
    const env = { PLANTGATE_BOOTSTRAP_ADMIN: "1", PLANTGATE_BOOTSTRAP_USERNAME: ADMIN.username, PLANTGATE_BOOTSTRAP_PASSWORD: ADMIN.password };
    const storage = createMemoryStorage();
    let pages = 0;
    const list = storage.accounts.list.bind(storage.accounts);
    storage.accounts.list = (offset, limit) => {
      pages++;
      return list(offset, limit);
    };
    const app = createPlantgate({ ...quiet, storage, ...optionsFromEnv(env) });
    for (let i = 0; i < 50; i++) await app.admin.createAccount({ username: `user-${i}`, password: "long-enough-pw" });
    expect(await applyBootstrap(app.admin, bootstrapFromEnv(env))).toBeNull();
    expect(await applyBootstrap(app.admin, bootstrapFromEnv(env))).toBeNull();
    expect(pages).toBe(0);
    expect((await storage.accounts.findByUsername(ADMIN.username))?.roles).toEqual(["admin"]);
  });

  it("PLANTGATE_BOOTSTRAP_ADMIN=1 creates the bootstrap user as admin, who can sign in; idempotent", async () => {
    const env = { PLANTGATE_BOOTSTRAP_ADMIN: "1", PLANTGATE_BOOTSTRAP_USERNAME: ADMIN.username, PLANTGATE_BOOTSTRAP_PASSWORD: ADMIN.password };
    const app = createPlantgate({ ...quiet, ...optionsFromEnv(env) });
    expect(await applyBootstrap(app.admin, bootstrapFromEnv(env), { demo: true })).toBeNull();
    expect(await applyBootstrap(app.admin, bootstrapFromEnv(env), { demo: true })).toBeNull();
    expect((await app.admin.listAccounts()).map((a) => [a.username, a.roles])).toEqual([[ADMIN.username, ["admin"]]]);
    const s = await signIn(app);
    expect(s.body).toMatchObject({ username: ADMIN.username });
    // Bad bootstrap input still fails loudly rather than being taken for "already exists".
    const bad = { ...env, PLANTGATE_BOOTSTRAP_USERNAME: "other", PLANTGATE_BOOTSTRAP_PASSWORD: "short" };
    await expect(applyBootstrap(app.admin, bootstrapFromEnv(bad))).rejects.toThrow("password must be 8-1024 characters");
  });

  it("without a bootstrap user, the demo user is the admin", async () => {
    const env = { PLANTGATE_BOOTSTRAP_ADMIN: "1" };
    const app = createPlantgate({ ...quiet, ...optionsFromEnv(env) });
    const demo = (await applyBootstrap(app.admin, bootstrapFromEnv(env), { demo: true }))!;
    expect((await call(app, "POST", "/api/session", { body: { username: demo.username, password: demo.password } })).status).toBe(200);
  });

  it("without PLANTGATE_BOOTSTRAP_ADMIN the bootstrap user has no role and the console is off", async () => {
    const env = { PLANTGATE_BOOTSTRAP_USERNAME: ADMIN.username, PLANTGATE_BOOTSTRAP_PASSWORD: ADMIN.password };
    const app = createPlantgate({ ...quiet, ...optionsFromEnv(env) });
    await applyBootstrap(app.admin, bootstrapFromEnv(env));
    expect((await app.admin.listAccounts())[0]!.roles).toEqual([]);
    expect((await call(app, "POST", "/api/session", { body: ADMIN })).status).toBe(404);
  });
});
