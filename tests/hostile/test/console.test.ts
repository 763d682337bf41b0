/**
 * The management console's admin API (`/console/api/*`) under generated requests: every route and
 * method, paths with any text in their parameters, cookies, CSRF tokens, Origin and Sec-Fetch-Site
 * of every kind, and JSON bodies built member by member from valid values and known defects (wrong
 * types, out of range, U+0000 and lone surrogates, too long), besides bodies that are not JSON, not
 * objects, too large or of another media type.
 *
 * The oracle follows the README (admin API table, error table): 404 1404 for no route, 405 1405 with
 * Allow, 403 1304 for a state-changing call from another site, 401 1301 without a live session
 * (clearing a cookie that was sent), 403 1302 for a session whose account lost the admin role, 403
 * 1303 without the session's CSRF token, then the handler's own answer: a body with a defect gets
 * 400 with that defect's number, a valid one its 2xx, which must then be what is stored. Beside it,
 * the suite's invariants: never a 5xx, a rejected request writes nothing, every string stored is
 * storable on every backend (no U+0000, no lone surrogate), and no password, client secret, session
 * id or CSRF token reaches the server's log lines, events or metrics.
 *
 * The paged reads are checked page by page against the store: `GET /events` (filters by type,
 * client and account, limits, cursors of stored records and forged ones) must answer exactly the
 * matching records of the whole audit trail after the cursor, and `GET /clients` (limits, the
 * cursors the API hands out, cursors of ids no client has, long-id and malformed cursors, either
 * given twice) exactly the clients after the cursor in code-unit order, with the right `next`.
 * `POST /signing-keys/reencrypt` is refused (409 1307: this world has no key encryption key).
 * The console has its page (`@plantgate/console`): its document and script are served, GET and HEAD
 * only, whatever the session. With HOSTILE_RUNTIME=workerd the requests go to the full Worker
 * (PLANTGATE_CONSOLE=1, the same page), not in `pnpm test`: see vitest.workerd.config.ts.
 */
import { consolePage } from "@plantgate/console";
import fc from "fast-check";
import { MAX_CLIENT_SECRETS, SECURITY_EVENT_TYPES, sha256, type AuditRecord } from "@plantgate/core";
import { expect, it } from "vitest";
import { fail, logsAreClean, noServerError, read, withStoreCheck, type Answer } from "../src/invariants.js";
import { bump, runChunked, summary } from "../src/run.js";
import { COVERAGE_CHECKS, RUNS, RUNTIME_LABEL } from "../src/settings.js";
import { snapshot, type StoreSnapshot } from "../src/snapshot.js";
import { ISSUER, LIST_PATH, type World } from "../src/world.js";

const BASE = `${ISSUER}/console`;
const ADMIN = { username: "console-root", password: "console-root-password-7" };
const GRANTS = ["client_credentials", "password", "refresh_token"];
const SCOPES = ["Platform_UserAPIs", "Platform_AllAppsServerCommands", "offline_access"];
const MAX_TTL = 10 * 365 * 24 * 3600;
const MAX_BODY = 65_536;
const COMMON_HEADERS: [string, string][] = [
  ["cache-control", "no-store"],
  ["pragma", "no-cache"],
  ["x-content-type-options", "nosniff"],
  ["referrer-policy", "no-referrer"],
  ["x-frame-options", "DENY"],
];

/** The test's own definition (not the server's): what every backend stores unchanged. */
/**
 * The console's page (`@plantgate/console`, what the full Worker serves): the world's console has it
 * in process too, so both runtimes run the same console. Its files by the junk paths that name them
 * (the document at `/console` and `/console/`, the script at `/console/assets/console.js`).
 */
const PAGE = consolePage();
const PAGE_FILES: Record<string, { contentType: string; body: string }> = {
  "": PAGE.page({ basePath: "", path: "/console" }),
  "/": PAGE.page({ basePath: "", path: "/console" }),
  "/assets/console.js": PAGE.assets["console.js"]!,
} as Record<string, { contentType: string; body: string }>;

const storable = (s: string) => !/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);

// ---------------------------------------------------------------------------------------------
// The world's console state: an admin session (re-made when a request signs it out), one that
// was signed out, and one of a non-admin account (as if the role had been removed in the database).

interface Session {
  id: string;
  csrf: string;
}

interface ConsoleState {
  adminId: string;
  admin: Session;
  signedOut: Session;
  demoted: Session & { accountId: string };
  /** Runs in a row that began with alice disabled (see the restore at each run's start). */
  aliceDisabledRuns: number;
}

const states = new WeakMap<World, ConsoleState>();

function headers(init: Record<string, string | null>): Headers {
  const h = new Headers();
  for (const [k, v] of Object.entries(init)) if (v !== null) h.set(k, v);
  return h;
}

async function signIn(world: World, username: string, password: string): Promise<Session> {
  const res = await world.app.fetch(
    new Request(`${BASE}/api/session`, {
      method: "POST",
      headers: headers({ "content-type": "application/json", origin: ISSUER, "sec-fetch-site": "same-origin" }),
      body: JSON.stringify({ username, password }),
    }),
  );
  const body = (await res.json()) as { csrfToken?: string };
  const id = /^plantgate_console=([A-Za-z0-9_-]{43});/.exec(res.headers.get("set-cookie") ?? "")?.[1];
  if (res.status !== 200 || id === undefined || typeof body.csrfToken !== "string") throw new Error(`console setup: sign-in failed: ${res.status} ${JSON.stringify(body)}`);
  world.carried.add(id);
  world.carried.add(body.csrfToken);
  return { id, csrf: body.csrfToken };
}

async function stateOf(world: World): Promise<ConsoleState> {
  const known = states.get(world);
  if (known) return known;
  const view = await world.app.admin.createAccount({ ...ADMIN, roles: ["admin"] });
  world.secrets.push(ADMIN.password);
  world.carried.add(ADMIN.password);
  const signedOut = await signIn(world, ADMIN.username, ADMIN.password);
  const out = await world.app.fetch(
    new Request(`${BASE}/api/session/sign-out`, {
      method: "POST",
      headers: headers({ origin: ISSUER, "sec-fetch-site": "same-origin", cookie: `plantgate_console=${signedOut.id}`, "x-csrf-token": signedOut.csrf }),
    }),
  );
  if (out.status !== 204) throw new Error(`console setup: sign-out failed: ${out.status}`);
  // A live session of alice, who is no administrator: what remains when an operator removes the
  // role in the database (the Admin API cannot), written through the recording storage.
  const alice = world.accounts.find((a) => a.username === "alice")!;
  const demoted = { id: "d".repeat(20) + "emotedSessionOfAlice000", csrf: "demoted-csrf-token-0123456789", accountId: alice.id };
  await storeDemoted(world, demoted);
  world.carried.add(demoted.id);
  const state = { adminId: view.id, admin: await signIn(world, ADMIN.username, ADMIN.password), signedOut, demoted, aliceDisabledRuns: 0 };
  world.rec.takeWrites();
  states.set(world, state);
  return state;
}

/** Stores alice's session (again: the first request that meets it ends it with 403 1302). */
async function storeDemoted(world: World, demoted: { id: string; csrf: string; accountId: string }): Promise<void> {
  await world.storage.sessions.create({ idHash: await sha256(demoted.id), accountId: demoted.accountId, csrfHash: await sha256(demoted.csrf), createdAt: world.clock.now, expiresAt: world.clock.now + 8 * 3600_000 });
}

// ---------------------------------------------------------------------------------------------
// Generated members: each is the member's JSON text (undefined: left out) and what it alone
// causes: "ok", "absent", or the error number it must bring; `late` marks a defect the admin
// operation finds after the console's own checks (the conflict check, 409, comes between).

interface Member {
  text: string | undefined;
  v: "ok" | "absent" | number;
  late?: boolean;
}

const j = (value: unknown) => JSON.stringify(value);
const ok = (arb: fc.Arbitrary<unknown>): fc.Arbitrary<Member> => arb.map((x) => ({ text: j(x), v: "ok" }));
const bad = (code: number, arb: fc.Arbitrary<unknown>, late = false): fc.Arbitrary<Member> => arb.map((x) => ({ text: typeof x === "string" && x.startsWith("#raw:") ? x.slice(5) : j(x), v: code, late }));
const absent: fc.Arbitrary<Member> = fc.constantFrom<Member>({ text: undefined, v: "absent" }, { text: "null", v: "absent" });
const wrongType = fc.constantFrom<unknown>(5, true, [], {}, "#raw:1.5");

/** Text with something every backend cannot store: U+0000 or a lone surrogate, somewhere. */
const unstorable = fc
  .tuple(fc.string({ maxLength: 8 }), fc.constantFrom("\u0000", "\ud800", "\udfff", "\udc00\ud800"), fc.string({ maxLength: 8 }))
  .map(([a, x, b]) => a + x + b);
/** Storable text of any Unicode, `min`..`max` UTF-16 units. */
const text = (min: number, max: number) =>
  fc.string({ unit: "binary", minLength: min, maxLength: max }).filter((s) => storable(s) && s.length >= min && s.length <= max);

/** The bidirectional embedding, override and isolate controls core refuses in names (util/storable-text.ts). */
const BIDI = /[\u202A-\u202E\u2066-\u2069]/;

/** A client name the core takes: a visible character, no control character, no bidi control (admin/clients.ts). */
const showable = (s: string) => !/^[\s\p{Cf}\u115F\u1160\u3164\uFFA0]*$/u.test(s) && !/\p{Cc}/u.test(s) && !BIDI.test(s);

const required = (code = 1003): fc.Arbitrary<Member> => fc.constantFrom<Member>({ text: undefined, v: code }, { text: "null", v: code }, { text: '""', v: code });
const seconds = fc.oneof(
  { weight: 2, arbitrary: absent },
  { weight: 3, arbitrary: ok(fc.oneof(fc.integer({ min: 1, max: MAX_TTL }), fc.constantFrom(1, MAX_TTL))) },
  bad(1009, fc.constantFrom("#raw:0", "#raw:-1", `#raw:${MAX_TTL + 1}`, "#raw:9007199254740993", "#raw:-0")),
  bad(1004, fc.constantFrom("#raw:1.5", "60", true, [], "#raw:2.0E1")),
);

const clientIdMember = (existing: fc.Arbitrary<Member>) =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom<Member>({ text: undefined, v: "absent" }, { text: "null", v: "absent" }, { text: '""', v: "absent" }) },
    { weight: 4, arbitrary: ok(fc.stringMatching(/^[A-Za-z0-9._~:-]{1,24}$/).filter((s) => s !== "." && s !== "..")) },
    { weight: 2, arbitrary: existing },
    bad(1009, fc.constantFrom("has space", "ü-client", "tab\tid", ".", ".."), true),
    bad(1009, unstorable.filter((s) => s !== ""), true),
    bad(1009, fc.constant("x".repeat(201))),
    bad(1004, wrongType),
  );

const clientBody = (existingId: fc.Arbitrary<Member>) =>
  fc.record({
    clientId: clientIdMember(existingId),
    name: fc.oneof(
      { weight: 6, arbitrary: ok(fc.oneof(text(1, 40).filter(showable), fc.constant("n".repeat(200)))) },
      required(),
      bad(1009, fc.constant("x".repeat(201))),
      bad(1009, unstorable, true),
      // Shows as nothing, or breaks a line in the console's lists and the CLI table.
      bad(1009, fc.constantFrom(" ", "\t\u00a0", "\u200b", "\ufeff", "a\nb", "x\u0007", "\r"), true),
      // A bidi control reorders what is around the name wherever it is shown.
      bad(1009, fc.constantFrom("Ledger\u202Eevil", "a\u2066b\u2069", "x\u202Ay"), true),
      bad(1004, wrongType),
    ),
    grantTypes: fc.oneof(
      { weight: 3, arbitrary: absent },
      { weight: 3, arbitrary: ok(fc.array(fc.constantFrom(...GRANTS), { minLength: 1, maxLength: 4 })) },
      bad(1009, fc.constantFrom([], ["implicit"], ["password", "authorization_code"], Array(33).fill("password"))),
      bad(1004, fc.constantFrom("password", [1], [null], {})),
    ),
    scopes: fc.oneof(
      { weight: 3, arbitrary: absent },
      { weight: 3, arbitrary: ok(fc.array(fc.constantFrom(...SCOPES), { maxLength: 4 })) },
      bad(1009, fc.constantFrom(["openid"], ["Platform_UserAPIs", "platform_userapis"], Array(33).fill("offline_access"))),
      bad(1004, fc.constantFrom("offline_access", [true], 3)),
    ),
    accessTokenTtl: seconds,
    refreshTokenTtl: seconds,
    refreshTokenAbsoluteTtl: seconds,
    // Members the console does not take: ignored, whatever they say.
    clientSecret: fc.option(fc.constantFrom("mirror-secret-0123456789", 5), { nil: undefined }).map((x): Member => ({ text: x === undefined ? undefined : j(x), v: "absent" })),
    authMethod: fc.option(fc.constantFrom("private_key_jwt", "none"), { nil: undefined }).map((x): Member => ({ text: x === undefined ? undefined : j(x), v: "absent" })),
  });

/** A password no other generated value can contain: `pw-` and 12 random letters and digits. */
const password = fc.stringMatching(/^[A-Za-z0-9]{12}$/).map((s) => `pw-${s}`);

/** What the admin refuses at either end of a new username (as in core's admin). */
const INVISIBLE_EDGE = /^[\s\p{Cc}\p{Cf}\u115F\u1160\u3164\uFFA0]|[\s\p{Cc}\p{Cf}\u115F\u1160\u3164\uFFA0]$/u;

const accountBody = (existingUsername: fc.Arbitrary<Member>) =>
  fc.record({
    username: fc.oneof(
      { weight: 5, arbitrary: ok(fc.oneof(fc.stringMatching(/^[a-z0-9._-]{1,16}$/).map((s) => `u-${s}`), text(1, 30).filter((s) => !s.startsWith("pw-") && !INVISIBLE_EDGE.test(s) && !BIDI.test(s) && !/\p{Cc}/u.test(s) && s === s.normalize("NFC")))) },
      { weight: 2, arbitrary: existingUsername },
      required(),
      bad(1009, fc.constant("u".repeat(201))),
      bad(1009, unstorable.filter((s) => s !== ""), true),
      // White space at either end (the admin refuses it, after the body's own checks).
      bad(1009, fc.tuple(fc.constantFrom(" ", "\t", "\u00a0", "\ufeff", "\u2028", "\n", "\u200b", "\u2060", "\u00ad", "\u3164"), fc.stringMatching(/^[a-z0-9]{0,8}$/), fc.boolean()).map(([ws, s, front]) => (front ? ws + s : s + ws)), true),
      bad(1009, fc.constantFrom("mal\u202Eyrol", "u\u2067v"), true),
      // A control character anywhere, or a form other than NFC (refused since 2026-12-02).
      bad(1009, fc.constantFrom("mal\u009b2Jory", "a\u0007b", "jose\u0301"), true),
      bad(1004, wrongType),
    ),
    password: fc.oneof(
      { weight: 6, arbitrary: ok(password) },
      required(),
      bad(1009, fc.constantFrom("short", "1234567"), true),
      bad(1009, fc.constant("p".repeat(1025))),
      bad(1009, password.map((p) => `${p}\u0000`), true),
      bad(1004, wrongType),
    ),
    displayName: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom<Member>({ text: undefined, v: "absent" }, { text: "null", v: "absent" }, { text: '""', v: "absent" }) },
      { weight: 3, arbitrary: ok(fc.oneof(text(1, 40), fc.constant("d".repeat(320)))) },
      bad(1009, fc.constant("d".repeat(321))),
      bad(1009, unstorable.filter((s) => s !== ""), true),
      bad(1004, wrongType),
    ),
    email: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom<Member>({ text: undefined, v: "absent" }, { text: "null", v: "absent" }, { text: '""', v: "absent" }) },
      { weight: 2, arbitrary: ok(fc.constantFrom("a@example.com", "not an address", "ü@例え.jp")) },
      bad(1009, unstorable.filter((s) => s !== ""), true),
      bad(1004, wrongType),
    ),
    roles: fc.oneof(
      { weight: 3, arbitrary: absent },
      // A role core takes: no control or format character anywhere, no invisible edge (admin/index.ts).
      { weight: 3, arbitrary: ok(fc.array(fc.oneof(fc.constantFrom("admin", "reader", "writer"), text(1, 100).filter((r) => !INVISIBLE_EDGE.test(r) && !/[\p{Cc}\p{Cf}]/u.test(r))), { maxLength: 4 })) },
      bad(1009, fc.constantFrom([""], ["r".repeat(101)], ["ad\u200bmin"], ["x\u0001"]), true),
      bad(1009, fc.constant(Array(33).fill("reader"))),
      bad(1004, fc.constantFrom("admin", [1], [null])),
    ),
    enabled: fc.oneof({ weight: 3, arbitrary: absent }, { weight: 2, arbitrary: ok(fc.boolean()) }, bad(1004, fc.constantFrom("yes", 1, "#raw:0"))),
  });

const secretsBody = fc.record({ expiresIn: seconds });
const rotateBody = fc.record({
  now: fc.oneof({ weight: 2, arbitrary: absent }, { weight: 3, arbitrary: ok(fc.boolean()) }, bad(1004, fc.constantFrom("true", 1))),
  confirm: fc.oneof({ weight: 2, arbitrary: absent }, { weight: 3, arbitrary: ok(fc.boolean()) }, bad(1004, fc.constantFrom("yes", 0))),
});
const signInBody = fc.record({
  // Which account the credentials are for; the member texts are filled in at request time.
  who: fc.constantFrom("admin", "admin", "admin-wrong", "alice", "bob-disabled", "nobody"),
  username: fc.oneof({ weight: 8, arbitrary: fc.constant<Member>({ text: "<who>", v: "ok" }) }, required(1003).filter((m) => m.text !== '""'), bad(1009, fc.constantFrom("", "u".repeat(1025))), bad(1004, wrongType)),
  password: fc.oneof({ weight: 8, arbitrary: fc.constant<Member>({ text: "<who>", v: "ok" }) }, required(1003).filter((m) => m.text !== '""'), bad(1009, fc.constantFrom("", "p".repeat(1025))), bad(1004, wrongType)),
});

/** A body: JSON members (an object), or whole texts with a known answer, under some media type. */
type Payload = { k: "members"; members: Record<string, Member> } | { k: "text"; text: string; code: number } | { k: "bytes"; bytes: number[]; code: number } | { k: "none" };

const mediaTypeArb = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom("application/json", "application/json; charset=utf-8", "Application/JSON", "application/json;charset=UTF-8", "application/json; charset=utf8") },
  fc.constantFrom<string | null>(null, "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", "application/jsonp", "multipart/form-data; boundary=x"),
);
const jsonOk = (type: string | null) => type !== null && /^application\/json\s*(;\s*charset=(utf-8|utf8))?$/i.test(type);

const wholeText = fc.constantFrom<Payload>(
  { k: "text", text: "", code: 1001 },
  { k: "text", text: "{", code: 1001 },
  { k: "text", text: '{"name":"a","name":"b"}', code: 1001 },
  { k: "text", text: "{'name':'x'}", code: 1001 },
  { k: "text", text: "[]", code: 1002 },
  { k: "text", text: "null", code: 1002 },
  { k: "text", text: "12", code: 1002 },
  { k: "text", text: '"name"', code: 1002 },
  { k: "text", text: "[".repeat(5000) + "]".repeat(5000), code: 1001 },
  { k: "bytes", bytes: [0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d], code: 1001 },
);

/**
 * A body over `maxBodyBytes` (1007): its own entry, not one of {@link wholeText}'s eleven, where it
 * came 1 to 7 times in 2,000 runs (seeds 4242, 161803, 271828) against the coverage check's > 2.
 */
const oversized: Payload = { k: "text", text: `{"name":"${"x".repeat(MAX_BODY)}"}`, code: 1007 };

const payload = (members: fc.Arbitrary<Record<string, Member>>): fc.Arbitrary<Payload> =>
  fc.oneof(
    { weight: 20, arbitrary: members.map((m): Payload => ({ k: "members", members: m })) },
    { weight: 2, arbitrary: wholeText },
    { weight: 2, arbitrary: fc.constant<Payload>({ k: "none" }) },
    { weight: 1, arbitrary: fc.constant(oversized) },
  );

// ---------------------------------------------------------------------------------------------
// Targets: a route with its parameters, or a path no route has.

/** A path parameter: the n-th existing thing of its kind, or any text (sent percent-encoded). */
type Ref = { k: "known"; n: number } | { k: "text"; v: string };
const ref = fc.oneof(
  { weight: 3, arbitrary: fc.nat(50).map((n): Ref => ({ k: "known", n })) },
  // Not "reencrypt" either: that path also has the re-encrypt action's POST (its own target, below).
  fc.string({ unit: "binary", minLength: 1, maxLength: 20 }).filter((s) => storable(s) && s !== "." && s !== ".." && s !== "reencrypt").map((v): Ref => ({ k: "text", v })),
);
/** A kid for `?kid=`: any text, those a path segment cannot carry included. */
const queryKid = fc.oneof(ref, fc.constantFrom("", ".", "..", "reencrypt").map((v): Ref => ({ k: "text", v })));

type Target =
  | { r: "session"; body: Payload; signIn: { who: string; username: Member; password: Member } }
  | { r: "session-get" | "sign-out" | "sign-out-everywhere" | "keys-list" }
  | { r: "clients-list"; query: EventsParam[] }
  | { r: "clients-create"; body: Payload }
  | { r: "client" | "secret"; id: Ref }
  | { r: "secrets"; id: Ref; body: Payload }
  | { r: "secret-id"; id: Ref; sid: Ref }
  | { r: "accounts-list"; query: string }
  | { r: "events"; query: EventsParam[] }
  | { r: "accounts-create"; body: Payload }
  | { r: "disable" | "enable"; id: Ref | { k: "self" } }
  | { r: "keys-rotate"; body: Payload }
  | { r: "key"; kid: Ref }
  | { r: "key-query"; kid: Ref; twice: Ref | null }
  | { r: "reencrypt" }
  | { r: "junk"; path: string };

const queryText = fc.oneof(
  fc.constant(""),
  fc.array(
    fc.tuple(
      fc.constantFrom("page", "pageSize", "type", "client", "account", "limit", "before", "x"),
      fc.oneof(fc.constantFrom("1", "2", "3", "0", "-1", "20", "100", "101", "abc", "", "1.5", "%00", "%zz", "token.issued", "cc-client", "2147483648"), fc.string({ maxLength: 6 }).map(encodeURIComponent)),
    ),
    { maxLength: 3 },
  ).map((parts) => "?" + parts.map(([k, v]) => `${k}=${v}`).join("&")),
);

/** One `name=value` of an events query, value unencoded (`<alice-id>`, `<cursor:n>`: filled in from the world). */
type EventsParam = readonly [string, string];
const UUID_MAX = "ffffffff-ffff-ffff-ffff-ffffffffffff";
const UUID_MIN = "00000000-0000-0000-0000-000000000000";
/** The events API's parameters: values the trail holds, values it does not, and bad ones (README: 400 1009). */
const eventsParam: fc.Arbitrary<EventsParam> = fc.oneof(
  fc.tuple(
    fc.constant("type"),
    fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...SECURITY_EVENT_TYPES) },
      { weight: 3, arbitrary: fc.constantFrom("token.issued", "console.signed_in", "client.created", "account.created") },
      fc.constantFrom("", "TOKEN.ISSUED", "token.issued ", "token", "x", "token.issued\u0000"),
    ),
  ),
  fc.tuple(
    fc.constant("client"),
    fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom("cc-client", "pw-client", "odd:client%+") },
      fc.constantFrom("", "no-such-client", "c".repeat(200), "c".repeat(201), "\u0000", "a\u0000b"),
      text(1, 12),
    ),
  ),
  fc.tuple(
    fc.constant("account"),
    fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom("alice", "<alice-id>", ADMIN.username, "carol:+%") },
      fc.constantFrom("", "nobody", "a".repeat(200), "a".repeat(201), "\u0000"),
      text(1, 12),
    ),
  ),
  fc.tuple(
    fc.constant("limit"),
    fc.oneof(
      { weight: 4, arbitrary: fc.integer({ min: 1, max: 100 }).map(String) },
      fc.constantFrom("", "1", "100", "0100", "0", "101", "1000", "00001", "-1", "1.5", "1e1", " 5", "+5", "abc", "9999"),
    ),
  ),
  fc.tuple(
    fc.constant("before"),
    fc.oneof(
      { weight: 5, arbitrary: fc.nat(5000).map((n) => `<cursor:${n}>`) },
      fc.constantFrom(
        "",
        `9007199254740991.${UUID_MAX}`,
        `0.${UUID_MIN}`,
        `${Date.UTC(2026, 5, 1, 12, 0, 0)}.${UUID_MAX}`,
        `${Date.UTC(2026, 5, 1, 12, 0, 0)}.${UUID_MIN}`,
        `9007199254740992.${UUID_MAX}`,
        `12345678901234567.${UUID_MAX}`,
        `1.${UUID_MAX.toUpperCase()}`,
        `1.${UUID_MAX.slice(1)}`,
        `-1.${UUID_MAX}`,
        `1.5.${UUID_MAX}`,
        "abc",
        `.${UUID_MAX}`,
        // The form of any other id (base64url of its UTF-8 after `i`; since 2026-12-02): the empty
        // id, "A", a UUID in capitals; then padding, a lowercase UUID so spelled, bytes not UTF-8.
        "1.i",
        "1.iQQ",
        `1.i${Buffer.from(UUID_MAX.toUpperCase()).toString("base64url")}`,
        "1.iQQ==",
        `1.i${Buffer.from(UUID_MAX).toString("base64url")}`,
        "1.i_w",
      ),
    ),
  ),
  // Not a parameter of the API: ignored.
  fc.tuple(fc.constantFrom("page", "x", "Type"), fc.constantFrom("1", "token.issued", "")),
);
/** Mostly each parameter at most once; now and then any of them twice (400 1009). */
const eventsQuery = fc.oneof({ weight: 6, arbitrary: fc.uniqueArray(eventsParam, { maxLength: 5, selector: ([name]) => name }) }, fc.array(eventsParam, { maxLength: 5 }));

/** The whole audit trail as the store lists it, newest first (walked with `before`, a page at a time). */
async function auditTrail(world: World): Promise<AuditRecord[]> {
  const audit = world.storage.audit!;
  const all: AuditRecord[] = [];
  for (;;) {
    const last = all[all.length - 1];
    const page = await audit.list({ limit: 1000, ...(last ? { before: { time: last.time, id: last.id } } : {}) });
    all.push(...page);
    if (page.length < 1000) return all;
  }
}

/** A record id in core's form (a lowercase UUID), which a cursor holds as it is; any other id is `i` and its UTF-8 in base64url. */
const CORE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const cursorOf = (r: AuditRecord | undefined) => (r === undefined ? `0.${UUID_MIN}` : CORE_ID.test(r.id) ? `${r.time}.${r.id}` : `${r.time}.i${Buffer.from(r.id).toString("base64url")}`);

/** A cursor read back, as the README describes it: [time, id], or null for anything else. */
function readCursor(before: string): [number, string] | null {
  const m = /^(\d{1,16})\.(.*)$/s.exec(before);
  if (m === null) return null;
  if (CORE_ID.test(m[2]!)) return [Number(m[1]), m[2]!];
  const encoded = /^i([A-Za-z0-9_-]*)$/.exec(m[2]!)?.[1];
  if (encoded === undefined) return null;
  const bytes = Buffer.from(encoded, "base64url");
  const id = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes, { stream: false });
  return bytes.toString("base64url") === encoded && !CORE_ID.test(id) ? [Number(m[1]), id] : null;
}

/**
 * What `GET /console/api/events` must answer for a query, the test's own reading of the README: a
 * limit 1-100 (default 20), a known type, a client or account of 1-200 characters, a cursor
 * `time.id`; each at most once (400 1009 when given twice, since 2026-11-30), an empty one as none. Then the records of
 * the trail that match every filter (client: the record's client id; account: when the value
 * names an account, by id first, else by username (`named`), the records whose account id is its id
 * or whose username is its username, each column by its own value (since 2026-12-01 by both its
 * names; since 2026-12-02 never the other column); else its account id or username as given),
 * strictly older than the cursor in (time, id) order, the first `limit`; `next` the last one's
 * cursor when an older match exists.
 */
function expectedEvents(trail: AuditRecord[], query: readonly EventsParam[], named: { id: string; username: string } | null = null): { error: string } | { events: unknown[]; next: string | null } {
  for (const name of ["type", "client", "account", "before", "limit"]) if (query.filter(([n]) => n === name).length > 1) return { error: `${name} given twice` };
  const first = (name: string) => {
    const v = query.find(([n]) => n === name)?.[1];
    return v === undefined || v === "" ? undefined : v;
  };
  const [type, client, account, limitText, before] = ["type", "client", "account", "limit", "before"].map(first);
  if (limitText !== undefined && !(/^\d{1,4}$/.test(limitText) && Number(limitText) >= 1 && Number(limitText) <= 100)) return { error: "limit" };
  if (type !== undefined && !(SECURITY_EVENT_TYPES as readonly string[]).includes(type)) return { error: "type" };
  for (const v of [client, account]) if (v !== undefined && v.length > 200) return { error: "client or account" };
  let cursor: [number, string] | null = null;
  try {
    cursor = before === undefined ? null : readCursor(before);
  } catch {
    // Bytes that are not UTF-8.
  }
  if (cursor === null && before !== undefined) return { error: "cursor" };
  if (cursor && !Number.isSafeInteger(cursor[0])) return { error: "cursor time" };
  const limit = limitText === undefined ? 20 : Number(limitText);
  const older = (r: AuditRecord) => !cursor || r.time < cursor[0] || (r.time === cursor[0] && r.id < cursor[1]);
  const matching = trail.filter((r) => (type === undefined || r.type === type) && (client === undefined || r.clientId === client) && (account === undefined || r.accountId === (named?.id ?? account) || r.username === (named?.username ?? account)) && older(r));
  const page = matching.slice(0, limit);
  return { events: page.map((r) => JSON.parse(r.data) as unknown), next: matching.length > limit ? cursorOf(page[page.length - 1]) : null };
}

/** Code-unit order, as the README says clients are listed. */
const codeUnitOrder = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
const b64u = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64url");
/** The console's cursor after a client id of at most 512 UTF-8 bytes: `i` and its base64url (README: opaque; admin/clients.ts). */
const consoleCursor = (id: string) => "i" + b64u(new TextEncoder().encode(id));
/** A long id's cursor form: `h`, its first 510 bytes, `.`, a SHA-256 (of no stored id: the page starts after the prefix). */
const LONG_PREFIX = "p".repeat(510);
const longCursor = `h${b64u(new TextEncoder().encode(LONG_PREFIX))}.${b64u(new Uint8Array(32).fill(7))}`;

/** `GET /console/api/clients` parameters: handed-out cursors, cursors of ids no client has, forged and bad ones. */
const clientsLimit = fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 1, max: 2 }).map(String) }, { weight: 2, arbitrary: fc.integer({ min: 1, max: 200 }).map(String) }, fc.constantFrom("", "1", "2", "200", "0050", "0", "201", "-1", "1.5", "abc", "00001"));
const clientsAfter = fc.oneof(
    { weight: 4, arbitrary: fc.nat(200).map((n) => `<cursor:${n}>`) },
    // A cursor of an id no client has (deleted meanwhile, or never): the page goes on after it.
    { weight: 2, arbitrary: fc.oneof(text(0, 12), fc.constantFrom("", "\u0000", "cc-client\u0000", "zzzz", "~", "\uffff", "😀", "c".repeat(400))).map(consoleCursor) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        "",
        longCursor,
        "i",
        "iYR", // not the canonical base64url of its bytes ("iYQ" is "a")
        "iYQ==",
        "i/w",
        "i" + b64u(new Uint8Array([0xff, 0xfe])), // not UTF-8
        "i" + b64u(new Uint8Array([0xed, 0xa0, 0x80])), // a surrogate in UTF-8
        "i" + b64u(new TextEncoder().encode("x".repeat(513))), // over 512 bytes: the h form's
        "h" + b64u(new TextEncoder().encode("short")) + "." + b64u(new Uint8Array(32)),
        `h${b64u(new TextEncoder().encode(LONG_PREFIX))}.${b64u(new Uint8Array(31))}`,
        "x" + "A".repeat(800),
        "cc-client",
        "i" + "Q".repeat(728),
      ),
    },
);
/** Each at most once, in either order; now and then one of them twice (400 1009). */
const clientsQuery = fc
  .record({ limit: fc.option(clientsLimit, { freq: 2 }), after: fc.option(clientsAfter, { freq: 5 }), twice: fc.oneof({ weight: 9, arbitrary: fc.constant(null) }, fc.constantFrom("limit", "after")), afterFirst: fc.boolean() })
  .map(({ limit, after, twice, afterFirst }) => {
    const query: EventsParam[] = [];
    if (limit !== null) query.push(["limit", limit]);
    if (after !== null) query[afterFirst ? "unshift" : "push"](["after", after]);
    if (twice !== null) query.push(twice === "limit" ? ["limit", "1"] : ["after", "<cursor:0>"]);
    return query;
  });

/**
 * What `GET /console/api/clients` must answer, the test's own reading of the README: `limit` 1-200
 * (default 50), `after` a cursor the API hands out (`i` + base64url of the id's UTF-8, canonical,
 * at most 512 bytes of UTF-8; or a long id's `h` form), either at most once; then the clients after
 * that id in code-unit order, and `next` the cursor after the last when more follow.
 */
async function expectedClientsPage(stored: string[], query: readonly EventsParam[]): Promise<{ error: string } | { ids: string[]; next: string | null }> {
  for (const name of ["limit", "after"]) if (query.filter(([n]) => n === name).length > 1) return { error: `${name} given twice` };
  const one = (name: string) => {
    const v = query.find(([n]) => n === name)?.[1];
    return v === undefined || v === "" ? undefined : v;
  };
  const limitText = one("limit");
  const cursor = one("after");
  if (limitText !== undefined && !(/^\d{1,4}$/.test(limitText) && Number(limitText) >= 1 && Number(limitText) <= 200)) return { error: "limit" };
  let after: string | null = null;
  if (cursor !== undefined) {
    const decode = (t: string) => {
      const bytes = Buffer.from(t, "base64url");
      if (!/^[A-Za-z0-9_-]*$/.test(t) || b64u(bytes) !== t) return null;
      try {
        return { bytes, text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
      } catch {
        return null;
      }
    };
    const long = /^h([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/.exec(cursor);
    if (cursor.length > 728) return { error: "cursor (too long)" };
    if (cursor.startsWith("i")) {
      const d = decode(cursor.slice(1));
      if (d === null || d.bytes.length > 512) return { error: "cursor" };
      after = d.text;
    } else if (long) {
      const d = decode(long[1]!);
      const digest = decode(long[2]!);
      if (d === null || d.bytes.length <= 508 || d.bytes.length > 512 || digest?.bytes.length !== 32) return { error: "long cursor" };
      // No stored id is that long here: the page starts after the prefix.
      after = d.text;
    } else return { error: "cursor" };
  }
  const limit = limitText === undefined ? 50 : Number(limitText);
  const rest = [...stored].sort(codeUnitOrder).filter((id) => after === null || id > after);
  const ids = rest.slice(0, limit);
  return { ids, next: rest.length > limit ? consoleCursor(ids[ids.length - 1]!) : null };
}

const targetArb: fc.Arbitrary<Target> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ r: fc.constant("session" as const), body: payload(fc.constant({})), signIn: signInBody }) as fc.Arbitrary<Target> },
  { weight: 1, arbitrary: fc.constant<Target>({ r: "session-get" }) },
  { weight: 1, arbitrary: fc.constant<Target>({ r: "sign-out" }) },
  { weight: 1, arbitrary: fc.constant<Target>({ r: "sign-out-everywhere" }) },
  { weight: 3, arbitrary: fc.record({ r: fc.constant("clients-list" as const), query: clientsQuery }) },
  // The first page of one: a page with more after it whenever the world has two clients (a
  // generated query's cursor and limit leave more after the page about 3 times in 2,000 runs, just
  // over the coverage check's threshold).
  { weight: 1, arbitrary: fc.constant<Target>({ r: "clients-list", query: [["limit", "1"]] }) },
  { weight: 1, arbitrary: fc.constant<Target>({ r: "keys-list" }) },
  { weight: 8, arbitrary: payload(clientBody(fc.constant({ text: "<existing-client>", v: "ok" }))).map((body): Target => ({ r: "clients-create", body })) },
  { weight: 2, arbitrary: fc.record({ r: fc.constantFrom("client" as const, "secret" as const), id: ref }) },
  { weight: 3, arbitrary: fc.record({ r: fc.constant("secrets" as const), id: ref, body: payload(secretsBody) }) },
  { weight: 2, arbitrary: fc.record({ r: fc.constant("secret-id" as const), id: ref, sid: ref }) },
  { weight: 1, arbitrary: fc.record({ r: fc.constant("accounts-list" as const), query: queryText }) },
  { weight: 3, arbitrary: fc.record({ r: fc.constant("events" as const), query: eventsQuery }) },
  { weight: 8, arbitrary: payload(accountBody(fc.constant({ text: "<existing-account>", v: "ok" }))).map((body): Target => ({ r: "accounts-create", body })) },
  { weight: 3, arbitrary: fc.record({ r: fc.constantFrom("disable" as const, "enable" as const), id: fc.oneof(ref, fc.constant({ k: "self" as const })) }) },
  { weight: 2, arbitrary: payload(rotateBody).map((body): Target => ({ r: "keys-rotate", body })) },
  // `now` without `confirm` (1308) on its own: from rotateBody alone it came 1 to 10 times in 2,000
  // runs (seeds 1, 4242, 161803, 271828) against the coverage check's > 2.
  { weight: 1, arbitrary: payload(fc.record({ now: ok(fc.constant(true)), confirm: fc.oneof(absent, ok(fc.constant(false))) })).map((body): Target => ({ r: "keys-rotate", body })) },
  { weight: 2, arbitrary: fc.record({ r: fc.constant("key" as const), kid: ref }) },
  { weight: 2, arbitrary: fc.record({ r: fc.constant("key-query" as const), kid: queryKid, twice: fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, queryKid) }) },
  // No KEK in this world: the action is refused (409 1307) and changes nothing; DELETE there revokes a key named "reencrypt".
  { weight: 1, arbitrary: fc.constant<Target>({ r: "reencrypt" }) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom("", "/", "/api", "/api/", "/api/clients/", "/api/clients//secret", "/api/session/", "/API/session", "/api/unknown", "/api/accounts/x", "/api/accounts/x/delete", "/api/%zz", "/api/clients/%E0%A4%A", "/assets/console.js", "/api/signing-keys/x/y", "/api/signing-keys/", "/api/events/1", "/api/clients/x/secrets/", "/api/accounts//enable", "/api/clients/a/b/c/d/e")
      .map((path): Target => ({ r: "junk", path })),
  },
);

/** Each route's methods, as the README's table lists them. */
const METHODS: Record<Exclude<Target["r"], "junk">, string> = {
  session: "GET,POST",
  "session-get": "GET,POST",
  "sign-out": "POST",
  "sign-out-everywhere": "POST",
  "clients-list": "GET,POST",
  "clients-create": "GET,POST",
  client: "DELETE",
  secret: "POST",
  secrets: "POST",
  "secret-id": "DELETE",
  "accounts-list": "GET,POST",
  "accounts-create": "GET,POST",
  disable: "POST",
  enable: "POST",
  events: "GET",
  "keys-list": "GET,POST,DELETE",
  "keys-rotate": "GET,POST,DELETE",
  key: "DELETE",
  "key-query": "GET,POST,DELETE",
  reencrypt: "POST,DELETE",
};
const OWN_METHOD: Record<Exclude<Target["r"], "junk">, string> = {
  session: "POST",
  "session-get": "GET",
  "sign-out": "POST",
  "sign-out-everywhere": "POST",
  "clients-list": "GET",
  "clients-create": "POST",
  client: "DELETE",
  secret: "POST",
  secrets: "POST",
  "secret-id": "DELETE",
  "accounts-list": "GET",
  "accounts-create": "POST",
  disable: "POST",
  enable: "POST",
  events: "GET",
  "keys-list": "GET",
  "keys-rotate": "POST",
  key: "DELETE",
  "key-query": "DELETE",
  reencrypt: "POST",
};

interface Spec {
  target: Target;
  /** null: the route's own method. */
  method: string | null;
  mediaType: string | null;
  cookie: "admin" | "admin-among-others" | "none" | "garbage" | "malformed" | "signed-out" | "demoted" | "other-name";
  csrf: "right" | "none" | "wrong" | "long" | "other-session";
  origin: "same" | "none" | "other" | "null" | "http";
  site: "same-origin" | "none-header" | "cross-site" | "same-site" | "none";
}

const specArb: fc.Arbitrary<Spec> = fc.record({
  target: targetArb,
  method: fc.oneof({ weight: 12, arbitrary: fc.constant(null) }, fc.constantFrom("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")),
  mediaType: mediaTypeArb,
  cookie: fc.oneof({ weight: 14, arbitrary: fc.constant("admin" as const) }, fc.constantFrom("admin-among-others" as const, "none" as const, "garbage" as const, "malformed" as const, "signed-out" as const, "demoted" as const, "other-name" as const)),
  csrf: fc.oneof({ weight: 14, arbitrary: fc.constant("right" as const) }, fc.constantFrom("none" as const, "wrong" as const, "long" as const, "other-session" as const)),
  origin: fc.oneof({ weight: 10, arbitrary: fc.constantFrom("same" as const, "none" as const) }, fc.constantFrom("other" as const, "null" as const, "http" as const)),
  site: fc.oneof({ weight: 10, arbitrary: fc.constantFrom("same-origin" as const, "none-header" as const) }, fc.constantFrom("cross-site" as const, "same-site" as const, "none" as const)),
});

// ---------------------------------------------------------------------------------------------
// The request, built against the world as it is now.

interface Built {
  request: Request;
  method: string;
  /** The route's path after the console, or null for a path no route has. */
  route: Exclude<Target["r"], "junk"> | null;
  /** Parameters as sent (decoded). */
  params: string[];
  /** The body's JSON members as they will be parsed (for the success checks). */
  members: Record<string, Member> | null;
  bodyCode: number | null;
}

async function build(world: World, state: ConsoleState, spec: Spec): Promise<Built> {
  const t = spec.target;
  const clients = await world.storage.clients.list();
  const accounts = (await world.storage.accounts.list(0, Number.MAX_SAFE_INTEGER)).items;
  const clientRef = (r: Ref) => (r.k === "known" ? (clients[r.n % Math.max(1, clients.length)]?.clientId ?? "no-client") : r.v);
  const accountRef = (r: Ref | { k: "self" }) => (r.k === "self" ? state.adminId : r.k === "known" ? accounts[r.n % accounts.length]!.id : r.v);
  let path: string;
  let params: string[] = [];
  switch (t.r) {
    case "session":
    case "session-get":
      path = "/api/session";
      break;
    case "sign-out":
      path = "/api/session/sign-out";
      break;
    case "sign-out-everywhere":
      path = "/api/session/sign-out-everywhere";
      break;
    case "clients-list": {
      // `<cursor:n>`: the cursor the API hands out after the n-th stored client (code-unit order).
      const ids = clients.map((c) => c.clientId).sort(codeUnitOrder);
      const value = (v: string) => (v.startsWith("<cursor:") ? consoleCursor(ids[Number(v.slice(8, -1)) % Math.max(1, ids.length)] ?? "") : v);
      const query = t.query.map(([name, v]) => [name, value(v)] as const);
      params = query.map(([name, v]) => `${name}=${v}`);
      path = `/api/clients${query.length === 0 ? "" : "?" + query.map(([name, v]) => `${name}=${encodeURIComponent(v)}`).join("&")}`;
      break;
    }
    case "clients-create":
      path = "/api/clients";
      break;
    case "client":
    case "secret":
    case "secrets": {
      const id = clientRef(t.id);
      params = [id];
      path = `/api/clients/${encodeURIComponent(id)}${t.r === "client" ? "" : t.r === "secret" ? "/secret" : "/secrets"}`;
      break;
    }
    case "secret-id": {
      const id = clientRef(t.id);
      const client = clients.find((c) => c.clientId === id);
      const sid = t.sid.k === "known" ? (client?.secrets[t.sid.n % Math.max(1, client.secrets.length)]?.id ?? "no-secret") : t.sid.v;
      params = [id, sid];
      path = `/api/clients/${encodeURIComponent(id)}/secrets/${encodeURIComponent(sid)}`;
      break;
    }
    case "accounts-list":
      path = `/api/accounts${t.query}`;
      break;
    case "events": {
      // The markers become what the world holds now: a stored record's (time, id) as a cursor
      // (what a page's `next` is), alice's account id.
      const records = await auditTrail(world);
      const value = (v: string) =>
        v === "<alice-id>" ? world.accounts.find((x) => x.username === "alice")!.id : v.startsWith("<cursor:") ? cursorOf(records[Number(v.slice(8, -1)) % Math.max(1, records.length)]) : v;
      const query = t.query.map(([name, v]) => [name, value(v)] as const);
      params = query.map(([name, v]) => `${name}=${v}`);
      path = `/api/events${query.length === 0 ? "" : "?" + query.map(([name, v]) => `${name}=${encodeURIComponent(v)}`).join("&")}`;
      break;
    }
    case "accounts-create":
      path = "/api/accounts";
      break;
    case "disable":
    case "enable": {
      const id = accountRef(t.id);
      params = [id];
      path = `/api/accounts/${encodeURIComponent(id)}/${t.r}`;
      break;
    }
    case "keys-list":
    case "keys-rotate":
      path = "/api/signing-keys";
      break;
    case "key":
    case "key-query": {
      const keys = await world.storage.signingKeys.list();
      const kid = t.kid.k === "known" ? (keys[t.kid.n % Math.max(1, keys.length)]?.kid ?? "no-key") : t.kid.v;
      params = [kid];
      path = t.r === "key" ? `/api/signing-keys/${encodeURIComponent(kid)}` : `/api/signing-keys?kid=${encodeURIComponent(kid)}`;
      if (t.r === "key-query" && t.twice !== null) {
        // Given twice (even the same kid twice): 400 1009.
        const second = t.twice.k === "known" ? (keys[t.twice.n % Math.max(1, keys.length)]?.kid ?? "no-key") : t.twice.v;
        params.push(second);
        path += `&kid=${encodeURIComponent(second)}`;
      }
      break;
    }
    case "reencrypt":
      params = ["reencrypt"];
      path = "/api/signing-keys/reencrypt";
      break;
    case "junk":
      path = t.path;
      break;
  }
  const route = t.r === "junk" ? null : t.r;
  const method = spec.method ?? (route ? OWN_METHOD[route] : "GET");

  // The body.
  let members: Record<string, Member> | null = null;
  let bodyText: string | Uint8Array | null = null;
  let bodyCode: number | null = null;
  const p: Payload | undefined = "body" in t ? t.body : undefined;
  if (p?.k === "members") {
    members = { ...p.members };
    if (t.r === "session") {
      const s = t.signIn;
      const creds: Record<string, [string, string]> = {
        admin: [ADMIN.username, ADMIN.password],
        "admin-wrong": [ADMIN.username, "pw-WrongPassword1"],
        alice: ["alice", "correct horse ✓ battery"],
        "bob-disabled": ["bob", "bob-password-disabled"],
        nobody: ["nobody-at-all", "pw-NobodysPassword"],
      };
      const [u, pw] = creds[s.who]!;
      members = {
        username: s.username.text === "<who>" ? { text: j(u), v: "ok" } : s.username,
        password: s.password.text === "<who>" ? { text: j(pw), v: "ok" } : s.password,
      };
    }
    for (const [name, m] of Object.entries(members)) {
      if (m.text === "<existing-client>") members[name] = { text: j(clients[0]?.clientId ?? "cc-client"), v: "ok" };
      if (m.text === "<existing-account>") members[name] = { text: j(accounts[accounts.length - 1]!.username), v: "ok" };
    }
    bodyText = "{" + Object.entries(members).filter(([, m]) => m.text !== undefined).map(([name, m]) => `${j(name)}:${m.text}`).join(",") + "}";
    // Every password sent is something no line may hold.
    const pwText = members.password?.text;
    if (pwText !== undefined && pwText.startsWith('"')) {
      const pw = JSON.parse(pwText) as unknown;
      if (typeof pw === "string" && pw.length >= 8) world.carried.add(pw);
    }
  } else if (p?.k === "text") {
    bodyText = p.text;
    bodyCode = p.code;
  } else if (p?.k === "bytes") {
    bodyText = new Uint8Array(p.bytes);
    bodyCode = p.code;
  }

  const cookieOf = (id: string) => `plantgate_console=${id}`;
  const cookie = {
    admin: cookieOf(state.admin.id),
    "admin-among-others": `theme=dark; ${cookieOf(state.admin.id)}; other=1`,
    none: null,
    garbage: cookieOf("g".repeat(43)),
    malformed: cookieOf("short"),
    "signed-out": cookieOf(state.signedOut.id),
    demoted: cookieOf(state.demoted.id),
    "other-name": `plantgate_console2=${state.admin.id}`,
  }[spec.cookie];
  const csrf = { right: state.admin.csrf, none: null, wrong: "w".repeat(43), long: state.admin.csrf + "x".repeat(300), "other-session": state.signedOut.csrf }[spec.csrf];
  const origin = { same: ISSUER, none: null, other: "https://evil.example", null: "null", http: "http://as.example" }[spec.origin];
  const site = { "same-origin": "same-origin", "none-header": null, "cross-site": "cross-site", "same-site": "same-site", none: "none" }[spec.site];
  const h = headers({ cookie, "x-csrf-token": csrf, origin, "sec-fetch-site": site });
  const sendsBody = bodyText !== null && method !== "GET" && method !== "HEAD";
  if (sendsBody && spec.mediaType !== null) h.set("content-type", spec.mediaType);
  const request = new Request(BASE + path, { method, headers: h, ...(sendsBody ? { body: (typeof bodyText === "string" ? new TextEncoder().encode(bodyText) : bodyText!) as Uint8Array<ArrayBuffer> } : {}) });
  return { request, method, route, params, members: sendsBody ? members : null, bodyCode: sendsBody ? bodyCode : null };
}

// ---------------------------------------------------------------------------------------------
// The oracle.

/** Console errors: exactly {error, message}, JSON, with the status the error table gives the number. */
const STATUS_OF: Record<number, number> = { 1001: 400, 1002: 400, 1003: 400, 1004: 400, 1007: 400, 1008: 400, 1009: 400, 1101: 400, 1102: 400, 1103: 400, 1301: 401, 1302: 403, 1303: 403, 1304: 403, 1305: 401, 1306: 404, 1307: 409, 1308: 400, 1404: 404, 1405: 405 };

function consoleError(a: Answer, head: boolean): number {
  noServerError(a);
  if (head) {
    if (a.text !== "") fail("a body on a HEAD response", a);
    return -1;
  }
  if (!(a.headers.get("content-type") ?? "").startsWith("application/json")) fail("a console error that is not application/json", a);
  const body = a.json as Record<string, unknown> | undefined;
  if (!body || typeof body !== "object" || Object.keys(body).sort().join() !== "error,message") fail("not exactly {error, message}", a);
  if (typeof body.message !== "string" || body.message === "") fail("message is not a non-empty string", a);
  const code = body.error as number;
  if (STATUS_OF[code] !== a.status) fail(`error ${String(code)} with status ${a.status}`, a);
  return code;
}

/** What the request must get before its handler runs (route, method, origin, session, CSRF), or null to go on. */
function gate(spec: Spec, b: Built, live: { admin: boolean; demoted: boolean }): { status: number; code: number } | null {
  if (b.route === null) return { status: 404, code: 1404 };
  const methods = METHODS[b.route].split(",");
  const m = b.method === "HEAD" ? "GET" : b.method;
  if (!methods.includes(m)) return { status: 405, code: 1405 };
  const changing = ["POST", "PUT", "PATCH", "DELETE"].includes(m);
  if (changing) {
    if (spec.site !== "same-origin" && spec.site !== "none-header") return { status: 403, code: 1304 };
    if (spec.origin !== "same" && spec.origin !== "none") return { status: 403, code: 1304 };
  }
  // Sign-in needs no session and no CSRF token.
  if ((b.route === "session" || b.route === "session-get") && m === "POST") return null;
  const session = spec.cookie === "admin" || spec.cookie === "admin-among-others" ? (live.admin ? "admin" : "gone") : spec.cookie === "demoted" ? (live.demoted ? "demoted" : "gone") : "gone";
  if (session === "gone") return { status: 401, code: 1301 };
  if (session === "demoted") return { status: 403, code: 1302 };
  if (changing && spec.csrf !== "right") return { status: 403, code: 1303 };
  return null;
}

/** The error numbers the members' defects allow, and whether only late (admin-level) ones are present. */
function defects(members: Record<string, Member>): { codes: Set<number>; onlyLate: boolean } {
  const codes = new Set<number>();
  let onlyLate = true;
  for (const m of Object.values(members)) {
    if (typeof m.v === "number") {
      codes.add(m.v);
      if (!m.late) onlyLate = false;
    }
  }
  return { codes, onlyLate };
}

/** The operation a route and method name: the paths with two methods are two operations. */
function opOf(route: Built["route"], m: string): string | null {
  if (route === null) return null;
  // DELETE on /signing-keys revokes the key named by ?kid=; without it, 400 1003.
  if ((route === "keys-list" || route === "keys-rotate" || route === "key-query") && m === "DELETE") return route === "key-query" ? "key" : "key-missing";
  // DELETE /signing-keys/reencrypt revokes the key of that name.
  if (route === "reencrypt") return m === "DELETE" ? "key" : "reencrypt";
  const pair: Record<string, [string, string]> = {
    session: ["session", "sign-in"],
    "session-get": ["session", "sign-in"],
    "clients-list": ["clients-list", "clients-create"],
    "clients-create": ["clients-list", "clients-create"],
    "accounts-list": ["accounts-list", "accounts-create"],
    "accounts-create": ["accounts-list", "accounts-create"],
    "keys-list": ["keys-list", "keys-rotate"],
    "keys-rotate": ["keys-list", "keys-rotate"],
    "key-query": ["keys-list", "keys-rotate"],
  };
  const two = pair[route];
  return two ? (m === "GET" ? two[0] : two[1]) : route;
}

const parsed = (m: Member | undefined): unknown => (m === undefined || m.text === undefined ? undefined : JSON.parse(m.text));

// HOSTILE_RUNTIME=workerd: the console world runs the full Worker with PLANTGATE_CONSOLE=1 (src/workerd.ts);
// its clock moves, so what depends on the time the Worker answered at (a secret's expiry, whether a
// key may still sign) is checked against the clock's readings before and after the request.
it(`${RUNTIME_LABEL}console admin API: ${RUNS} generated requests: never a 5xx, the documented gate (404/405/1304/1301/1302/1303) and body errors, 2xx only for valid input and then exactly what is stored, rejected requests write nothing, only storable text stored, no secret in logs`, async () => {
  const tally = await runChunked(
    specArb,
    async (world, spec, tally) => {
      const state = await stateOf(world);
      // A generated sign-out ended the admin's session: sign in again, so the chunk goes on past the gate.
      if ((await world.storage.sessions.get(await sha256(state.admin.id))) === null) {
        state.admin = await signIn(world, ADMIN.username, ADMIN.password);
        world.rec.takeWrites();
      }
      // A request that met alice's session ended it (1302): store it again while she is enabled
      // (disabling her deletes it, and a session of a disabled account is 1301).
      const demotedHash = await sha256(state.demoted.id);
      // A generated disable of alice lasts until a generated enable picks her among accounts that
      // keep being created: seed 161803 at 2000 runs met her live session once (1302 coverage
      // failed). After 25 runs disabled she is enabled again through storage, so both answers to
      // her cookie (1301 while disabled, 1302 while enabled) keep coming.
      if ((await world.storage.accounts.get(state.demoted.accountId))?.enabled === false) {
        if (++state.aliceDisabledRuns > 25) {
          await world.storage.accounts.setEnabled(state.demoted.accountId, true);
          world.rec.takeWrites();
          state.aliceDisabledRuns = 0;
        }
      } else state.aliceDisabledRuns = 0;
      if ((await world.storage.sessions.get(demotedHash)) === null && (await world.storage.accounts.get(state.demoted.accountId))?.enabled) {
        await storeDemoted(world, state.demoted);
        world.rec.takeWrites();
      }
      const live = { admin: true, demoted: (await world.storage.sessions.get(demotedHash)) !== null };
      const b = await build(world, state, spec);
      const head = b.method === "HEAD";
      const existsClient = async (id: string) => (await world.storage.clients.get(id)) !== null;
      const clientBefore = b.params[0] !== undefined && (b.route === "client" || b.route === "secret" || b.route === "secrets" || b.route === "secret-id") ? await world.storage.clients.get(b.params[0]) : null;
      const accountBefore = b.route === "disable" || b.route === "enable" ? await world.storage.accounts.get(b.params[0]!) : null;
      // The keys with their status as the admin operations see them (the clock stands still).
      const keysBefore = b.route === "key" || b.route === "key-query" || b.route === "reencrypt" ? await world.app.admin.listSigningKeys() : null;
      const createdId = b.members?.clientId && typeof parsed(b.members.clientId) === "string" ? (parsed(b.members.clientId) as string) : null;
      const idTaken = createdId !== null && createdId !== "" && (await existsClient(createdId));
      const createdUsername = b.members?.username && typeof parsed(b.members.username) === "string" ? (parsed(b.members.username) as string) : null;
      const usernameTaken = createdUsername !== null && createdUsername !== "" && (await world.storage.accounts.findByUsername(createdUsername)) !== null;
      const m = b.method === "HEAD" ? "GET" : b.method;
      const op = opOf(b.route, m);
      // The GetAccountList answer for the same query, read before (nothing changes between).
      const listTwin =
        op === "accounts-list"
          ? await read(await world.app.fetch(new Request(`${ISSUER}${LIST_PATH}${spec.target.r === "accounts-list" ? spec.target.query : ""}`, { headers: { authorization: `Bearer ${world.tokens.cc}` } })))
          : null;
      const who = spec.target.r === "session" ? spec.target.signIn.who : null;
      // The trail an events request must page through: every event of earlier requests kept first.
      const eventsTrail = op === "events" ? (await world.app.flushEvents(), await auditTrail(world)) : null;
      // The account an events query's `account` value names: by id first, else by username.
      let named: { id: string; username: string } | null = null;
      const accountParam = spec.target.r === "events" ? b.params.filter((p) => p.startsWith("account=")) : [];
      if (accountParam.length === 1 && accountParam[0]!.length > "account=".length) {
        const value = accountParam[0]!.slice("account=".length);
        named = (await world.storage.accounts.get(value)) ?? (await world.storage.accounts.findByUsername(value));
      }
      world.rec.takeWrites();

      // A session whose account lost the admin role is ended by the request that meets it, with
      // every session of the account (the world's demoted account has that one).
      const g = gate(spec, b, live);
      const demotedEnded = () =>
        g?.code === 1302
          ? {
              writes: ["sessions.deleteByAccount"],
              // In process a snapshot lists the known sessions, a deleted one as null; on workerd it lists D1's rows.
              apply: (before: StoreSnapshot) =>
                void (before.sessions = world.realTime
                  ? before.sessions.filter((r) => (r as { idHash?: string } | null)?.idHash !== demotedHash)
                  : before.sessions.map((r) => ((r as { idHash?: string } | null)?.idHash === demotedHash ? null : r))),
            }
          : undefined;
      const sentAt = world.clock.now;
      const a = await withStoreCheck(world, async () => read(await world.app.fetch(b.request)), (x) => x.status >= 400, demotedEnded);
      // The server answered at a time between these two (the same one in process, where the clock stands still).
      const answeredAt = world.clock.now;
      noServerError(a);
      logsAreClean(world);
      for (const [name, value] of COMMON_HEADERS) if (a.headers.get(name) !== value) fail(`${name} is not ${value}`, a);

      const expectError = (status: number, codes: Set<number> | number, why: string): number => {
        const allowed = typeof codes === "number" ? new Set([codes]) : codes;
        if (a.status !== status) fail(`expected ${status} (${[...allowed].join("/")}: ${why})`, a);
        const code = consoleError(a, head);
        if (!head && !allowed.has(code)) fail(`error ${code}; expected ${[...allowed].join("/")} (${why})`, a);
        bump(tally, head ? "head-error" : `e${code}`);
        return code;
      };

      // A file of the page: GET (or HEAD) only, whatever the session, cookie or origin.
      const pageFile = spec.target.r === "junk" ? PAGE_FILES[spec.target.path] : undefined;
      if (pageFile !== undefined) {
        if (m !== "GET") {
          expectError(405, 1405, "a file of the page");
          if (a.headers.get("allow") !== "GET, HEAD") fail("a page file's 405 without Allow: GET, HEAD", a);
          return a.status;
        }
        if (a.status !== 200 || a.headers.get("content-type") !== pageFile.contentType || a.text !== (head ? "" : pageFile.body)) fail(`the page's file (${pageFile.contentType}) expected`, a);
        bump(tally, head ? "page-head-200" : "page-200");
        return a.status;
      }
      if (g) {
        expectError(g.status, g.code, "the gate");
        if (g.code === 1405) {
          const allow = a.headers.get("allow") ?? "";
          const expected = METHODS[b.route!].split(",");
          if (allow !== (expected.includes("GET") ? [...expected, "HEAD"] : expected).join(", ")) fail(`Allow is ${allow}`, a);
        }
        if (g.code === 1301) {
          const cleared = a.headers.get("set-cookie");
          const sent = b.request.headers.get("cookie") !== null;
          if (sent !== (cleared !== null && /^plantgate_console=; Path=\/console; Max-Age=0; HttpOnly; SameSite=Strict; Secure$/.test(cleared))) fail(`401 with cookie ${String(sent)} and Set-Cookie ${String(cleared)}`, a);
        }
        return a.status;
      }

      // Past the gate: the handler's answer.
      // No body (no Content-Type either) or another media type: 1008; then the whole text's own answer.
      const bodyLayer = (): number | null => (b.members === null && b.bodyCode === null) || !jsonOk(spec.mediaType) ? 1008 : b.bodyCode;
      const r = op!;
      const json = a.json as Record<string, unknown>;
      const success = (status: number) => {
        if (a.status !== status) fail(`expected ${status}`, a);
        bump(tally, `${r}-${status}`);
      };

      if (r === "session") {
        success(200);
        if (!head) {
          const record = await world.storage.sessions.get(await sha256(state.admin.id));
          const expected = { username: ADMIN.username, displayName: null, csrfToken: state.admin.csrf, expiresAt: new Date(record!.expiresAt).toISOString(), grantTypes: GRANTS, scopes: SCOPES, adminRole: "admin", accountPages: { defaultPageSize: 20, maxPageSize: 100 } };
          if (JSON.stringify(json) !== JSON.stringify(expected)) fail(`GET /session is not ${JSON.stringify(expected)}`, a);
        }
      } else if (r === "sign-in") {
        // Sign-in: body, members, then the credentials.
        const layer = bodyLayer();
        if (layer !== null) return expectError(400, layer, "sign-in body"), a.status;
        const d = defects(b.members!);
        if (d.codes.size > 0) return expectError(400, d.codes, "sign-in members"), a.status;
        // alice and bob have the right password but no admin role (bob starts disabled; either may
        // be switched): the same 401 as wrong credentials, so it tells no one that a password is right.
        if (who !== "admin") return expectError(401, 1305, "wrong credentials, a disabled account or no admin role"), a.status;
        success(200);
        const id = /^plantgate_console=([A-Za-z0-9_-]{43}); Path=\/console; Max-Age=28800; HttpOnly; SameSite=Strict; Secure$/.exec(a.headers.get("set-cookie") ?? "")?.[1];
        if (id === undefined || typeof json.csrfToken !== "string") fail("a sign-in without the session cookie or CSRF token", a);
        world.carried.add(id);
        world.carried.add(json.csrfToken);
        const record = await world.storage.sessions.get(await sha256(id));
        if (!record || record.accountId !== state.adminId || record.csrfHash !== (await sha256(json.csrfToken))) fail("the signed-in session is not stored as answered", a);
      } else if (r === "sign-out") {
        success(204);
        if (a.text !== "") fail("a 204 with a body", a);
        if (await world.storage.sessions.get(await sha256(state.admin.id))) fail("signed out, but the session is still stored", a);
        if (!/^plantgate_console=; Path=\/console; Max-Age=0;/.test(a.headers.get("set-cookie") ?? "")) fail("sign-out without clearing the cookie", a);
      } else if (r === "sign-out-everywhere") {
        success(204);
        if (a.text !== "") fail("a 204 with a body", a);
        if (!/^plantgate_console=; Path=\/console; Max-Age=0;/.test(a.headers.get("set-cookie") ?? "")) fail("sign-out everywhere without clearing the cookie", a);
        // Every session of the administrator is gone (those of generated sign-ins too); alice's is not touched.
        const sessions = (await world.snapshot()).sessions as ({ idHash: string; accountId: string } | null)[];
        const left = sessions.filter((x) => x !== null && x.accountId === state.adminId);
        if (left.length > 0) fail(`signed out everywhere, but ${left.length} session(s) of the administrator are still stored`, a);
        if (live.demoted && !sessions.some((x) => x?.idHash === demotedHash)) fail("signing the administrator out everywhere ended another account's session", a);
      } else if (r === "clients-list") {
        const stored = await world.storage.clients.list();
        const expected = await expectedClientsPage(
          stored.map((c) => c.clientId),
          spec.target.r === "clients-list" ? b.params.map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)] as const) : [],
        );
        if ("error" in expected) {
          bump(tally, "clients-list-400");
          return expectError(400, 1009, `a clients query with a bad ${expected.error}`), a.status;
        }
        success(200);
        if (!head) {
          const listed = (json.clients as { clientId: string }[]).map((c) => c.clientId);
          if (JSON.stringify(listed) !== JSON.stringify(expected.ids) || json.next !== expected.next || Object.keys(json).sort().join() !== "clients,next") {
            fail(`listed ${j(listed)} next ${j(json.next)}; expected ${j(expected.ids)} next ${j(expected.next)}`, a);
          }
          bump(tally, expected.next === null ? "clients-last-page" : "clients-more");
          for (const c of stored) for (const s of c.secrets) if (a.text.includes(s.hash)) fail("a secret's hash in the client list", a);
        }
      } else if (r === "clients-create" || r === "accounts-create") {
        const layer = bodyLayer();
        if (layer !== null) return expectError(400, layer, "body"), a.status;
        const d = defects(b.members!);
        const taken = r === "clients-create" ? idTaken : usernameTaken;
        if (d.codes.size > 0) {
          if (taken && d.onlyLate && a.status === 409) return expectError(409, 1307, "taken (before the late defects)"), a.status;
          return expectError(400, d.codes, "members"), a.status;
        }
        if (taken) return expectError(409, 1307, "taken"), a.status;
        success(201);
        if (r === "clients-create") {
          const client = json.client as Record<string, unknown>;
          const secret = json.clientSecret as string;
          world.carried.add(secret);
          const stored = await world.storage.clients.get(client.clientId as string);
          if (!stored) fail("a 201 for a client that is not stored", a);
          if (createdId !== null && createdId !== "" && stored.clientId !== createdId) fail(`created ${stored.clientId}, asked for ${createdId}`, a);
          if (stored.name !== parsed(b.members!.name)) fail(`stored name ${j(stored.name)}`, a);
          if (stored.secrets.length !== 1 || stored.secrets[0]!.hash !== (await sha256(secret))) fail("the stored secret is not the one answered", a);
          const grants = parsed(b.members!.grantTypes) as string[] | null | undefined;
          if (JSON.stringify(stored.grantTypes) !== JSON.stringify(grants ? [...new Set(grants)] : GRANTS)) fail(`stored grants ${stored.grantTypes.join(",")}`, a);
          const scopes = parsed(b.members!.scopes) as string[] | null | undefined;
          if (JSON.stringify(stored.scopes) !== JSON.stringify(scopes ? [...new Set(scopes)] : SCOPES)) fail(`stored scopes ${stored.scopes.join(",")}`, a);
          for (const ttl of ["accessTokenTtl", "refreshTokenTtl", "refreshTokenAbsoluteTtl"] as const) {
            if (stored[ttl] !== ((parsed(b.members![ttl]) as number | null | undefined) ?? null)) fail(`stored ${ttl} ${String(stored[ttl])}`, a);
          }
        } else {
          const stored = await world.storage.accounts.findByUsername(createdUsername!);
          if (!stored || stored.id !== json.id) fail("a 201 for an account that is not stored as answered", a);
          if ("passwordHash" in json || a.text.includes(stored.passwordHash)) fail("the answer holds the password hash", a);
          const roles = parsed(b.members!.roles) as string[] | null | undefined;
          if (JSON.stringify(stored.roles) !== JSON.stringify(roles ? [...new Set(roles)] : [])) fail(`stored roles ${j(stored.roles)}`, a);
          if (stored.enabled !== ((parsed(b.members!.enabled) as boolean | null | undefined) ?? true)) fail("stored enabled flag differs", a);
          for (const f of ["displayName", "email"] as const) if (stored[f] !== ((parsed(b.members![f]) as string | null | undefined) || null)) fail(`stored ${f} ${j(stored[f])}`, a);
        }
      } else if (r === "client") {
        if (!clientBefore) return expectError(404, 1306, "no such client"), a.status;
        success(204);
        if (await existsClient(b.params[0]!)) fail("deleted, but still stored", a);
      } else if (r === "secret") {
        if (!clientBefore) return expectError(404, 1306, "no such client"), a.status;
        success(200);
        world.carried.add(json.clientSecret as string);
        const stored = await world.storage.clients.get(b.params[0]!);
        if (stored?.secrets.length !== 1 || stored.secrets[0]!.hash !== (await sha256(json.clientSecret as string))) fail("the regenerated secret is not the only one stored", a);
      } else if (r === "secrets") {
        const layer = bodyLayer();
        if (layer !== null) return expectError(400, layer, "body"), a.status;
        const d = defects(b.members!);
        if (d.codes.size > 0) return expectError(400, d.codes, "members"), a.status;
        if (!clientBefore) return expectError(404, 1306, "no such client"), a.status;
        const tooMany = [sentAt, answeredAt].map((now) => clientBefore.secrets.filter((s) => s.expiresAt === null || s.expiresAt > now).length >= MAX_CLIENT_SECRETS);
        // A secret that expired while the request ran (a moving clock) may or may not have counted.
        if (tooMany[0] && (tooMany[1] || a.status !== 201)) return expectError(400, 1009, "too many secrets"), a.status;
        success(201);
        world.carried.add(json.clientSecret as string);
        const stored = await world.storage.clients.get(b.params[0]!);
        const added = stored?.secrets.find((s) => s.id === (json.secret as { id: string }).id);
        if (!added || added.hash !== (await sha256(json.clientSecret as string))) fail("the added secret is not stored as answered", a);
        const expiresIn = parsed(b.members!.expiresIn) as number | null | undefined;
        if (expiresIn ? added.expiresAt === null || added.expiresAt < sentAt + expiresIn * 1000 || added.expiresAt > answeredAt + expiresIn * 1000 : added.expiresAt !== null) fail(`stored expiry ${String(added.expiresAt)}`, a);
      } else if (r === "secret-id") {
        if (!clientBefore || !clientBefore.secrets.some((s) => s.id === b.params[1])) return expectError(404, 1306, "no such client or secret"), a.status;
        success(204);
        if ((await world.storage.clients.get(b.params[0]!))?.secrets.some((s) => s.id === b.params[1])) fail("revoked, but still stored", a);
      } else if (r === "accounts-list") {
        if (head) {
          if (a.status !== listTwin!.status || a.text !== "") fail(`HEAD: ${listTwin!.status} expected`, a);
        } else if (a.status !== listTwin!.status || JSON.stringify(a.json) !== JSON.stringify(listTwin!.json)) {
          fail(`not what GetAccountList answered for the same query: ${listTwin!.status} ${listTwin!.text.slice(0, 200)}`, a);
        }
        bump(tally, `accounts-list-${a.status}`);
      } else if (r === "events") {
        const expected = expectedEvents(eventsTrail!, spec.target.r === "events" ? b.params.map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)] as const) : [], named);
        if ("error" in expected) {
          bump(tally, "events-400");
          return expectError(400, 1009, `an events query with a bad ${expected.error}`), a.status;
        }
        success(200);
        if (!head) {
          const want = { audit: true, ...expected };
          if (JSON.stringify(json) !== JSON.stringify(want)) fail(`not the page the trail holds: ${JSON.stringify(want).slice(0, 400)}`, a);
          bump(tally, json.next === null ? "events-last-page" : "events-more");
          const filtered = b.params.some((p) => /^(type|client|account)=./.test(p));
          if ((json.events as unknown[]).length > 0) bump(tally, filtered ? "events-filtered-nonempty" : "events-nonempty");
        }
      } else if (r === "disable" || r === "enable") {
        if (!accountBefore) return expectError(404, 1306, "no such account"), a.status;
        if (r === "disable" && accountBefore.id === state.adminId) return expectError(400, 1009, "disabling oneself"), a.status;
        success(200);
        const stored = await world.storage.accounts.get(accountBefore.id);
        if (stored?.enabled !== (r === "enable") || json.enabled !== (r === "enable") || json.id !== accountBefore.id) fail("the flag is not stored as answered", a);
        if (r === "disable" && (await world.storage.sessions.get(await sha256(state.demoted.id))) && accountBefore.username === "alice") fail("disabled alice, but her session lives", a);
      } else if (r === "keys-list") {
        success(200);
        if (!head) {
          const kids = (await world.storage.signingKeys.list()).map((k) => k.kid).sort();
          if (JSON.stringify((json.keys as { kid: string }[]).map((k) => k.kid).sort()) !== JSON.stringify(kids)) fail("the key list is not what is stored", a);
        }
      } else if (r === "keys-rotate") {
        // No body (no Content-Type) is a scheduled rotation; a body is read as JSON.
        const hasBody = b.members !== null || b.bodyCode !== null ? spec.mediaType !== null : false;
        let now = false;
        if (hasBody) {
          const layer = bodyLayer();
          if (layer !== null) return expectError(400, layer, "body"), a.status;
          const d = defects(b.members!);
          if (d.codes.size > 0) return expectError(400, d.codes, "members"), a.status;
          now = parsed(b.members!.now) === true;
          if (now && parsed(b.members!.confirm) !== true) return expectError(400, 1308, "now without confirm"), a.status;
        }
        success(200);
        const stored = (await world.storage.signingKeys.list()).find((k) => k.kid === json.kid);
        if (!stored || json.status !== (now ? "active" : "next")) fail("the rotated key is not stored as answered", a);
      } else if (r === "key-missing") {
        return expectError(400, 1003, "DELETE /signing-keys without ?kid="), a.status;
      } else if (r === "reencrypt") {
        bump(tally, "reencrypt-409");
        return expectError(409, 1307, "re-encrypting without a key encryption key"), a.status;
      } else if (r === "key") {
        if (b.params.length > 1) return bump(tally, "kid-twice-400"), expectError(400, 1009, "kid given twice"), a.status;
        const key = keysBefore!.find((k) => k.kid === b.params[0]);
        if (!key) return expectError(404, 1306, "no such signing key"), a.status;
        // Refused while the key signs, or may sign on an instance that has not re-read the keys
        // (a next key due within a minute; any other key within a minute of the active one taking over).
        const active = keysBefore!.find((k) => k.status === "active");
        const mayStillSign = [sentAt, answeredAt].map(
          (now) => key.status === "active" || (key.status === "next" && key.activatesAt - now < 60_000) || (key.status !== "next" && active !== undefined && now - active.activatesAt < 60_000),
        );
        // Where the minute ended while the request ran (a moving clock), either answer is right.
        if (mayStillSign[0] && (mayStillSign[1] || a.status !== 204)) return expectError(409, 1307, "a key that signs or may sign within a minute"), a.status;
        if (mayStillSign[1] && a.status !== 204) return expectError(409, 1307, "a key that may sign within a minute"), a.status;
        success(204);
        if ((await world.storage.signingKeys.list()).some((k) => k.kid === key.kid)) fail("revoked, but the key is still stored", a);
      } else {
        fail(`no expectation for ${r}`, a);
      }

      // A 2xx changed the store: whatever it holds now must be storable on every backend.
      const strings: string[] = [];
      JSON.stringify(await snapshot(world.storage, world.rec.known), (_k, v: unknown) => {
        if (typeof v === "string") strings.push(v);
        return typeof v === "bigint" ? String(v) : v;
      });
      for (const s of strings) if (!storable(s)) fail(`stored text that some backend cannot hold: ${j(s).slice(0, 80)}`, a);
      return a.status;
    },
    { world: { console: { enabled: true, page: PAGE } } },
  );
  console.log(`console API: ${summary(tally)}`);
  expect(tally.runs).toBeGreaterThanOrEqual(RUNS);
  if (COVERAGE_CHECKS) {
    for (const label of ["clients-create-201", "accounts-create-201", "secrets-201", "secret-200", "client-204", "secret-id-204", "disable-200", "enable-200", "keys-rotate-200", "key-204", "sign-in-200", "session-200", "clients-list-200", "clients-list-400", "clients-more", "accounts-list-200", "keys-list-200", "events-200", "events-400", "events-more", "events-nonempty", "events-filtered-nonempty", "reencrypt-409", "kid-twice-400", "sign-out-204", "sign-out-everywhere-204", "e1001", "e1002", "e1003", "e1004", "e1007", "e1008", "e1009", "e1301", "e1302", "e1303", "e1304", "e1305", "e1306", "e1307", "e1308", "e1404", "e1405", "page-200"]) {
      expect(tally.labels.get(label) ?? 0, label).toBeGreaterThan(RUNS / 1000);
    }
  }
});
