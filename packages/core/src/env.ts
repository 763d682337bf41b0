import type { Admin } from "./admin/index.js";
import { AdminConflictError, AdminError, type AdminField } from "./admin/errors.js";
import { checkAccountInput } from "./admin/index.js";
import { checkClientId, checkClientSecret } from "./admin/clients.js";
import type { AccountStore, ClientStore } from "./storage/types.js";
import { compileTrustedProxies, isTrustedProxyHops, MAX_TRUSTED_PROXY_HOPS } from "./security/client-ip.js";
import { checkIssuer, checkScopePrefix, checkSigningKeyMaxAge, DEFAULT_MAX_SCOPE_LENGTH, MAX_AUDIT_RETENTION_DAYS, MAX_PASSWORD_HASH_ITERATIONS, type PlantgateOptions } from "./options.js";
import type { ConsoleOptions } from "./option-types.js";
import { parseKeyEncryptionKeys } from "./crypto/key-encryption.js";
import { MIN_ACTIVATION_DELAY_SECONDS } from "./tokens/keys.js";
import { MAX_TTL_SECONDS } from "./admin/clients.js";
import { MAX_CONCURRENT_PASSWORD_CHECKS_LIMIT } from "./security/credentials.js";
import { MAX_PENDING_EVENT_DELIVERIES_LIMIT } from "./events/emitter.js";

/** Environment variables, as `process.env` or a Worker's `env` hands them over. */
export type EnvVars = Record<string, string | undefined>;

/** Thrown for a malformed environment variable; the message names the variable, never its value if secret. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** `1`/`true` on, `0`/`false`/unset off; anything else is a mistake worth failing on. */
function flag(env: EnvVars, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "" || raw === "0" || raw === "false") return false;
  if (raw === "1" || raw === "true") return true;
  throw new ConfigError(`${name} must be 1 or true, or 0 or false, got "${raw}"`);
}

function int(env: EnvVars, name: string, max?: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  tooLarge(name, raw, max);
  if (!/^\d{1,12}$/.test(raw) || Number(raw) < 1) throw new ConfigError(`${name} must be a positive integer, got "${raw}"`);
  if (max !== undefined && Number(raw) > max) throw new ConfigError(`${name} must be at most ${max}, got "${raw}"`);
  return Number(raw);
}

/** Runs an option's own check on a variable's value: its TypeError becomes a ConfigError naming the variable. */
function asVariable(variable: string, option: string, check: () => void): void {
  try {
    check();
  } catch (e) {
    if (e instanceof TypeError) throw new ConfigError(e.message.replace(new RegExp(`^${option} `), `${variable} `));
    throw e;
  }
}

/**
 * Digits past the 12 the variables take are refused as too large, not as no integer: until
 * 2026-12-01 a wrangler number such as 1e12 (it arrives as 13 digits) was told "must be a positive
 * integer".
 */
function tooLarge(name: string, raw: string, max: number | undefined): void {
  if (/^\d+$/.test(raw) && raw.replace(/^0+/, "").length > 12) {
    throw new ConfigError(max !== undefined ? `${name} must be at most ${max}, got "${raw}"` : `${name} is too large (more than 12 digits), got "${raw}"`);
  }
}

/** Like {@link int} but 0 is allowed. */
function nonNegativeInt(env: EnvVars, name: string, max?: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  tooLarge(name, raw, max);
  if (!/^\d{1,12}$/.test(raw)) throw new ConfigError(`${name} must be a non-negative integer, got "${raw}"`);
  if (max !== undefined && Number(raw) > max) throw new ConfigError(`${name} must be at most ${max}, got "${raw}"`);
  return Number(raw);
}

/**
 * The plantgate options that come from the environment, shared by the example servers and the CLI
 * so both see the same store and settings:
 * `PLANTGATE_ISSUER`, `PLANTGATE_SCOPE_PREFIX`, `PLANTGATE_SIGNING_KEY` (private JWK as JSON),
 * `PLANTGATE_PASSWORD_HASH_ITERATIONS`, `PLANTGATE_ACCESS_TOKEN_TTL`,
 * `PLANTGATE_TRUSTED_PROXIES` (comma-separated addresses, CIDR ranges and `unix`, or a hop count 1-16),
 * `PLANTGATE_BRUTE_FORCE_MAX_FAILURES`, `PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS`,
 * `PLANTGATE_SIGNING_KEY_MAX_AGE` and `PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY` (seconds),
 * `PLANTGATE_KEY_ENCRYPTION_KEY` (comma-separated base64url 256-bit keys; the first encrypts),
 * `PLANTGATE_REFRESH_GRACE_SECONDS` (0-300, 0 = strict one-time use), `PLANTGATE_REFRESH_GRACE_MAX_USES`,
 * `PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS` (1-1000, password checks running at once per instance),
 * `PLANTGATE_MAX_PENDING_EVENT_DELIVERIES` (1-1000000, deliveries of security events to one receiver unfinished at once),
 * `PLANTGATE_AUDIT_RETENTION_DAYS` (days the audit store keeps events); the management console with
 * `PLANTGATE_CONSOLE=1` (implied by `PLANTGATE_BOOTSTRAP_ADMIN=1`), `PLANTGATE_CONSOLE_SESSION_TTL` and
 * `PLANTGATE_CONSOLE_IDLE_TIMEOUT` (seconds, 0 = off). The last two are in the result only with the
 * console on by the environment; for a console turned on in code, merge
 * {@link consoleSettingsFromEnv} into its options.
 *
 * Each variable is held to its option's rules here, so a bad value is refused before a server opens
 * its store, naming the variable. `given` is what the code sets beside the environment that those
 * rules depend on: its `maxScopeLength` (default 128) bounds `PLANTGATE_SCOPE_PREFIX`'s scopes, and
 * its `signingKeyActivationDelaySeconds`, when the environment sets none, bounds
 * `PLANTGATE_SIGNING_KEY_MAX_AGE` from below (until 2026-12-01 the default delay did, and such a
 * variable beside a longer delay in code was refused only by `createPlantgate`, naming the option).
 *
 * @example
 * const app = createPlantgate({ ...optionsFromEnv(process.env), storage });
 */
export function optionsFromEnv(env: EnvVars, given: Pick<PlantgateOptions, "maxScopeLength" | "signingKeyActivationDelaySeconds"> = {}): PlantgateOptions {
  const out: PlantgateOptions = {};
  if (env.PLANTGATE_ISSUER) {
    try {
      new URL(env.PLANTGATE_ISSUER);
    } catch {
      throw new ConfigError(`PLANTGATE_ISSUER must be an absolute URL, got "${env.PLANTGATE_ISSUER}"`);
    }
    // The option's own rules, here so a server refuses before it opens its store and the CLI says
    // exit 2, naming the variable (until 2026-12-01 createPlantgate refused later, naming the option).
    asVariable("PLANTGATE_ISSUER", "issuer", () => checkIssuer(env.PLANTGATE_ISSUER));
    out.issuer = env.PLANTGATE_ISSUER;
  }
  if (env.PLANTGATE_SCOPE_PREFIX) {
    // Its length too, against the maxScopeLength the code gives (one the options refuse is theirs
    // to name; the default then): until 2026-12-01 only the characters were checked here, and the
    // servers refused a prefix too long for its scopes after opening the store, naming the option.
    const asked = given.maxScopeLength;
    const maxScopeLength = asked !== undefined && Number.isSafeInteger(asked) && asked >= 1 ? asked : DEFAULT_MAX_SCOPE_LENGTH;
    asVariable("PLANTGATE_SCOPE_PREFIX", "scopePrefix", () => checkScopePrefix(env.PLANTGATE_SCOPE_PREFIX!, maxScopeLength));
    out.scopePrefix = env.PLANTGATE_SCOPE_PREFIX;
  }
  if (env.PLANTGATE_SIGNING_KEY) {
    try {
      const jwk = JSON.parse(env.PLANTGATE_SIGNING_KEY) as unknown;
      if (typeof jwk !== "object" || jwk === null || !("d" in jwk)) throw new Error();
    } catch {
      throw new ConfigError("PLANTGATE_SIGNING_KEY must be a private JWK in JSON (an object with a 'd' member)");
    }
    out.signingKey = env.PLANTGATE_SIGNING_KEY;
  }
  const iterations = int(env, "PLANTGATE_PASSWORD_HASH_ITERATIONS", MAX_PASSWORD_HASH_ITERATIONS);
  if (iterations !== undefined) out.passwordHashIterations = iterations;
  // At most ten years, as a client's own lifetime (a longer one was taken: tokens that never
  // expired, and signing keys kept as long, before 2026-11-29).
  const ttl = int(env, "PLANTGATE_ACCESS_TOKEN_TTL", MAX_TTL_SECONDS);
  if (ttl !== undefined) out.accessTokenTtl = ttl;
  const proxiesText = env.PLANTGATE_TRUSTED_PROXIES?.trim();
  // One number is a hop count (no address or range is a bare number, so the two cannot be confused).
  if (proxiesText !== undefined && /^\d+$/.test(proxiesText)) {
    const hops = Number(proxiesText);
    if (!isTrustedProxyHops(hops) || String(hops) !== proxiesText) {
      throw new ConfigError(`PLANTGATE_TRUSTED_PROXIES must be a hop count from 1 to ${MAX_TRUSTED_PROXY_HOPS} or comma-separated addresses / CIDR ranges, got "${proxiesText}"`);
    }
    out.trustedProxies = hops;
  }
  const proxies = out.trustedProxies === undefined ? proxiesText?.split(",").map((p) => p.trim()).filter(Boolean) : undefined;
  if (proxies && proxies.length > 0) {
    try {
      compileTrustedProxies(proxies);
    } catch (e) {
      throw new ConfigError(`PLANTGATE_TRUSTED_PROXIES: ${(e as Error).message.replace(/^trustedProxies: /, "")}`);
    }
    out.trustedProxies = proxies;
  }
  const maxFailures = int(env, "PLANTGATE_BRUTE_FORCE_MAX_FAILURES");
  const windowSeconds = int(env, "PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS");
  if (maxFailures !== undefined || windowSeconds !== undefined) {
    out.bruteForce = { ...(maxFailures !== undefined ? { maxFailures } : {}), ...(windowSeconds !== undefined ? { windowSeconds } : {}) };
  }
  const keyMaxAge = int(env, "PLANTGATE_SIGNING_KEY_MAX_AGE");
  if (keyMaxAge !== undefined) out.signingKeyMaxAgeSeconds = keyMaxAge;
  // At most 10 years, the option's bound (until 2026-12-02 neither had one).
  const activationDelay = int(env, "PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY", MAX_TTL_SECONDS);
  if (activationDelay !== undefined) {
    if (activationDelay < MIN_ACTIVATION_DELAY_SECONDS) {
      throw new ConfigError(`PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY must be at least ${MIN_ACTIVATION_DELAY_SECONDS} (the JWKS cache lifetime plus the key reload interval), got "${activationDelay}"`);
    }
    out.signingKeyActivationDelaySeconds = activationDelay;
  }
  // A max age the delay cannot keep (a successor is published the delay before it signs), refused
  // naming both variables; until 2026-12-01 it was taken and not kept. The delay is the
  // environment's, else the one the code gives (a server's overrides, a Worker's options).
  const codeDelay = Number.isSafeInteger(given.signingKeyActivationDelaySeconds) ? given.signingKeyActivationDelaySeconds : undefined;
  const delayInEffect = activationDelay ?? codeDelay ?? MIN_ACTIVATION_DELAY_SECONDS;
  if (keyMaxAge !== undefined) {
    asVariable("PLANTGATE_SIGNING_KEY_MAX_AGE", "signingKeyMaxAgeSeconds", () =>
      checkSigningKeyMaxAge(keyMaxAge, delayInEffect, { maxAge: "PLANTGATE_SIGNING_KEY_MAX_AGE", delay: activationDelay === undefined && codeDelay !== undefined ? "signingKeyActivationDelaySeconds" : "PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY" }),
    );
  }
  const keks = env.PLANTGATE_KEY_ENCRYPTION_KEY;
  if (keks !== undefined && keks.trim() !== "") {
    try {
      parseKeyEncryptionKeys(keks);
    } catch (e) {
      // The message names the position, never the value: these are secrets.
      throw new ConfigError(`PLANTGATE_KEY_ENCRYPTION_KEY: ${(e as Error).message.replace(/^keyEncryptionKeys: /, "")}; give one or more comma-separated base64url 256-bit keys`);
    }
    out.keyEncryptionKeys = keks.split(",").map((k) => k.trim());
  }
  const grace = nonNegativeInt(env, "PLANTGATE_REFRESH_GRACE_SECONDS");
  if (grace !== undefined) {
    if (grace > 300) throw new ConfigError(`PLANTGATE_REFRESH_GRACE_SECONDS must be from 0 to 300, got "${grace}"`);
    out.refreshGraceSeconds = grace;
  }
  const graceUses = int(env, "PLANTGATE_REFRESH_GRACE_MAX_USES");
  if (graceUses !== undefined) {
    if (graceUses > 1000) throw new ConfigError(`PLANTGATE_REFRESH_GRACE_MAX_USES must be from 1 to 1000, got "${graceUses}"`);
    out.refreshGraceMaxUses = graceUses;
  }
  const checks = int(env, "PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS");
  if (checks !== undefined) {
    if (checks > MAX_CONCURRENT_PASSWORD_CHECKS_LIMIT) throw new ConfigError(`PLANTGATE_MAX_CONCURRENT_PASSWORD_CHECKS must be from 1 to ${MAX_CONCURRENT_PASSWORD_CHECKS_LIMIT}, got "${checks}"`);
    out.maxConcurrentPasswordChecks = checks;
  }
  const backlog = int(env, "PLANTGATE_MAX_PENDING_EVENT_DELIVERIES", MAX_PENDING_EVENT_DELIVERIES_LIMIT);
  if (backlog !== undefined) out.maxPendingEventDeliveries = backlog;
  const auditDays = int(env, "PLANTGATE_AUDIT_RETENTION_DAYS", MAX_AUDIT_RETENTION_DAYS);
  if (auditDays !== undefined) out.auditRetentionDays = auditDays;
  const consoleOn = flag(env, "PLANTGATE_CONSOLE") || flag(env, "PLANTGATE_BOOTSTRAP_ADMIN");
  // Read (and checked) whether the console is on or not.
  const settings = consoleSettingsFromEnv(env);
  if (consoleOn) out.console = { enabled: true, ...settings };
  return out;
}

/**
 * The console's settings from the environment, `PLANTGATE_CONSOLE_SESSION_TTL`
 * (`sessionTtlSeconds`) and `PLANTGATE_CONSOLE_IDLE_TIMEOUT` (`idleTimeoutSeconds`), each present
 * only when set; a bad value is a `ConfigError` naming the variable. They do not turn the console
 * on: {@link optionsFromEnv} puts them in its `console` only with `PLANTGATE_CONSOLE=1` (or
 * `PLANTGATE_BOOTSTRAP_ADMIN=1`), so a console turned on in code takes them from here. The example
 * servers and the Worker do (until 2026-11-30 both were ignored when the code turned the console on).
 *
 * @example
 * const app = createPlantgate({ storage, console: { enabled: true, page: consolePage(), ...consoleSettingsFromEnv(process.env) } });
 */
export function consoleSettingsFromEnv(env: EnvVars): Pick<ConsoleOptions, "sessionTtlSeconds" | "idleTimeoutSeconds"> {
  // The option's own bounds, refused here under the variable's name (a TypeError naming
  // console.sessionTtlSeconds until 2026-11-30).
  const sessionTtl = int(env, "PLANTGATE_CONSOLE_SESSION_TTL", MAX_TTL_SECONDS);
  const idleTimeout = nonNegativeInt(env, "PLANTGATE_CONSOLE_IDLE_TIMEOUT", MAX_TTL_SECONDS);
  return {
    ...(sessionTtl !== undefined ? { sessionTtlSeconds: sessionTtl } : {}),
    ...(idleTimeout !== undefined ? { idleTimeoutSeconds: idleTimeout } : {}),
  };
}

/**
 * `PLANTGATE_AUDIT`: whether the store keeps the audit trail (its `audit` store): `1` or `true`
 * (and unset: the default), `0` or `false`; anything else is a `ConfigError`. The one reader of the
 * variable: the example servers and the CLI (through `@plantgate/storage-sql/env`'s
 * `auditFromEnv`) and the Worker, so they never disagree.
 *
 * @example
 * const storage = createD1Storage(env.DB, { audit: auditFromEnv(vars) });
 */
export function auditFromEnv(env: EnvVars): boolean {
  const raw = env.PLANTGATE_AUDIT;
  if (raw === undefined || raw === "" || raw === "1" || raw === "true") return true;
  if (raw === "0" || raw === "false") return false;
  throw new ConfigError("PLANTGATE_AUDIT must be 1 or true (keep security events), or 0 or false");
}

/** Default of `PLANTGATE_PRUNE_INTERVAL_SECONDS`: prune once an hour. */
export const DEFAULT_PRUNE_INTERVAL_SECONDS = 3600;

/**
 * `PLANTGATE_PRUNE_INTERVAL_SECONDS`: how often a long-running server runs `admin.prune()`, in
 * seconds; default 3600, `0` turns it off.
 *
 * @example
 * const seconds = pruneIntervalFromEnv(process.env); // 3600 unless set
 */
export function pruneIntervalFromEnv(env: EnvVars): number {
  const raw = env.PLANTGATE_PRUNE_INTERVAL_SECONDS;
  if (raw === undefined || raw === "") return DEFAULT_PRUNE_INTERVAL_SECONDS;
  // setTimeout holds at most 2^31-1 ms (about 24.8 days); a longer interval would fire at once.
  if (!/^\d{1,10}$/.test(raw) || Number(raw) > 2_147_483) {
    throw new ConfigError(`PLANTGATE_PRUNE_INTERVAL_SECONDS must be 0 (off) or a number of seconds up to 2147483, got "${raw}"`);
  }
  return Number(raw);
}

/** What start-up provisioning the environment asks for. */
export interface BootstrapPlan {
  /** `PLANTGATE_BOOTSTRAP_CLIENT_ID` + `PLANTGATE_BOOTSTRAP_CLIENT_SECRET`, or null. */
  client: { clientId: string; clientSecret: string } | null;
  /** `PLANTGATE_BOOTSTRAP_USERNAME` + `PLANTGATE_BOOTSTRAP_PASSWORD`, or null. */
  account: { username: string; password: string } | null;
  /**
   * `PLANTGATE_BOOTSTRAP_ADMIN=1`: the bootstrap account (or, without one, the demo user) is
   * created with the console's admin role (`console.adminRole`, default `admin`). Present only when set.
   */
  admin?: true;
}

/** Credentials of a demo client and user, shown once. */
export interface DemoCredentials {
  clientId: string;
  clientSecret: string;
  username: string;
  password: string;
}

function pair(env: EnvVars, a: string, b: string): [string, string] | null {
  if (Boolean(env[a]) !== Boolean(env[b])) throw new ConfigError(`${a} and ${b} must be set together`);
  return env[a] ? [env[a]!, env[b]!] : null;
}

/**
 * Reads the bootstrap variables; a half-set pair is a `ConfigError`. Separate from
 * {@link applyBootstrap} so a server can fail before it listens.
 *
 * @example
 * const plan = bootstrapFromEnv(process.env);
 */
export function bootstrapFromEnv(env: EnvVars): BootstrapPlan {
  const client = pair(env, "PLANTGATE_BOOTSTRAP_CLIENT_ID", "PLANTGATE_BOOTSTRAP_CLIENT_SECRET");
  const account = pair(env, "PLANTGATE_BOOTSTRAP_USERNAME", "PLANTGATE_BOOTSTRAP_PASSWORD");
  return {
    client: client && { clientId: client[0], clientSecret: client[1] },
    account: account && { username: account[0], password: account[1] },
    ...(flag(env, "PLANTGATE_BOOTSTRAP_ADMIN") ? { admin: true as const } : {}),
  };
}

/** The variable each field of the admin checks (`AdminError.field`) comes from, in a bootstrap. */
const BOOTSTRAP_VARIABLES: Partial<Record<AdminField, string>> = {
  clientId: "PLANTGATE_BOOTSTRAP_CLIENT_ID",
  clientSecret: "PLANTGATE_BOOTSTRAP_CLIENT_SECRET",
  username: "PLANTGATE_BOOTSTRAP_USERNAME",
  password: "PLANTGATE_BOOTSTRAP_PASSWORD",
};

/**
 * Runs an admin check; its refusal comes back as a ConfigError naming the variable of its `field`
 * instead of the field (`clientSecret must be 16-1024 characters` -> `PLANTGATE_BOOTSTRAP_CLIENT_SECRET
 * must be 16-1024 characters`; a message that does not begin with the field's name gets the
 * variable in front). The admin messages name the rule, never the value. Until 2026-11-30 the
 * field was read from the message's first word.
 */
function refusal(check: () => void, fallback: string): ConfigError | null {
  try {
    check();
    return null;
  } catch (error) {
    if (!(error instanceof AdminError)) throw error;
    const variable = error.field === undefined ? undefined : BOOTSTRAP_VARIABLES[error.field];
    return new ConfigError(variable === undefined ? `${fallback}: ${error.message}` : error.messageNaming(variable), { cause: error });
  }
}

/**
 * Checks the bootstrap values against the rules {@link applyBootstrap} would apply to them, so a
 * server can refuse them before it listens (a `ConfigError` naming the variable, never a secret's
 * value) instead of failing once it serves, with a message naming an option the operator never set.
 *
 * Only what would be refused is: {@link applyBootstrap} leaves an existing client as it is (its
 * secret, even one shorter than 16 characters now, is not used), and an existing account too unless
 * `PLANTGATE_BOOTSTRAP_ADMIN=1` (whose account is created with its role, and its password checked,
 * whether or not it exists; its username only when no account by that name is stored, as the rules
 * are a new name's). So a client id or secret that breaks the rules is refused only when no
 * client by that id is stored, a username or password likewise; a start on a store where they exist
 * goes on as before, and each value left unused that way comes back as a warning to log (the
 * variable and the rule, no value).
 *
 * `adminRole` is the console's (`console.adminRole`; default `admin`): with
 * `PLANTGATE_BOOTSTRAP_ADMIN=1`, a stored bootstrap account without it is warned about.
 *
 * @example
 * const plan = bootstrapFromEnv(process.env);
 * for (const warning of await checkBootstrap(plan, storage, { adminRole: options.console?.adminRole })) logger.warn(warning);
 */
export async function checkBootstrap(
  plan: BootstrapPlan,
  storage: { clients: Pick<ClientStore, "get">; accounts: Pick<AccountStore, "findByUsername"> },
  options: { adminRole?: string | undefined } = {},
): Promise<string[]> {
  const adminRole = options.adminRole ?? "admin";
  const warnings: string[] = [];
  if (plan.client) {
    const { clientId, clientSecret } = plan.client;
    // The name is the id, and an id that passes its rule passes the name's (printable ASCII).
    const refused = refusal(() => {
      checkClientId(clientId);
      checkClientSecret(clientSecret);
    }, "PLANTGATE_BOOTSTRAP_CLIENT_ID/_SECRET");
    if (refused) {
      if (!(await storage.clients.get(clientId))) throw refused;
      warnings.push(`${refused.message}; ignored, as the bootstrap client exists and is left as it is`);
    }
  }
  if (plan.account) {
    const { username, password } = plan.account;
    const refused = refusal(() => checkAccountInput({ username, password }), "PLANTGATE_BOOTSTRAP_USERNAME/_PASSWORD");
    const stored = refused || plan.admin ? await storage.accounts.findByUsername(username) : null;
    if (refused) {
      if (!stored) throw refused;
      if (plan.admin) {
        // applyBootstrap tries to create the account, so its password is held to the rules, stored
        // or not (as since 2026-11-30). Its username is not: the rules are a new name's, and a name
        // stored before one of them (NFC and control characters since 2026-12-02) is kept; when
        // they came in, earlier that day, such an account stopped every start with PLANTGATE_BOOTSTRAP_ADMIN=1.
        const refusedPassword = refusal(() => checkAccountInput({ username, password }, { username: false }), "PLANTGATE_BOOTSTRAP_PASSWORD");
        if (refusedPassword) throw refusedPassword;
      }
      warnings.push(`${refused.message}; ignored, as the bootstrap account exists and is left as it is`);
    }
    if (plan.admin) {
      // The role is given to an account the bootstrap creates; one stored without it (a first start
      // without PLANTGATE_BOOTSTRAP_ADMIN, as the Worker example's `dev` before `dev:console`) keeps
      // its roles. Until 2026-12-01 nothing said so, and the console then had no administrator.
      if (stored && !stored.roles.includes(adminRole)) {
        // Said as "the admin role" for the default, as before 2026-12-02 (when it was the only role looked for).
        const role = adminRole === "admin" ? "the admin role" : `the console's admin role ${JSON.stringify(adminRole)}`;
        const flag = /^[\w.:@/-]+$/.test(adminRole) ? adminRole : `'${adminRole.replace(/'/g, "'\\''")}'`;
        warnings.push(
          `PLANTGATE_BOOTSTRAP_ADMIN=1: the account PLANTGATE_BOOTSTRAP_USERNAME names exists without ${role} and keeps its roles (the role is given only to an account the bootstrap creates); make an administrator with \`plantgate user create --roles ${flag}\`, or bootstrap another username`,
        );
      }
    }
  }
  return warnings;
}

/**
 * Idempotent start-up provisioning: ensures the planned client (all grants and scopes) and
 * account exist. With `demo` and nothing planned, an empty store gets `demo-client` and user `demo`
 * with fresh random credentials, returned once (only hashes are stored). With `plan.admin` the
 * account (or the demo user) is created with the console's admin role, `admin.consoleAdminRole`
 * (`console.adminRole`; until 2026-12-02 the literal `admin`, so beside another `adminRole` the
 * bootstrapped administrator could not sign in).
 * `beforeDemo` is awaited once a demo is to be made, before anything is stored: a throw there
 * (the credentials could not be shown, say) stops it with nothing made. Another instance making the
 * demo on the same store at the same time is no error (`null`: that instance has the credentials);
 * a user `demo` already stored is a `ConfigError`, with the demo client taken out again.
 *
 * @example
 * const demo = await applyBootstrap(app.admin, bootstrapFromEnv(process.env), { demo: true });
 */
export async function applyBootstrap(
  admin: Admin,
  plan: BootstrapPlan,
  options: { demo?: boolean; beforeDemo?: () => void | Promise<void> } = {},
): Promise<DemoCredentials | null> {
  if (plan.client) await admin.ensureClient(plan.client.clientId, plan.client.clientSecret);
  if (plan.account && plan.admin) {
    // The role is given at creation; an account that already exists keeps its roles (see the README).
    const { username, password } = plan.account;
    try {
      await admin.createAccount({ username, password, roles: [admin.consoleAdminRole] });
    } catch (error) {
      // Taken: the account exists (a restart, another instance's start). Anything else is thrown.
      // Until 2026-11-29 every account was read to tell, on every start after the first.
      if (error instanceof AdminConflictError) {
        // Exists.
      } else if (error instanceof AdminError && error.field === "username") {
        // A name the rules of a new one refuse may be stored from before a rule (NFC and control
        // characters since 2026-12-02), and is kept (see checkBootstrap); the password's rules still
        // apply. ensureAccount reads it, and creating it anew meets the same refusal.
        checkAccountInput({ username, password }, { username: false });
        await admin.ensureAccount(username, password);
      } else throw error;
    }
  } else if (plan.account) await admin.ensureAccount(plan.account.username, plan.account.password);
  // "Any client yet?" is one page of one client (the store's listPage; list() whole without it).
  if (!options.demo || plan.client || plan.account || (await admin.listClientsPage({ limit: 1 })).clients.length > 0) return null;
  // Before anything is stored: a server that could not show the credentials refuses here, with
  // nothing made (else the demo client would exist with a secret nobody has, and the next start,
  // finding a client, would make no other).
  await options.beforeDemo?.();
  let made: { client: { clientId: string }; clientSecret: string };
  try {
    made = await admin.createClient({ clientId: "demo-client", name: "Demo client" });
  } catch (error) {
    // Another instance starting on the same store made it since the check above (two processes on
    // one SQLite file, replicas on one database): that start shows the credentials. Until
    // 2026-11-30 this start failed with `client "demo-client" already exists`.
    if (error instanceof AdminConflictError) return null;
    throw error;
  }
  const password = Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, "0")).join("");
  try {
    await admin.createAccount({ username: "demo", password, displayName: "Demo user", ...(plan.admin ? { roles: [admin.consoleAdminRole] } : {}) });
  } catch (error) {
    // The client goes again, so its secret, never shown, is not left behind and the next start
    // makes the demo anew (until 2026-11-30 it stayed, and no start made a demo again). Should the
    // delete fail too, the account's failure is the one reported.
    await admin.deleteClient(made.client.clientId).catch(() => undefined);
    if (error instanceof AdminConflictError) {
      throw new ConfigError('cannot make the demo user: username "demo" is taken (the store has accounts but no client); set PLANTGATE_BOOTSTRAP_CLIENT_ID and PLANTGATE_BOOTSTRAP_CLIENT_SECRET', { cause: error });
    }
    throw error;
  }
  return { clientId: made.client.clientId, clientSecret: made.clientSecret, username: "demo", password };
}
