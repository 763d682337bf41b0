import { describe, expect, it } from "vitest";
import { applyBootstrap, bootstrapFromEnv, checkBootstrap, ConfigError, createMemoryStorage, createPlantgate, hashPassword, optionsFromEnv, verifyPassword } from "../src/index.js";
import { defaultRandomBytes } from "../src/crypto/index.js";
import { MAX_PASSWORD_HASH_ITERATIONS } from "../src/options.js";

const quiet = { logger: { error() {}, warn() {} }, passwordHashIterations: 1000 };

describe("environment configuration", () => {
  it("bootstrapFromEnv: pairs must be set together", () => {
    expect(() => bootstrapFromEnv({ PLANTGATE_BOOTSTRAP_CLIENT_ID: "a" })).toThrow(
      new ConfigError("PLANTGATE_BOOTSTRAP_CLIENT_ID and PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be set together"),
    );
    expect(() => bootstrapFromEnv({ PLANTGATE_BOOTSTRAP_PASSWORD: "x" })).toThrow(ConfigError);
    expect(bootstrapFromEnv({})).toEqual({ client: null, account: null });
  });

  it("applyBootstrap ensures client and account idempotently and never creates a demo then", async () => {
    const app = createPlantgate(quiet);
    const plan = bootstrapFromEnv({
      PLANTGATE_BOOTSTRAP_CLIENT_ID: "svc",
      PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "a-secret-of-sixteen+",
      PLANTGATE_BOOTSTRAP_USERNAME: "ops",
      PLANTGATE_BOOTSTRAP_PASSWORD: "ops-password",
    });
    expect(await applyBootstrap(app.admin, plan, { demo: true })).toBeNull();
    expect(await applyBootstrap(app.admin, plan, { demo: true })).toBeNull();
    expect((await app.admin.listClients()).map((c) => c.clientId)).toEqual(["svc"]);
    expect((await app.admin.listAccounts()).map((a) => a.username)).toEqual(["ops"]);
  });

  it("checkBootstrap: a value breaking the rules is a ConfigError naming its variable (no value) unless what it would create is stored", async () => {
    const storage = createMemoryStorage();
    const short = "Sh0rt-S3cr3t";
    const env = { PLANTGATE_BOOTSTRAP_CLIENT_ID: "svc", PLANTGATE_BOOTSTRAP_CLIENT_SECRET: short, PLANTGATE_BOOTSTRAP_USERNAME: "ops", PLANTGATE_BOOTSTRAP_PASSWORD: "pw-7chr" };
    const refused = async (vars: Record<string, string>) => {
      const error = await checkBootstrap(bootstrapFromEnv(vars), storage).then(() => null, (e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).not.toContain(short);
      expect((error as Error).message).not.toContain("pw-7chr");
      return (error as Error).message;
    };
    const client = { PLANTGATE_BOOTSTRAP_CLIENT_ID: "svc", PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "a-secret-of-sixteen+" };
    const account = { PLANTGATE_BOOTSTRAP_USERNAME: "ops", PLANTGATE_BOOTSTRAP_PASSWORD: "ops-password" };
    expect(await refused(env)).toBe("PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be 16-1024 characters");
    expect(await refused({ ...client, PLANTGATE_BOOTSTRAP_CLIENT_ID: "s v c" })).toBe("PLANTGATE_BOOTSTRAP_CLIENT_ID must be 1-200 printable ASCII characters without spaces");
    expect(await refused({ ...client, PLANTGATE_BOOTSTRAP_CLIENT_ID: ".." })).toBe('PLANTGATE_BOOTSTRAP_CLIENT_ID must not be "." or ".."');
    expect(await refused({ ...client, PLANTGATE_BOOTSTRAP_CLIENT_SECRET: "x".repeat(1025) })).toBe("PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be 16-1024 characters");
    expect(await refused({ ...client, ...account, PLANTGATE_BOOTSTRAP_PASSWORD: "pw-7chr" })).toBe("PLANTGATE_BOOTSTRAP_PASSWORD must be 8-1024 characters");
    expect(await refused({ ...account, PLANTGATE_BOOTSTRAP_USERNAME: "x".repeat(201) })).toBe("PLANTGATE_BOOTSTRAP_USERNAME must be 1-200 characters");
    expect(await refused({ ...account, PLANTGATE_BOOTSTRAP_USERNAME: "ops\u202e" })).toBe("PLANTGATE_BOOTSTRAP_USERNAME must not start or end with white space or an invisible character");
    expect(await checkBootstrap(bootstrapFromEnv({ ...client, ...account }), storage)).toEqual([]);

    // Stored: applyBootstrap leaves them as they are, so the values are not used; a warning each.
    const app = createPlantgate({ ...quiet, storage });
    await applyBootstrap(app.admin, bootstrapFromEnv({ ...client, ...account }));
    expect(await checkBootstrap(bootstrapFromEnv(env), storage)).toEqual([
      "PLANTGATE_BOOTSTRAP_CLIENT_SECRET must be 16-1024 characters; ignored, as the bootstrap client exists and is left as it is",
      "PLANTGATE_BOOTSTRAP_PASSWORD must be 8-1024 characters; ignored, as the bootstrap account exists and is left as it is",
    ]);
    await expect(applyBootstrap(app.admin, bootstrapFromEnv(env))).resolves.toBeNull();
    // PLANTGATE_BOOTSTRAP_ADMIN=1 creates its account with the role and checks it, stored or not.
    const admin = { ...account, PLANTGATE_BOOTSTRAP_PASSWORD: "pw-7chr", PLANTGATE_BOOTSTRAP_ADMIN: "1" };
    expect(await refused(admin)).toBe("PLANTGATE_BOOTSTRAP_PASSWORD must be 8-1024 characters");
    await expect(applyBootstrap(app.admin, bootstrapFromEnv(admin))).rejects.toThrow("password must be 8-1024 characters");
  });

  it("PLANTGATE_BOOTSTRAP_ADMIN=1 over an account stored before the NFC and control-character rules: the start goes on, the name kept", async () => {
    // Records made before 2026-12-02, as a store holds them (the admin refuses such names now).
    for (const username of ["jose\u0301", "o\u0007ps"]) {
      const storage = createMemoryStorage();
      const passwordHash = await hashPassword("ops-password", defaultRandomBytes, { iterations: 1000 });
      expect(await storage.accounts.create({ id: "a1", username, displayName: null, email: null, roles: ["admin"], enabled: true, createdAt: 0, passwordHash })).toBe(true);
      const app = createPlantgate({ ...quiet, storage });
      await expect(app.admin.createAccount({ username, password: "ops-password" })).rejects.toThrow(/^username must (be in Unicode normalization form C|not contain control characters)/);
      const plan = bootstrapFromEnv({ PLANTGATE_BOOTSTRAP_USERNAME: username, PLANTGATE_BOOTSTRAP_PASSWORD: "ops-password", PLANTGATE_BOOTSTRAP_ADMIN: "1" });
      const rule = username === "jose\u0301" ? "must be in Unicode normalization form C (NFC: a composed é, not e followed by a combining accent)" : "must not contain control characters";
      expect(await checkBootstrap(plan, storage)).toEqual([`PLANTGATE_BOOTSTRAP_USERNAME ${rule}; ignored, as the bootstrap account exists and is left as it is`]);
      await expect(applyBootstrap(app.admin, plan, { demo: true })).resolves.toBeNull();
      expect(await storage.accounts.findByUsername(username)).toEqual({ id: "a1", username, displayName: null, email: null, roles: ["admin"], enabled: true, createdAt: 0, passwordHash });
      expect((await app.admin.listAccounts()).length).toBe(1);
      // Still the password's rule with the flag (as before), and a name not stored is refused.
      await expect(checkBootstrap(bootstrapFromEnv({ PLANTGATE_BOOTSTRAP_USERNAME: username, PLANTGATE_BOOTSTRAP_PASSWORD: "pw-7chr", PLANTGATE_BOOTSTRAP_ADMIN: "1" }), storage)).rejects.toThrow(
        new ConfigError("PLANTGATE_BOOTSTRAP_PASSWORD must be 8-1024 characters"),
      );
      await expect(applyBootstrap(app.admin, bootstrapFromEnv({ PLANTGATE_BOOTSTRAP_USERNAME: username, PLANTGATE_BOOTSTRAP_PASSWORD: "pw-7chr", PLANTGATE_BOOTSTRAP_ADMIN: "1" }))).rejects.toThrow("password must be 8-1024 characters");
      const other = bootstrapFromEnv({ PLANTGATE_BOOTSTRAP_USERNAME: `${username}2`, PLANTGATE_BOOTSTRAP_PASSWORD: "ops-password", PLANTGATE_BOOTSTRAP_ADMIN: "1" });
      await expect(checkBootstrap(other, storage)).rejects.toThrow(new ConfigError(`PLANTGATE_BOOTSTRAP_USERNAME ${rule}`));
      await expect(applyBootstrap(app.admin, other)).rejects.toThrow(`username ${rule}`);
    }
  });

  it("applyBootstrap creates the demo client and user only on an empty store, once", async () => {
    const app = createPlantgate(quiet);
    const demo = await applyBootstrap(app.admin, bootstrapFromEnv({}), { demo: true });
    expect(demo).toEqual({ clientId: "demo-client", clientSecret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), username: "demo", password: expect.stringMatching(/^[0-9a-f]{24}$/) });
    expect(await applyBootstrap(app.admin, bootstrapFromEnv({}), { demo: true })).toBeNull();
    expect(await applyBootstrap(createPlantgate(quiet).admin, bootstrapFromEnv({}))).toBeNull();
  });

  it("applyBootstrap: instances starting together on one empty store make one demo, and none of them fails", async () => {
    // Two servers' first start on one store (two processes on one SQLite file, two replicas on one
    // PostgreSQL): each saw no client, and the one that lost the race to create "demo-client"
    // failed its start with `client "demo-client" already exists` (exit 1).
    const storage = createMemoryStorage();
    const apps = [createPlantgate({ ...quiet, storage }), createPlantgate({ ...quiet, storage })];
    const results = await Promise.all(apps.map((app) => applyBootstrap(app.admin, bootstrapFromEnv({}), { demo: true })));
    expect(results.filter((demo) => demo !== null)).toHaveLength(1);
    expect(results.filter((demo) => demo === null)).toHaveLength(1);
    expect((await apps[0]!.admin.listClients()).map((client) => client.clientId)).toEqual(["demo-client"]);
    expect((await apps[0]!.admin.listAccounts()).map((account) => account.username)).toEqual(["demo"]);
  });

  it("applyBootstrap: a store with an account named demo but no client gets no demo client whose secret is lost", async () => {
    // Until 2026-11-30 the demo client was stored, then the account failed (`username "demo" is
    // taken`): the start failed, and the next one, finding a client, made no demo; the client's
    // secret was never shown.
    const app = createPlantgate(quiet);
    await app.admin.createAccount({ username: "demo", password: "a long passphrase" });
    await expect(applyBootstrap(app.admin, bootstrapFromEnv({}), { demo: true })).rejects.toThrow(
      new ConfigError('cannot make the demo user: username "demo" is taken (the store has accounts but no client); set PLANTGATE_BOOTSTRAP_CLIENT_ID and PLANTGATE_BOOTSTRAP_CLIENT_SECRET'),
    );
    expect(await app.admin.listClients()).toEqual([]);
  });

  it("applyBootstrap: beforeDemo runs once a demo is to be made, before anything is stored, and a throw stores nothing", async () => {
    const calls: string[] = [];
    const refusing = createPlantgate(quiet);
    const cannot = new Error("cannot write the demo credentials");
    await expect(applyBootstrap(refusing.admin, bootstrapFromEnv({}), { demo: true, beforeDemo: async () => { calls.push("refused"); throw cannot; } })).rejects.toBe(cannot);
    expect([await refusing.admin.listClients(), await refusing.admin.listAccounts()]).toEqual([[], []]);
    const app = createPlantgate(quiet);
    const demo = await applyBootstrap(app.admin, bootstrapFromEnv({}), { demo: true, beforeDemo: () => { calls.push("made"); } });
    expect(demo).not.toBeNull();
    // Not called when no demo is made (a client exists now).
    expect(await applyBootstrap(app.admin, bootstrapFromEnv({}), { demo: true, beforeDemo: () => { calls.push("again"); } })).toBeNull();
    expect(calls).toEqual(["refused", "made"]);
  });

  it("optionsFromEnv rejects malformed values with the variable's name and no secret", () => {
    expect(() => optionsFromEnv({ PLANTGATE_ACCESS_TOKEN_TTL: "0" })).toThrow(new ConfigError('PLANTGATE_ACCESS_TOKEN_TTL must be a positive integer, got "0"'));
    // More than 12 digits (a wrangler number such as 1e12 arrives as 13): too large, not "no
    // integer" (until 2026-12-01).
    // Bounded as the option since 2026-12-02 (10 years): said so, not "more than 12 digits".
    expect(() => optionsFromEnv({ PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY: "1000000000000" })).toThrow(
      new ConfigError('PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY must be at most 315360000, got "1000000000000"'),
    );
    expect(() => optionsFromEnv({ PLANTGATE_PASSWORD_HASH_ITERATIONS: "99999999999999" })).toThrow(new ConfigError('PLANTGATE_PASSWORD_HASH_ITERATIONS must be at most 10000000, got "99999999999999"'));
    expect(() => optionsFromEnv({ PLANTGATE_REFRESH_GRACE_SECONDS: "5000000000000" })).toThrow(new ConfigError('PLANTGATE_REFRESH_GRACE_SECONDS is too large (more than 12 digits), got "5000000000000"'));
    // Ten years at most, as a client's own lifetime (999999999999 was taken: tokens that never expired).
    expect(() => optionsFromEnv({ PLANTGATE_ACCESS_TOKEN_TTL: "999999999999" })).toThrow(new ConfigError('PLANTGATE_ACCESS_TOKEN_TTL must be at most 315360000, got "999999999999"'));
    expect(optionsFromEnv({ PLANTGATE_ACCESS_TOKEN_TTL: "315360000" })).toEqual({ accessTokenTtl: 315360000 });
    for (const name of ["accessTokenTtl", "refreshTokenTtl", "refreshTokenAbsoluteTtl"] as const) {
      expect(() => createPlantgate({ ...quiet, [name]: 315360001 })).toThrow(new TypeError(`${name} must be at most 315360000`));
      expect(() => createPlantgate({ ...quiet, [name]: 315360000 })).not.toThrow();
    }
    expect(() => optionsFromEnv({ PLANTGATE_ISSUER: "not a url" })).toThrow(ConfigError);
    const secretish = '{"kty":"EC","x":"not-private"}';
    expect(() => optionsFromEnv({ PLANTGATE_SIGNING_KEY: secretish })).toThrow(
      new ConfigError("PLANTGATE_SIGNING_KEY must be a private JWK in JSON (an object with a 'd' member)"),
    );
    expect(optionsFromEnv({ PLANTGATE_SCOPE_PREFIX: "Acme", PLANTGATE_PASSWORD_HASH_ITERATIONS: "5000" })).toEqual({ scopePrefix: "Acme", passwordHashIterations: 5000 });
  });

  it("optionsFromEnv applies the options' own rules to their variables, naming the variable (until 2026-12-01 createPlantgate refused later, naming the option, after a server had opened its store)", () => {
    for (const [env, message] of [
      [{ PLANTGATE_SCOPE_PREFIX: "Ac me" }, "PLANTGATE_SCOPE_PREFIX must be a non-empty scope token"],
      [{ PLANTGATE_ISSUER: "https://auth.example.com/?tenant=a" }, "PLANTGATE_ISSUER must be a URL without a query or fragment (RFC 8414 §2)"],
      // The URL parser drops white space at the ends; the issuer was used with it (tokens' iss).
      [{ PLANTGATE_ISSUER: "https://auth.example.com " }, "PLANTGATE_ISSUER must not begin or end with white space"],
      [{ PLANTGATE_ISSUER: "https://auth.example.com\n" }, "PLANTGATE_ISSUER must not begin or end with white space"],
      // Web Crypto's PBKDF2 refuses 2^31 and more: every password hash then failed. Past
      // 10,000,000 (the most a stored hash is checked at) no account made then could sign in.
      [{ PLANTGATE_PASSWORD_HASH_ITERATIONS: "2147483648" }, 'PLANTGATE_PASSWORD_HASH_ITERATIONS must be at most 10000000, got "2147483648"'],
      [{ PLANTGATE_PASSWORD_HASH_ITERATIONS: "10000001" }, 'PLANTGATE_PASSWORD_HASH_ITERATIONS must be at most 10000000, got "10000001"'],
    ] as const) {
      expect(() => optionsFromEnv(env), JSON.stringify(env)).toThrow(new ConfigError(message));
    }
    expect(optionsFromEnv({ PLANTGATE_PASSWORD_HASH_ITERATIONS: "10000000" })).toEqual({ passwordHashIterations: 10_000_000 });
    expect(() => createPlantgate({ ...quiet, issuer: " https://auth.example.com" })).toThrow(new TypeError("issuer must not begin or end with white space"));
    expect(() => createPlantgate({ ...quiet, passwordHashIterations: 2 ** 31 })).toThrow(new TypeError("passwordHashIterations must be at most 10000000"));
    expect(() => createPlantgate({ ...quiet, passwordHashIterations: 10_000_001 })).toThrow(new TypeError("passwordHashIterations must be at most 10000000"));
  });

  it("a password hashed at the most the options take (10,000,000 iterations) verifies", async () => {
    // Until 2026-12-01 the options took up to 2^31 - 1, and a hash past 10,000,000 (the most a
    // stored hash is checked at) never verified: no account made then could sign in.
    expect(MAX_PASSWORD_HASH_ITERATIONS).toBe(10_000_000);
    const phc = await hashPassword("wonderland-42", defaultRandomBytes, { iterations: MAX_PASSWORD_HASH_ITERATIONS });
    expect(phc).toMatch(/^\$pbkdf2-sha256\$i=10000000,l=32\$/);
    expect(await verifyPassword("wonderland-42", phc)).toBe(true);
  }, 120_000);
});
