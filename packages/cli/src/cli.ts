import { statSync } from "node:fs";
import { isAbsolute } from "node:path";
import { parseArgs } from "node:util";
import {
  accountView,
  AdminConflictError,
  AdminError,
  type AdminField,
  checkAccountInput,
  ConfigError,
  createPlantgate,
  isEventCursor,
  isEventType,
  isoTimestamp,
  KeyEncryptionError,
  MAX_TTL_SECONDS,
  optionsFromEnv,
  PRUNE_STORES,
  redactConnectionUrl,
  SECURITY_EVENT_TYPES,
  signingKeyView,
  StorageError,
  type ClientSecretView,
  type ClientView,
  type GrantType,
  type Plantgate,
  type Storage,
} from "@plantgate/core";
import { driverErrorCode, LATEST_SCHEMA_VERSION, pendingMigrationsAt, type SqlStorage } from "@plantgate/storage-sql";
import { auditFromEnv, DEFAULT_SQLITE_PATH, openStorageFromEnv, queryTimeoutFromEnv, StorageConfigError, storageUrlFromEnv } from "@plantgate/storage-sql/env";
import { openRedisHotStoresFromEnv, RedisConfigError, type OpenedRedisHotStores } from "@plantgate/storage-redis/env";

/** Where the CLI reads and writes; injectable so tests run it in-process. */
export interface CliIo {
  env: Record<string, string | undefined>;
  /** Working directory against which a relative `PLANTGATE_DB` is resolved. */
  cwd: string;
  /**
   * The text on stdin, decoded as UTF-8 (a `UsageError` when it is not): `"line"` reads up to the
   * first newline and stops (a password), `"all"` to the end (an import).
   */
  readStdin(mode?: "line" | "all"): Promise<string>;
  /**
   * Given only when stdin is an interactive terminal (main.ts gives it when `process.stdin.isTTY`):
   * `user create` then asks for the password with it, twice (`Password: `, `Repeat password: `;
   * two different answers are refused, nothing created), instead of reading stdin's first line,
   * which a terminal would have had to be fed by `echo pw |` (the password in shell history).
   * Writes `prompt` where the user sees it, never on stdout (the terminal: stderr, or /dev/tty when stderr is not it), reads a line with echo off
   * and restores the terminal's mode before it settles, whatever the outcome. Resolves to the text
   * typed (UTF-8, at most the bytes readStdin takes for a line), or null when none was given
   * (Ctrl-D on an empty line, the end of input); rejects with {@link InterruptedError} on Ctrl-C
   * (exit 130) and with a {@link UsageError} for text too long or not UTF-8. The password is then
   * checked as one read from stdin. `user import` never uses it: its records come from stdin only.
   */
  readPassword?(prompt: string): Promise<string | null>;
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Commands that touch the hot stores (console sessions on disable; every store on prune). */
const HOT_COMMANDS = new Set(["user disable", "user enable", "prune"]);

/** The command an argument list names: "prune" and "events" take options right after the word, the others are two words. */
function commandOf(argv: readonly string[]): string {
  const [group, action] = argv;
  // Commands of one word: what follows is their options (`migrate --x` is migrate refusing --x, not
  // an unknown command "migrate", as it was until 2026-12-01).
  return group === "prune" || group === "events" || group === "migrate" ? group : `${group ?? ""} ${action ?? ""}`.trim();
}

/** The refusal of a command line that starts with an option (printed with the usage). */
const OPTIONS_FIRST = "options go after the command: plantgate <command> [options]";

/** A mistake in how the CLI was called or fed: exit code 2 and the message. */
export class UsageError extends Error {}

/** The user stopped the command at a prompt (Ctrl-C) before anything was done: exit code 130 (128 + SIGINT, as a shell reports it) and the message. */
export class InterruptedError extends Error {}

export const USAGE = `usage: plantgate <command> [options]

  client create --name NAME [--id ID] [--scopes "S1 S2"] [--grants "g1 g2"] [--secret-expires-in SECONDS]
  client create --name NAME --auth private_key_jwt (--jwks 'JWKS-JSON' | --jwks-uri URL) [--id ID] [--scopes ..] [--grants ..]
  client add-secret CLIENT_ID [--expires-in SECONDS]   (a new secret; the earlier ones keep working)
  client revoke-secret CLIENT_ID SECRET_ID             (that secret stops working at once)
  client rotate-secret CLIENT_ID                       (one new secret; every earlier one stops working at once)
  client list
  client delete CLIENT_ID
  user create --username U [--display-name D] [--email E] [--roles "r1 r2"]   (password prompted for, twice and not shown, on a terminal; else the first line of stdin)
  user import                        (JSON lines on stdin, at most 64 MiB: {username, password, displayName?, email?, roles?, enabled?}; any other field is refused)
  user list
  user disable USERNAME
  user enable USERNAME
  migrate                            (applies the schema: the only command that changes it or creates a new SQLite file)
  keys rotate [--now] [--server-defaults]   (published now, signs after the activation delay; --now: at once, for a leak, and deletes the next keys stored before it (cancelled), which would take over from it)
  keys revoke KID [--server-defaults]   (deletes a key that does not sign now, and the prunable keys older than it: after a leak, rotate --now, then a minute later revoke the old key)
  keys list                          (kid, alg, createdAt, activatesAt, status: next / active / retired / prunable (by PLANTGATE_ACCESS_TOKEN_TTL, default 7200 s: give it the servers' value), stored, atRest: encrypted / clear / external, kek: the id of the key encryption key a key is sealed under, kekStatus: current / older (keys reencrypt moves it) / missing; reads only: [] when the store has none)
  keys reencrypt                     (every private key under the first PLANTGATE_KEY_ENCRYPTION_KEY)
  prune [--batch-size N] [--max-batches N] [--server-defaults]   (deletes expired tokens, sessions, counters, jtis, prunable keys, old audit events; prints counts; --max-batches: at most N batches (at least 7), each signing key deleted one of them, the stores in turn, "complete":false when work may be left)
  events [--type T] [--client ID] [--account USERNAME_OR_ID] [--since TIME] [--until TIME] [--limit N] [--before CURSOR]
                                     (the newest N kept security events (default 20, at most 1000), one JSON object per line, filtered as the console's page; --since (inclusive) and --until (exclusive) take a UTC date, 2026-12-01, or a time with its zone, 2026-12-01T09:30:00Z; when there are more, stderr says the --before to add for the next page)

Options go after the command's words, never before them (exit 2); --help after any command, help
and -h print this text.

Uses the same store as the server: PLANTGATE_DATABASE_URL (postgres://, postgresql://, mysql://, mariadb://) or
PLANTGATE_DB (SQLite file, default ./data/plantgate.db, relative to the working directory; it must
exist, except for migrate), and PLANTGATE_REDIS_URL (the hot state). Every command but migrate refuses
a store whose schema is older than this code's (exit 2: run plantgate migrate first). Prints JSON on stdout (through pnpm,
run it as \`pnpm -s plantgate\`: without -s pnpm prints its own banner there first).

prune, keys rotate and keys revoke decide from settings the store does not keep: give them the servers'
PLANTGATE_ACCESS_TOKEN_TTL, PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS and PLANTGATE_AUDIT_RETENTION_DAYS
(prune), PLANTGATE_ACCESS_TOKEN_TTL and PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY (keys rotate; --now
needs only the first), PLANTGATE_ACCESS_TOKEN_TTL (keys revoke), or --server-defaults when the servers
leave them unset; otherwise they refuse (exit 2). keys list, which changes nothing, does not ask: its
statuses use PLANTGATE_ACCESS_TOKEN_TTL if given, else the default. The CLI never rotates keys
automatically (PLANTGATE_SIGNING_KEY_MAX_AGE is the servers').

Exit codes: 0 done, 1 failed, 2 bad input or configuration (a store URL that does not parse, credentials refused, no such database,
a schema older or newer than this code included; nothing done), 3 the store or Redis could not be reached or failed (at open or during the
command; try again), 130 stopped with Ctrl-C at the password prompt (nothing done).`;

const GRANTS: GrantType[] = ["client_credentials", "password", "refresh_token"];

function words(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value.split(/[\s,]+/).filter(Boolean);
}

function one(positionals: string[], what: string): string {
  if (positionals.length !== 1) throw new UsageError(`expected exactly one ${what}`);
  return positionals[0]!;
}

/** A command's long options, by name (parseArgs's option config, as this CLI uses it). */
type OptionSpecs = Record<string, { type: "string" } | { type: "boolean" }>;

/** What stands in for an argument with one leading dash while parseArgs reads the line (argv cannot hold U+0000). */
const STAND_IN = "\u0000";

/**
 * Strict parsing of long options (`--name`, `--name=value`) and positionals. The CLI has no short
 * options, so an argument with a single leading dash is a value, never an option: a client id or a
 * secret id drawn from the base64url alphabet, or a username, may start with one
 * (`client revoke-secret reporting -AHwiudrrVbL`). parseArgs would read it as short options; it is
 * handed over under a stand-in and given back, as a positional or as an option's value. A word
 * starting with `--` still needs `--` before it (the refusal says so where `words`, the ones the
 * command takes, are not all given), an option's value starting with `--` needs `=`.
 */
function parse<O extends OptionSpecs>(command: string, args: string[], options: O, words: readonly string[] = []) {
  const held: string[] = [];
  const stand = args.map((a) => (a.length > 1 && a[0] === "-" && a[1] !== "-" ? `${STAND_IN}${held.push(a) - 1}` : a));
  const back = (v: string) => (v.startsWith(STAND_IN) ? held[Number(v.slice(1))]! : v);
  let parsed;
  try {
    parsed = parseArgs({ args: stand, options, allowPositionals: true, strict: true, tokens: true });
  } catch (e) {
    if ((e as { code?: unknown }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") throw new UsageError(unknownOption(stand, options, command, words));
    // Node writes some on three lines (`... is ambiguous.\nDid you forget ...`), which printable()
    // showed as literal \u000a (until 2026-12-02): one line, as every other message.
    throw new UsageError((e as Error).message.replace(/\s*\n\s*/g, " "));
  }
  // parseArgs keeps the last of a repeated option silently (`--username alice --username bob`
  // created bob): a command line that says two things is refused instead.
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== "option") continue;
    if (seen.has(token.name)) throw new UsageError(`--${token.name} is given more than once`);
    seen.add(token.name);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  for (const name of Object.keys(values)) {
    const v = values[name];
    if (typeof v !== "string") continue;
    values[name] = back(v);
    // An empty value was dropped or read as "none" (`--id ""` issued a random id, `--grants ""` a
    // client with no grant); lists that may be empty on purpose are the exception.
    if (v.trim() === "" && !MAY_BE_EMPTY.has(name)) throw new UsageError(`--${name} must not be empty (leave the option out instead)`);
  }
  return { values: parsed.values, positionals: parsed.positionals.map(back) };
}

/** Options whose empty value means an empty list (no scopes, no roles). */
const MAY_BE_EMPTY = new Set(["scopes", "roles"]);

/**
 * The refusal of an unknown option. parseArgs's own text advises putting it after `--` as a
 * positional (`as in '-- "--bogus"`, its quote unclosed), which a command taking options only
 * refuses as a stray word, and one taking words as a word too many when they are all given
 * (`client delete x --bogus`): a dead end (until 2026-12-02 for the former, and for the latter
 * since). Only where a word the command takes (`words`, in order) is still missing may the
 * argument be that word, and the line then says it goes after `--` (`client delete -- --odd`).
 * The option's name is shown when it is a plain one (never its `=value`); any other is not.
 */
function unknownOption(args: string[], options: OptionSpecs, command: string, words: readonly string[]): string {
  const { tokens } = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true });
  const name = tokens.find((t) => t.kind === "option" && !Object.hasOwn(options, t.name));
  const shown = name?.kind === "option" && /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(name.name) ? ` --${name.name}` : " (its name not shown)";
  const given = tokens.filter((t) => t.kind === "positional").length;
  const word = words[given];
  return `unknown option${shown}; see plantgate ${command} --help${word === undefined ? "" : ` (a ${word} that starts with -- goes after --)`}`;
}

/** {@link parse}, for a command that takes options only: any positional is refused, and an unknown option is named with where to look. */
function parseOptions<O extends OptionSpecs>(command: string, args: string[], options: O) {
  const parsed = parse(command, args, options);
  // Not echoed: a stray word is often a password typed where stdin was meant (now in shell history).
  if (parsed.positionals.length > 0) throw new UsageError(`unexpected argument (${parsed.positionals.length === 1 ? "one word" : `${parsed.positionals.length} words`} not taken by any option; passwords and import records are read from stdin, never from the command line)`);
  return parsed.values;
}

/**
 * The servers' settings a command decides from, which live in the servers' environment (or code)
 * and not in the store: what `prune` may delete (signing keys by the longest access-token lifetime,
 * brute-force counters by the window, audit events by the retention), for `keys rotate`, which
 * keys it deletes and when the new key signs, and for `keys revoke`, which older keys go with it.
 * Until 2026-11-29 a cron job given only the store's URL used the defaults: with servers keeping audit events 365 days it deleted those older than 90,
 * with a longer brute-force window it reset live counters, with a longer token lifetime it deleted
 * a key the servers still verified with. Now each must be set as the servers have it, or the
 * operator says with `--server-defaults` that the servers leave the unset ones at their defaults.
 */
const SERVER_SETTINGS: Readonly<Record<string, readonly string[]>> = {
  prune: ["PLANTGATE_ACCESS_TOKEN_TTL", "PLANTGATE_BRUTE_FORCE_WINDOW_SECONDS", "PLANTGATE_AUDIT_RETENTION_DAYS"],
  "keys rotate": ["PLANTGATE_ACCESS_TOKEN_TTL", "PLANTGATE_SIGNING_KEY_ACTIVATION_DELAY"],
  // Signs at once: the activation delay plays no part (and a leak is no time to ask for it).
  "keys rotate --now": ["PLANTGATE_ACCESS_TOKEN_TTL"],
  // Deletes, with the key, the prunable keys activated before it: until 2026-12-02 it took the
  // default lifetime (7200 s), and with servers at 24 hours a revocation after a leak deleted an
  // older key they still published and verified with.
  "keys revoke": ["PLANTGATE_ACCESS_TOKEN_TTL"],
};

/**
 * Whether `prune` leaves the events kept while the audit trail was on (the storage's `auditPrune`):
 * with PLANTGATE_AUDIT=0, PLANTGATE_AUDIT_RETENTION_DAYS unset and no `--server-defaults`, nothing
 * says how long the operator keeps them, so the CLI deletes none (the servers' scheduled prune does,
 * by their retention). A cron line of the version before (which never pruned them and did not ask
 * for the retention) keeps running as it did: the review of 185bcb3 saw it refused with exit 2.
 */
function keptEventsLeft(argv: readonly string[], env: CliIo["env"]): boolean {
  return commandOf(argv) === "prune" && !auditFromEnv(env) && (env.PLANTGATE_AUDIT_RETENTION_DAYS ?? "") === "" && !argv.includes("--server-defaults");
}

/** The storage without `auditPrune` (see {@link keptEventsLeft}). */
function withoutAuditPrune(storage: Storage): Storage {
  const { auditPrune: _left, ...rest } = storage;
  return rest;
}

/** Refuses (exit 2, nothing touched) a command whose governing server settings are neither set nor declared defaults. */
function checkServerSettings(command: string, env: CliIo["env"], serverDefaults: boolean): void {
  // With PLANTGATE_SIGNING_KEY there is no stored key to rotate or revoke (refused below). With
  // PLANTGATE_AUDIT=0 the retention is not asked for (a cron line that ran before keeps running):
  // prune then deletes the events kept while the trail was on only when it is given (see
  // keptEventsLeft).
  const irrelevant = (name: string) =>
    (name === "PLANTGATE_AUDIT_RETENTION_DAYS" && !auditFromEnv(env)) || (command.startsWith("keys ") && (env.PLANTGATE_SIGNING_KEY ?? "") !== "");
  const missing = SERVER_SETTINGS[command]!.filter((name) => (env[name] ?? "") === "" && !irrelevant(name));
  if (missing.length === 0 || serverDefaults) return;
  const what = command === "prune" ? "what it deletes" : command === "keys rotate" ? "which old keys it deletes and when the new key signs" : "which old keys it deletes";
  throw new UsageError(
    `${command} decides ${what} from the servers' settings, which the store does not keep: set ${missing.join(", ")} as the servers have ${missing.length === 1 ? "it" : "them"}, or pass --server-defaults if the servers leave ${missing.length === 1 ? "it" : "them"} unset; nothing was changed`,
  );
}

/** What `run` returns when it printed its own output (JSON lines). */
const PRINTED = Symbol("printed");
/** The flags of `client create` for the fields its admin call checks. */
const CLIENT_CREATE_FLAGS: Partial<Record<AdminField, string>> = {
  name: "--name",
  clientId: "--id",
  scopes: "--scopes",
  grantTypes: "--grants",
  authMethod: "--auth",
  jwks: "--jwks",
  jwksUri: "--jwks-uri",
  secretExpiresIn: "--secret-expires-in",
};

/** The fields of a `user import` record (CreateAccountInput's); any other is refused. */
const IMPORT_FIELDS = ["username", "password", "displayName", "email", "roles", "enabled"];

/** The flags of `user create` (the password comes on stdin and keeps its field's name). */
const USER_CREATE_FLAGS: Partial<Record<AdminField, string>> = {
  username: "--username",
  displayName: "--display-name",
  email: "--email",
  roles: "--roles",
};

/**
 * Runs an admin call; a refusal of one field the user gave as a flag is worded with the flag
 * (`secretExpiresIn must be ...` -> `--secret-expires-in must be ...`; one that does not begin with
 * the field's name gets the flag in front: `--scopes: unknown scope; ...`), by `AdminError.field`,
 * as the CLI's own checks word theirs. Until 2026-11-30 such refusals named the API's field.
 */
async function withFlags<T>(work: Promise<T>, flags: Partial<Record<AdminField, string>>): Promise<T> {
  try {
    return await work;
  } catch (e) {
    const flag = e instanceof AdminError && e.field !== undefined ? flags[e.field] : undefined;
    if (flag === undefined) throw e;
    throw new UsageError((e as AdminError).messageNaming(flag));
  }
}

/**
 * An instant for `events --since/--until`, in epoch ms: a UTC date (`2026-12-01`, its midnight) or
 * a time with its zone (`2026-12-01T09:30:00Z`, `2026-12-01T10:30:00.250+01:00`). A time without a
 * zone is refused rather than read in the machine's own (the audit trail's times are UTC), as is a
 * day or hour that does not exist (`2026-02-30`); the value is not quoted back.
 */
function instant(flag: string, raw: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/.exec(raw);
  const refuse = () => new UsageError(`${flag} must be a UTC date (2026-12-01) or a time with its zone (2026-12-01T09:30:00Z)`);
  if (m === null) throw refuse();
  const [, y, mo, d, h = "00", mi = "00", s = "00", frac = "", zone = "Z"] = m;
  const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), frac === "" ? 0 : Math.round(Number(frac) * 1000));
  // Date.UTC rolls an out-of-range part over (February 30th is March 2nd): read it back to refuse that.
  const back = new Date(ms);
  if (back.getUTCFullYear() !== Number(y) || back.getUTCMonth() !== Number(mo) - 1 || back.getUTCDate() !== Number(d) || back.getUTCHours() !== Number(h) || back.getUTCMinutes() !== Number(mi) || back.getUTCSeconds() !== Number(s)) throw refuse();
  const offset = zone === "Z" ? 0 : (zone.startsWith("-") ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
  if (Math.abs(offset) > 14 * 60 || Number(zone.slice(4, 6) || "0") > 59) throw refuse();
  const at = ms - offset * 60_000;
  if (at < 0) throw refuse();
  return at;
}

/**
 * A positive whole number of seconds, or undefined when the option is absent. Digits past core's
 * bound (MAX_TTL_SECONDS), however many, are refused with its range, as the admin call words it,
 * before the store is opened: until 2026-12-02 eleven digits and more said `must be a positive
 * number of seconds`.
 */
function seconds(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new UsageError(`${name} must be a positive number of seconds`);
  if (Number(raw) > MAX_TTL_SECONDS) throw new UsageError(`${name} must be from 1 to ${MAX_TTL_SECONDS} seconds`);
  return Number(raw);
}

const iso = (ms: number | null) => (ms === null ? null : isoTimestamp(ms));

/** A secret's metadata as the CLI prints it (never the hash). */
function secretJson(s: ClientSecretView) {
  return { secret_id: s.id, created_at: iso(s.createdAt), expires_at: iso(s.expiresAt) };
}

/**
 * A private_key_jwt client's keys as printed: its `jwks_uri`, or its JWK Set parsed. A stored set
 * that is not JSON (written past the admin API's check, which stores only JSON) is `"jwks": null,
 * "jwks_unreadable": true`, and `unreadable` is told the client: until 2026-12-02 JSON.parse threw
 * in the middle of `client list` (exit 1, the array unclosed) with V8's message quoting the text.
 */
function keySource(c: ClientView, unreadable: (c: ClientView) => void = () => {}) {
  if (c.jwksUri !== null) return { jwks_uri: c.jwksUri };
  try {
    return { jwks: JSON.parse(c.jwks ?? "null") as unknown };
  } catch {
    unreadable(c);
    return { jwks: null, jwks_unreadable: true };
  }
}

/** A client as `client list` prints it: secret metadata only, never a secret or its hash. */
function clientJson(c: ClientView, unreadable?: (c: ClientView) => void) {
  return {
    client_id: c.clientId,
    name: c.name,
    grant_types: c.grantTypes,
    scopes: c.scopes,
    token_endpoint_auth_method: c.authMethod === "private_key_jwt" ? "private_key_jwt" : "client_secret",
    created_at: isoTimestamp(c.createdAt),
    secret_updated_at: isoTimestamp(c.secretUpdatedAt),
    ...(c.authMethod === "private_key_jwt" ? keySource(c, unreadable) : { secrets: c.secrets.map((x) => ({ ...secretJson(x), last_used_at: iso(x.lastUsedAt) })) }),
  };
}

/** How many clients or accounts `client list` and `user list` read from the store at a time. */
export const LIST_PAGE = 500;

/**
 * JSON.stringify's text with DEL and the C1 controls (U+007F-U+009F) written as `\u` escapes too
 * (it escapes only U+0000-U+001F): stored text (a username, a display name, an older client's name,
 * an event's fields) is printed on stdout, and a terminal reads U+009B as CSI, so until 2026-12-02
 * a name holding `\u009b2J` cleared the screen of whoever listed it. Outside strings JSON text is
 * ASCII, so every such character is inside one and the escape parses back to it.
 */
function jsonText(value: unknown, indent?: number): string {
  // String(): JSON.stringify(undefined) is undefined, which was printed as "undefined" before.
  return String(JSON.stringify(value, null, indent)).replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * Prints a JSON array a page at a time, byte for byte what `jsonText(all, 2)` and a newline print
 * for the whole array: `[]` when empty, else `[`, each element indented by two
 * spaces and separated by `,`, then `]`. (Split at "\n", which JSON text holds only between
 * tokens; a /^/m regex would also cut after U+2028 and U+2029, which JSON.stringify leaves raw
 * inside strings.)
 */
function jsonArrayWriter(io: CliIo) {
  let first = true;
  return {
    write(items: unknown[]) {
      if (items.length === 0) return;
      const text = items.map((item) => "  " + jsonText(item, 2).split("\n").join("\n  ")).join(",\n");
      io.stdout((first ? "[\n" : ",\n") + text);
      first = false;
    },
    end() {
      io.stdout(first ? "[]\n" : "\n]\n");
    },
  };
}

/**
 * A message with control characters shown as \u escapes: names and ids from the command line or an
 * import file are quoted in messages, and an escape sequence in one went raw to the terminal.
 */
function printable(message: string): string {
  return message.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * One stderr line for a warning or an error core logs: its message (without a leading
 * `plantgate: `) and its fields as JSON (an error's name, message and cause; a client id; a
 * jwks_uri without its query; a prune's failed stores and counts). Core puts no secret into
 * either (see its Logger); the servers log the same fields. Until 2026-11-30 an error's fields
 * were dropped.
 */
function coreLine(level: "warning: " | "", message: string, context: Record<string, unknown> | undefined): string {
  const fields = context !== undefined && Object.keys(context).length > 0 ? ` ${JSON.stringify(context)}` : "";
  return `plantgate: ${level}${printable(message.replace(/^plantgate: /, "") + fields)}\n`;
}

const NO_PASSWORD = "the password is read from stdin; none was given";

/**
 * A password typed twice at the terminal (see {@link CliIo.readPassword}). `check` judges the first
 * before it is asked again (a too-short one is refused at once). Nothing typed (Enter or Ctrl-D on
 * an empty line) and no repetition (Ctrl-D) are usage errors saying so; until 2026-12-01 both said
 * the stdin path's "the password is read from stdin; none was given".
 */
async function typedPassword(read: NonNullable<CliIo["readPassword"]>, check: (password: string) => void): Promise<string> {
  const password = await read("Password: ");
  if (password === null || password === "") throw new UsageError("no password was typed; nothing was created");
  check(password);
  const again = await read("Repeat password: ");
  if (again === null) throw new UsageError("the password was not repeated; nothing was created");
  if (again !== password) throw new UsageError("the passwords typed do not match; nothing was created");
  return password;
}

/** The first line without its end (`\n` or `\r\n`; a line cut at `\n` by readStdin keeps its `\r`). */
function firstLine(text: string): string {
  return (text.split(/\r?\n/)[0] ?? "").replace(/\r$/, "");
}

async function run(argv: string[], io: CliIo, open: () => Promise<{ app: Plantgate; storage: SqlStorage }>): Promise<unknown> {
  const [, action, ...rest] = argv;
  const command = commandOf(argv);
  switch (command) {
    case "migrate": {
      // It takes no options and no words.
      parseOptions(command, [action, ...rest].filter((a): a is string => a !== undefined), {});
      await open();
      io.stderr("migrations applied\n");
      return { migrated: true };
    }
    case "client create": {
      const values = parseOptions(command, rest, {
        name: { type: "string" },
        id: { type: "string" },
        scopes: { type: "string" },
        grants: { type: "string" },
        auth: { type: "string" },
        jwks: { type: "string" },
        "jwks-uri": { type: "string" },
        "secret-expires-in": { type: "string" },
      });
      if (!values.name) throw new UsageError("--name is required");
      const grants = words(values.grants);
      if (grants?.some((g) => !GRANTS.includes(g as GrantType))) throw new UsageError(`--grants must be among: ${GRANTS.join(" ")}`);
      if (grants?.length === 0) throw new UsageError(`--grants needs at least one of: ${GRANTS.join(" ")}`);
      const auth = values.auth ?? "client_secret";
      if (auth !== "client_secret" && auth !== "private_key_jwt") throw new UsageError("--auth must be client_secret or private_key_jwt");
      if (auth === "private_key_jwt" && (values.jwks === undefined) === (values["jwks-uri"] === undefined)) throw new UsageError("--auth private_key_jwt needs exactly one of --jwks and --jwks-uri");
      const expiresIn = seconds(values["secret-expires-in"], "--secret-expires-in");
      const { app } = await open();
      const { client, clientSecret } = await withFlags(app.admin.createClient({
        name: values.name,
        authMethod: auth,
        ...(values.id ? { clientId: values.id } : {}),
        ...(values.scopes !== undefined ? { scopes: words(values.scopes)! } : {}),
        ...(grants ? { grantTypes: grants as GrantType[] } : {}),
        ...(values.jwks !== undefined ? { jwks: values.jwks } : {}),
        ...(values["jwks-uri"] !== undefined ? { jwksUri: values["jwks-uri"] } : {}),
        ...(expiresIn !== undefined ? { secretExpiresIn: expiresIn } : {}),
      }), CLIENT_CREATE_FLAGS);
      if (clientSecret === null) {
        return { client_id: client.clientId, token_endpoint_auth_method: "private_key_jwt", name: client.name, grant_types: client.grantTypes, scopes: client.scopes, ...keySource(client) };
      }
      io.stderr("the secret is shown only now; store it safely\n");
      return { client_id: client.clientId, client_secret: clientSecret, name: client.name, grant_types: client.grantTypes, scopes: client.scopes, ...secretJson(client.secrets[0]!) };
    }
    case "client rotate-secret": {
      const clientId = one(parse(command, rest, {}, ["CLIENT_ID"]).positionals, "CLIENT_ID");
      const { app } = await open();
      const { clientSecret, secret } = await app.admin.rotateClientSecret(clientId);
      io.stderr("every earlier secret no longer works; the new one is shown only now\n");
      return { client_id: clientId, client_secret: clientSecret, ...secretJson(secret) };
    }
    case "client add-secret": {
      const { values, positionals } = parse(command, rest, { "expires-in": { type: "string" } }, ["CLIENT_ID"]);
      const clientId = one(positionals, "CLIENT_ID");
      const expiresIn = seconds(values["expires-in"], "--expires-in");
      const { app } = await open();
      const { clientSecret, secret } = await withFlags(app.admin.addClientSecret(clientId, expiresIn !== undefined ? { expiresIn } : {}), { expiresIn: "--expires-in" });
      io.stderr("the earlier secrets keep working; the new one is shown only now\n");
      return { client_id: clientId, client_secret: clientSecret, ...secretJson(secret) };
    }
    case "client revoke-secret": {
      const { positionals } = parse(command, rest, {}, ["CLIENT_ID", "SECRET_ID"]);
      if (positionals.length !== 2) throw new UsageError("expected CLIENT_ID and SECRET_ID");
      const [clientId, secretId] = positionals as [string, string];
      const { app } = await open();
      await app.admin.revokeClientSecret(clientId, secretId);
      return { client_id: clientId, secret_id: secretId, revoked: true };
    }
    case "client list": {
      parseOptions(command, rest, {});
      const { app, storage } = await open();
      const out = jsonArrayWriter(io);
      // A warning on stderr, the row printed and the list going on (the id as JSON, control characters escaped; never the stored text).
      const row = (c: ClientView) =>
        clientJson(c, (bad) => io.stderr(`plantgate: warning: ${printable(`client ${JSON.stringify(bad.clientId)}: its stored jwks is not valid JSON (printed as null, with "jwks_unreadable": true); delete the client and create it again with a valid --jwks`)}\n`));
      if (typeof storage.clients.listPage === "function") {
        // A page at a time from the store's index, each printed before the next is read: the
        // whole list was read into memory first (list()) until 2026-11-29.
        for (let after: string | null = null; ; ) {
          const page = await app.admin.listClientsPage({ after, limit: LIST_PAGE });
          out.write(page.clients.map(row));
          if ((after = page.next) === null) break;
        }
      } else {
        // A backend without listPage: one list() (listClientsPage would read it whole per page).
        out.write((await app.admin.listClients()).map(row));
      }
      out.end();
      return PRINTED;
    }
    case "client delete": {
      const clientId = one(parse(command, rest, {}, ["CLIENT_ID"]).positionals, "CLIENT_ID");
      const { app } = await open();
      await app.admin.deleteClient(clientId);
      return { client_id: clientId, deleted: true };
    }
    case "user create": {
      const values = parseOptions(command, rest, {
        username: { type: "string" },
        "display-name": { type: "string" },
        email: { type: "string" },
        roles: { type: "string" },
      });
      if (!values.username) throw new UsageError("--username is required");
      const fields = { username: values.username, displayName: values["display-name"] ?? null, email: values.email ?? null, roles: words(values.roles) ?? [] };
      let password: string;
      if (io.readPassword) {
        // Everything that can refuse the command is asked before the password is typed twice: the
        // flags, the store (its configuration, its schema, reaching it) and a taken username. Until
        // 2026-12-01 all of it came after both prompts, and a too-short password after the second.
        await withFlags(Promise.resolve().then(() => checkAccountInput({ ...fields, password: "" }, { password: false })), USER_CREATE_FLAGS);
        const { storage } = await open();
        if (await storage.accounts.findByUsername(fields.username)) throw new AdminConflictError(`username ${JSON.stringify(fields.username)} is taken`);
        password = await typedPassword(io.readPassword, (typed) => checkAccountInput({ ...fields, password: typed }));
      } else {
        password = firstLine(await io.readStdin("line"));
      }
      if (password === "") throw new UsageError(NO_PASSWORD);
      const { app } = await open();
      return withFlags(app.admin.createAccount({ ...fields, password }), USER_CREATE_FLAGS);
    }
    case "user import": {
      parseOptions(command, rest, {});
      const lines = (await io.readStdin("all")).split(/\r?\n/);
      const records: Parameters<Plantgate["admin"]["importAccounts"]>[0] = [];
      const lineOf: number[] = [];
      for (const [i, line] of lines.entries()) {
        if (line.trim() === "") continue;
        let value: unknown;
        try {
          value = JSON.parse(line);
        } catch {
          throw new UsageError(`line ${i + 1}: not valid JSON`);
        }
        if (typeof value !== "object" || value === null || Array.isArray(value)) throw new UsageError(`line ${i + 1}: expected a JSON object`);
        // A field the import does not take was dropped until 2026-11-30: `display_name` imported
        // no name, `disabled: true` an enabled account. The key is named only when it is a plain
        // name (a record may hold anything).
        const unknown = Object.keys(value).find((key) => !IMPORT_FIELDS.includes(key));
        if (unknown !== undefined) {
          const what = /^[A-Za-z0-9_-]{1,64}$/.test(unknown) ? `unknown field "${unknown}"` : "a field this import does not know";
          throw new UsageError(`line ${i + 1}: ${what} (known: ${IMPORT_FIELDS.join(", ")}; nothing was imported)`);
        }
        records.push(value as (typeof records)[number]);
        lineOf.push(i + 1);
      }
      if (records.length === 0) throw new UsageError("no records on stdin");
      const { app } = await open();
      try {
        const created = await app.admin.importAccounts(records);
        return { imported: created.length };
      } catch (e) {
        // The admin names the record (1-based, `error.record`); the user needs the line.
        if (e instanceof AdminError && e.record !== undefined) {
          const prefix = `record ${e.record}: `;
          const reason = e.message.startsWith(prefix) ? e.message.slice(prefix.length) : e.message;
          throw new UsageError(`line ${lineOf[e.record - 1]}: ${reason} (nothing was imported)`);
        }
        throw e;
      }
    }
    case "user list": {
      parseOptions(command, rest, {});
      const { storage } = await open();
      // A page at a time (the store's places, as GetAccountList reads them), each printed before
      // the next is read: admin.listAccounts() gathered them all first until 2026-11-29.
      const out = jsonArrayWriter(io);
      for (let offset = 0; ; offset += LIST_PAGE) {
        const { items } = await storage.accounts.list(offset, LIST_PAGE);
        out.write(items.map(accountView));
        if (items.length < LIST_PAGE) break;
      }
      out.end();
      return PRINTED;
    }
    case "user disable":
    case "user enable": {
      const username = one(parse(command, rest, {}, ["USERNAME"]).positionals, "USERNAME");
      const { app } = await open();
      return app.admin.setAccountEnabled(username, action === "enable");
    }
    case "keys rotate": {
      const values = parseOptions(command, rest, { now: { type: "boolean" }, "server-defaults": { type: "boolean" } });
      const now = values.now === true;
      checkServerSettings(now ? "keys rotate --now" : "keys rotate", io.env, values["server-defaults"] === true);
      const { app } = await open();
      const { kid, activatesAt, status, deleted, cancelled } = await app.admin.rotateSigningKey({ now });
      const at = isoTimestamp(activatesAt);
      io.stderr(
        now
          ? "the new key signs from now on; running servers switch within a minute; resource servers that cached the JWKS reject its tokens until they fetch it again\n" +
              // The next keys stored before it, which would have taken over from it (until 2026-12-02 they did).
              (cancelled.length > 0 ? `next keys stored before it were deleted, never having signed (each would have taken over from it at its activation time): ${cancelled.map((k) => JSON.stringify(k)).join(", ")}\n` : "")
          : status === "active"
            ? "the store had no signing key: the new key signs from now on\n"
            : `the new key is published now (status next) and signs from ${at}; running servers publish it within a minute\n`,
      );
      return { kid, activatesAt: at, status, deleted, cancelled };
    }
    case "keys revoke": {
      const parsed = parse(command, rest, { "server-defaults": { type: "boolean" } }, ["KID"]);
      const kid = one(parsed.positionals, "KID");
      checkServerSettings("keys revoke", io.env, parsed.values["server-defaults"] === true);
      const { app } = await open();
      const revoked = await app.admin.revokeSigningKey(kid);
      io.stderr("the key is deleted: running servers drop it from the JWKS and refuse its tokens within a minute; resource servers that cached the JWKS keep it until they fetch it again\n");
      return revoked;
    }
    case "keys list": {
      parseOptions(command, rest, {});
      const { app } = await open();
      // Core's listing reads only (a store without keys is [], a configured key not stored yet is
      // stored: false, a key in clear stays so under a KEK): an auditor's run changes nothing.
      // Core's view of each key, the one the console's key API answers with too.
      return (await app.admin.listSigningKeys()).map(signingKeyView);
    }
    case "keys reencrypt": {
      parseOptions(command, rest, {});
      const { app } = await open();
      const result = await app.admin.reencryptSigningKeys();
      io.stderr("every stored private key is now encrypted with the first key of PLANTGATE_KEY_ENCRYPTION_KEY; remove the others once keys list, run again a minute from now, shows no key with \"kekStatus\": \"older\" (a rotation under way elsewhere may store its key meanwhile)\n");
      return result;
    }
    case "prune": {
      // "prune" has no action word: what follows it are its options.
      const values = parseOptions(command, [action, ...rest].filter((a): a is string => a !== undefined), { "batch-size": { type: "string" }, "max-batches": { type: "string" }, "server-defaults": { type: "boolean" } });
      const raw = values["batch-size"];
      if (raw !== undefined && (!/^\d{1,9}$/.test(raw) || Number(raw) < 1)) throw new UsageError("--batch-size must be a positive integer");
      const budget = values["max-batches"];
      // Each run is a new process, whose rounds start at the first store (core's rotation across
      // runs lives in the app instance): at least one round serves every store in every run.
      if (budget !== undefined && (!/^\d{1,9}$/.test(budget) || Number(budget) < PRUNE_STORES)) throw new UsageError(`--max-batches must be an integer of at least ${PRUNE_STORES} (a batch for every store in each run)`);
      checkServerSettings("prune", io.env, values["server-defaults"] === true);
      const { app } = await open();
      return app.admin.prune({ ...(raw === undefined ? {} : { batchSize: Number(raw) }), ...(budget === undefined ? {} : { maxBatches: Number(budget) }) });
    }
    case "events": {
      const values = parseOptions(command, [action, ...rest].filter((a): a is string => a !== undefined), {
        type: { type: "string" },
        client: { type: "string" },
        account: { type: "string" },
        limit: { type: "string" },
        before: { type: "string" },
        since: { type: "string" },
        until: { type: "string" },
      });
      const raw = values.limit;
      if (raw !== undefined && (!/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > 1000)) throw new UsageError("--limit must be an integer from 1 to 1000");
      // Worded with the flag and the variable the user gave (until 2026-12-01 the admin API's
      // field, and the storage option a CLI user never sets).
      if (values.type !== undefined && !isEventType(values.type)) throw new UsageError(`--type must be one of ${SECURITY_EVENT_TYPES.join(", ")}`);
      // As the console's filters take them (never quoted: a value typed in the wrong place may be a
      // secret); an empty one is refused by parseOptions.
      for (const flag of ["client", "account"] as const) {
        const v = values[flag];
        if (v !== undefined && v.length > 200) throw new UsageError(`--${flag} must be 1-200 characters`);
      }
      // Before the store is opened, as the checks above (exit 2 with the store down too, not 3).
      if (values.before !== undefined && !isEventCursor(values.before)) throw new UsageError("--before must be the next cursor of a previous page");
      const since = values.since === undefined ? undefined : instant("--since", values.since);
      const until = values.until === undefined ? undefined : instant("--until", values.until);
      if (!auditFromEnv(io.env)) throw new UsageError("PLANTGATE_AUDIT is off: the store keeps no security events (nor do the servers with it off)");
      const { app } = await open();
      // Filters and paging as the console's (since 2026-12-03; the CLI had --type and --limit only).
      const { events, next } = await withFlags(
        app.admin.listEvents({
          ...(values.type !== undefined ? { type: values.type } : {}),
          ...(values.client !== undefined ? { clientId: values.client } : {}),
          ...(values.account !== undefined ? { account: values.account } : {}),
          ...(values.before !== undefined ? { before: values.before } : {}),
          ...(since !== undefined ? { since } : {}),
          ...(until !== undefined ? { until } : {}),
          limit: raw === undefined ? 20 : Number(raw),
        }),
        { before: "--before", since: "--since", until: "--until" },
      );
      for (const event of events) io.stdout(jsonText(event) + "\n");
      // On stderr, so stdout holds events only (a cursor is a time and an event id, nothing secret).
      if (next !== null) io.stderr(`plantgate: more events: add --before ${next}\n`);
      return PRINTED;
    }
    default:
      // An option before the command (`--secret hunter2 client list`, `--server-defaults prune`,
      // `--version`): until 2026-12-02 it was "unknown command: hunter2", the option's value
      // quoted, or "unknown command: prune" for a command that exists. Nothing is quoted: what
      // follows an option may be a value not meant for a log. The CLI has no version of its own to
      // print (its schema version is the store's), so `--version` gets the same answer.
      if (argv[0]?.startsWith("-")) throw new UsageError(OPTIONS_FIRST);
      // The command words only: the rest of the line may hold a value not meant for a log.
      throw new UsageError(argv.length === 0 ? "no command given" : `unknown command: ${argv.slice(0, 2).filter((w) => !w.startsWith("-")).join(" ")}`);
  }
}

/**
 * Refuses (exit 2, nothing created) a SQLite file that does not exist. A relative `PLANTGATE_DB`
 * (or the default `./data/plantgate.db`) read from another working directory than the server's
 * named a new file, and every command but a listing went on in a new empty database: a client
 * created there that no server ever saw, a `user disable` of someone "who does not exist"
 * (before 2026-11-29). `migrate` creates the store; so does the server's start.
 */
function refuseMissingSqlite(env: CliIo["env"], cwd: string): void {
  const { url } = storageUrlFromEnv(env, cwd);
  if (!url.startsWith("sqlite:")) return;
  const path = url.slice("sqlite:".length);
  try {
    statSync(path);
    return;
  } catch (e) {
    // Anything else (no permission, a file in the way) is the open's to report.
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") return;
  }
  const given = env.PLANTGATE_DB ? `PLANTGATE_DB=${env.PLANTGATE_DB}` : `PLANTGATE_DB is unset: the default ${DEFAULT_SQLITE_PATH}`;
  const relative = env.PLANTGATE_DB && isAbsolute(env.PLANTGATE_DB) ? "" : `, relative to ${cwd}`;
  throw new UsageError(
    `no SQLite database at ${path} (${given}${relative}); nothing was done: run the command where the server runs or give PLANTGATE_DB as an absolute path (plantgate migrate creates a new store)`,
  );
}

/**
 * Refuses (exit 2, nothing read or written) a store whose schema is behind this code's, and one
 * ahead of it, reading only. Until 2026-11-29 every command migrated first: a `client list` run
 * from a checkout newer than the servers' migrated the production store under them as a side
 * effect (after migration 10 the older servers' refresh tokens had no family rows, so the newer
 * code's revocation by account and prune by family expiry did not see them), took the migration
 * lock and built indexes for as long as that takes, and left servers that could no longer start
 * after a restart or a roll-back (a schema newer than their code is refused). Only `migrate`, and
 * the servers' start, change the schema now, as Ory Hydra's and Keycloak's explicit migrate steps.
 */
async function refuseOlderSchema(env: CliIo["env"], cwd: string): Promise<void> {
  const { url, display } = storageUrlFromEnv(env, cwd);
  let pending: string[];
  try {
    // Checked first, on a connection of its own that writes nothing (a SQLite file read-only): the
    // store's open puts a SQLite file in WAL mode, which writes its first page, so a refused command
    // left a zero-byte file 4096 bytes long (until 2026-11-30).
    pending = await pendingMigrationsAt(url, { queryTimeoutMs: queryTimeoutFromEnv(env) });
  } catch (error) {
    // As openStorageFromEnv wraps a failure at open: an outage (exit 3), a newer schema or refused credentials (exit 2).
    const reason = error instanceof Error ? error.message : String(error);
    throw new StorageConfigError(`cannot open the store at ${display}: ${reason}`, { cause: error });
  }
  if (pending.length === 0) return;
  const version = LATEST_SCHEMA_VERSION - pending.length;
  const state = version === 0 ? "has no plantgate schema yet" : `has schema version ${version}, older than version ${LATEST_SCHEMA_VERSION} of this plantgate (${pending.length} migration${pending.length === 1 ? "" : "s"} pending)`;
  throw new SchemaBehindError(
    `the store at ${display} ${state}; nothing was done: run plantgate migrate (pnpm -s plantgate migrate) when the servers are ready for it (an upgraded server's start migrates too), then this command again`,
  );
}

/** The store's schema is older than this code's: exit 2, and `plantgate migrate` is the way on. */
export class SchemaBehindError extends Error {
  override readonly name = "SchemaBehindError";
}

/**
 * True for a store or Redis that could not be reached or failed (exit 3): core's `StorageError`
 * from a store, the same wrapped by `openStorageFromEnv` (a failure while opening or migrating),
 * and Redis that did not answer at connect. A URL refused before anything was contacted, a server
 * that refused the credentials or names no such database, a schema newer than this code and a
 * missing driver are configuration (exit 2).
 */
function storeUnavailable(e: unknown): boolean {
  const failure = e instanceof StorageConfigError ? (e.cause instanceof StorageError ? e.cause : null) : e instanceof StorageError || (e instanceof RedisConfigError && e.cause !== undefined) ? e : null;
  if (failure === null) return false;
  // Reached, but refused for how it was called: a wrong user or password, a database or schema that
  // does not exist, no privilege, a file that is not a database. Trying again cannot help (exit 2).
  return !refusedConfiguration(failure.cause);
}

/** PostgreSQL SQLSTATEs and SQLite codes that mean the URL or its credentials are wrong (MySQL/MariaDB: {@link MYSQL_REFUSED_CONFIGURATION}, by number). */
const REFUSED_CONFIGURATION = new Set([
  // PostgreSQL: invalid authorization (class 28), no such database, no privilege, no such schema;
  // a setting of the URL's `options` the server refuses (a bad value, an unknown parameter: exit 3
  // until 2026-12-01, a retry that could never work).
  "28000", "28P01", "3D000", "42501", "3F000", "22023", "42704",
  // SQLite: not a database, cannot open, read-only file.
  "SQLITE_NOTADB", "SQLITE_CANTOPEN", "SQLITE_READONLY",
]);

/**
 * MySQL/MariaDB server error numbers that mean the login or the call is refused for how it is
 * configured, matched by number (mysql2's `errno`): mysql2 names codes from MySQL's list, so
 * MariaDB's 4151 (account locked) comes as ER_BULK_PARSER_INCOMPLETE_ESCAPE_SEQUENCE. Until
 * 2026-12-02 only the first three (and the privilege ones) were known, by mysql2's names, and a
 * unix_socket-only account, a locked account or an expired password was exit 3, "try again".
 */
const MYSQL_REFUSED_CONFIGURATION = new Set([
  // Access denied (user, database), unknown database.
  1045, 1044, 1049,
  // No privilege on a table, a column or for an operation (a user that may read but not write).
  1142, 1143, 1227,
  // Access denied without a password (a unix_socket-only account: Debian's root@localhost), an
  // authentication method the client does not support.
  1698, 1251,
  // A locked account (MySQL 3118, MariaDB 4151), an account MariaDB blocked after too many wrong
  // passwords (4150, `max_password_errors`: "unblock with ALTER USER / FLUSH PRIVILEGES"; storage-sql
  // names it ER_USER_IS_BLOCKED, and until later on 2026-12-02 it was still exit 3 here: the second
  // diff review showed it with the server's max_password_errors set to 1 for a moment, a test not
  // kept, since that setting is server-wide and would block the accounts of tests running beside it),
  // an expired password (1820 on the first statement, 1862 at login).
  3118, 4151, 4150, 1820, 1862,
]);

function refusedConfiguration(driverError: unknown): boolean {
  if (typeof driverError !== "object" || driverError === null) return false;
  const { code, errno, sqlState, message } = driverError as { code?: unknown; errno?: unknown; sqlState?: unknown; message?: unknown };
  if (typeof code === "string" && REFUSED_CONFIGURATION.has(code)) return true;
  // A server's error (mysql2 gives it a sqlState; a system error's errno is negative, and has none).
  if (typeof errno === "number" && typeof sqlState === "string" && MYSQL_REFUSED_CONFIGURATION.has(errno)) return true;
  // node-redis: an ErrorReply (no code) to AUTH or a command refused without it, or to the SELECT of
  // a database number the server does not have (`redis://host/99`; exit 3 until 2026-12-01).
  return typeof message === "string" && (/^(WRONGPASS|NOAUTH|NOPERM)\b/.test(message) || /^ERR (DB index is out of range|invalid DB index)/.test(message));
}

/**
 * What lies under a store or Redis failure, for the operator: ` (cause: Error: connect
 * ECONNREFUSED 127.0.0.1:5432)`, the driver's error's name, message and code (an AggregateError's
 * errors too: a host name with two addresses), or "" when the message already says it. A driver
 * error with a cause of its own is shown with it, nested: pg-pool's `Connection terminated due to
 * connection timeout (cause: Error: Connection terminated unexpectedly)` (until 2026-12-02 only
 * the innermost was shown, and a server that accepted and never answered read as one that closed
 * the connection). Errors of ours whose message the line already holds are skipped. Only for
 * those failures (a driver's reason at open or mid-command, as the servers log it), never for
 * other errors, whose causes may quote what they failed to parse (a signing key). The passwords of
 * PLANTGATE_DATABASE_URL and PLANTGATE_REDIS_URL, and any URL's password or secret query
 * parameter, are replaced by `***`.
 */
function causeNote(e: unknown, env: CliIo["env"]): string {
  if (!(e instanceof StorageError || e instanceof StorageConfigError || e instanceof RedisConfigError)) return "";
  const chain: Error[] = [];
  for (let x: unknown = e.cause; x instanceof Error && chain.length < 6; x = x.cause) chain.push(x);
  // openStorageFromEnv's StorageError under its StorageConfigError: already in the line.
  while (chain.length > 1 && chain[0]!.message !== "" && e.message.includes(chain[0]!.message)) chain.shift();
  const inner = chain.pop();
  if (inner === undefined) return "";
  const describe = (x: Error) => {
    // MariaDB's name where mysql2 gives MySQL's for another error (4151: a locked account), as the line's.
    const code = driverErrorCode(x);
    const text = `${x.name}: ${x.message}`;
    return (typeof code === "string" || typeof code === "number") && !text.includes(String(code)) && !e.message.includes(`(${code}`) ? `${text} [${code}]` : text;
  };
  const parts = [describe(inner)];
  if (inner instanceof AggregateError) parts.push(...inner.errors.filter((x): x is Error => x instanceof Error).map(describe));
  if (chain.length === 0 && inner.message !== "" && e.message.includes(inner.message) && parts.length === 1) return "";
  let note = parts.join("; ");
  // Outward from the innermost: each driver error around it, unless it only repeats what it wraps.
  for (const outer of chain.reverse()) {
    const text = describe(outer);
    if (!note.startsWith(text)) note = `${text} (cause: ${note})`;
  }
  return ` (cause: ${redactSecrets(note, env)})`;
}

/** `text` with every URL's password and secret query parameters, and the store's and Redis's passwords, replaced by `***`. */
function redactSecrets(text: string, env: CliIo["env"]): string {
  let out = text.replace(/[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s"'<>()]+/g, (url) => redactConnectionUrl(url));
  for (const name of ["PLANTGATE_DATABASE_URL", "PLANTGATE_REDIS_URL"]) {
    const raw = env[name];
    if (!raw) continue;
    const secrets = new Set<string>();
    try {
      const u = new URL(raw);
      if (u.password) {
        secrets.add(u.password);
        // A malformed escape (`%zz`) throws: the raw form is enough then, and the query's secrets below still count.
        try {
          secrets.add(decodeURIComponent(u.password));
        } catch {}
      }
      for (const [key, value] of u.searchParams) if (/pass|pwd|secret|token|key|auth|cred/i.test(key) && value) secrets.add(value);
    } catch {
      // Unparsable: whatever follows the scheme may hold the password.
      const rest = raw.replace(/^[A-Za-z][A-Za-z0-9+.-]*:\/\//, "");
      if (rest) secrets.add(rest);
    }
    secrets.add(raw);
    for (const secret of [...secrets].sort((a, b) => b.length - a.length)) out = out.split(secret).join("***");
  }
  return out;
}

/**
 * Runs one CLI command; returns the exit code (0 ok, 1 failure, 2 usage or input error, 3 the store
 * or Redis could not be reached or failed: at open or during the command; trying again may help;
 * 130 stopped with Ctrl-C at a password prompt, nothing done).
 *
 * @example
 * const code = await runCli(process.argv.slice(2), { env: process.env, cwd: process.cwd(), readStdin, stdout, stderr });
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  // `--help` anywhere before a `--` (`client create --help`), as well as `help` first.
  const beforeDashes = argv.indexOf("--") < 0 ? argv : argv.slice(0, argv.indexOf("--"));
  if (argv[0] === "help" || argv[0] === "-h" || beforeDashes.includes("--help")) {
    io.stdout(USAGE + "\n");
    return 0;
  }
  let opened: SqlStorage | null = null;
  let hot: OpenedRedisHotStores | null = null;
  let app: Plantgate | null = null;
  const openOnce = async () => {
    // Without PLANTGATE_SIGNING_KEY_MAX_AGE: automatic rotation is the servers' (listing the keys
    // here would otherwise store a successor on the CLI's activation delay and delete keys by its
    // token lifetime, whatever the servers' are).
    const { signingKeyMaxAgeSeconds: _serversOnly, ...options } = optionsFromEnv(io.env);
    // Only migrate makes a new SQLite file; see refuseMissingSqlite.
    if (commandOf(argv) !== "migrate") refuseMissingSqlite(io.env, io.cwd);
    // Only migrate migrates (as the servers' start does): every other command refuses a schema
    // older than this code's, and one newer, before anything is touched (see refuseOlderSchema).
    // No client cache: one command per process has nothing to reuse (its writes still notify the servers' caches).
    const migrating = commandOf(argv) === "migrate";
    if (!migrating) await refuseOlderSchema(io.env, io.cwd);
    // The store's own warnings (a migration lock another instance holds, the audit queue's drops,
    // the SQLite checkpoint's failures) are CLI warning lines too; until 2026-12-03 they went to
    // console.warn, past `io.stderr` and without the prefix.
    const storage = await openStorageFromEnv(io.env, { cwd: io.cwd, clientCache: false, migrate: migrating, onWarning: (message) => io.stderr(coreLine("warning: ", message, undefined)) });
    opened = storage;
    // PLANTGATE_REDIS_URL: the hot state (console sessions, brute-force counters, revoked jtis,
    // used assertion jtis) is in Redis, as the servers compose it; without it `user disable` left
    // the account's console sessions there and `prune` never reached Redis (before 2026-11-29).
    // Only for the commands that reach the hot state: a `migrate` before Redis is up still works.
    if (HOT_COMMANDS.has(commandOf(argv))) hot = await openRedisHotStoresFromEnv(io.env);
    // Failures and warnings are stderr lines (an audit write that failed, signing keys stored in
    // clear, a rotation whose clean-up failed); never a secret (see Logger). Warnings were dropped
    // until 2026-11-29.
    app = createPlantgate({
      ...options,
      storage: keptEventsLeft(argv, io.env) ? withoutAuditPrune({ ...storage, ...hot?.stores }) : { ...storage, ...hot?.stores },
      logger: { error: (message, context) => io.stderr(coreLine("", message, context)), warn: (message, context) => io.stderr(coreLine("warning: ", message, context)) },
    });
    return { storage, app };
  };
  // One store and app a command, however often it asks (user create opens before its prompt).
  let opening: ReturnType<typeof openOnce> | null = null;
  const open = () => (opening ??= openOnce());
  try {
    // An in-memory SQLite database is gone when the command ends: a client or account made there
    // was reported made (a secret to "store safely") and no server could ever see it.
    if (!io.env.PLANTGATE_DATABASE_URL && io.env.PLANTGATE_DB?.trim() === ":memory:") {
      throw new UsageError("PLANTGATE_DB=:memory: keeps nothing after the command; point PLANTGATE_DB or PLANTGATE_DATABASE_URL at the server's store");
    }
    const result = await run(argv, io, open);
    if (result !== PRINTED) io.stdout(jsonText(result, 2) + "\n");
    return 0;
  } catch (e) {
    if (e instanceof InterruptedError) {
      io.stderr(`plantgate: ${printable(e.message)}\n`);
      return 130;
    }
    if (e instanceof UsageError) {
      io.stderr(`plantgate: ${printable(e.message)}\n${argv.length === 0 || e.message.startsWith("unknown command") || e.message === OPTIONS_FIRST ? `\n${USAGE}\n` : ""}`);
      return 2;
    }
    // An outage, not a mistake: the same answer whether it struck at open (wrapped as a config
    // error naming the URL) or mid-command, so a cron job can tell "try again" from "fix the call".
    if (storeUnavailable(e)) {
      io.stderr(`plantgate: ${printable((e as Error).message + causeNote(e, io.env))}\n`);
      return 3;
    }
    // Refused for how it was called, mid-command (a database user that may read but not write, a
    // read-only SQLite file): configuration, not an outage, with the driver's reason. Until
    // 2026-12-01 PostgreSQL's 42501 here was exit 1 without its reason, and MySQL's table privilege
    // refusal exit 3, "try again", which never helps.
    if (e instanceof StorageError && refusedConfiguration(e.cause)) {
      io.stderr(`plantgate: ${printable(e.message + causeNote(e, io.env))}\n`);
      return 2;
    }
    // Core's refusal of the configured signing key (a TypeError when the app is made) is configuration;
    // any other TypeError is a failure (exit 1), not bad input.
    const badSigningKey = e instanceof TypeError && e.message.startsWith("signingKey ");
    if (e instanceof AdminError || e instanceof ConfigError || e instanceof StorageConfigError || e instanceof SchemaBehindError || e instanceof RedisConfigError || e instanceof KeyEncryptionError || badSigningKey) {
      io.stderr(`plantgate: ${printable(e.message + causeNote(e, io.env))}\n`);
      return 2;
    }
    io.stderr(`plantgate: ${e instanceof Error ? printable(e.message) : "failed"}\n`);
    return 1;
  } finally {
    // The command's security events reach the audit store before it closes.
    await (app as Plantgate | null)?.flushEvents();
    await (hot as OpenedRedisHotStores | null)?.close();
    await (opened as SqlStorage | null)?.close();
  }
}
