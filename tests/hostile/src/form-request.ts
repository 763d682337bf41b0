/**
 * Generated requests for the form endpoints (token; revocation and introspection reuse the client
 * authentication part): a valid request by template, then mutations on the parameters, on the
 * client authentication, on the encoded bytes, on headers and on the method.
 */
import fc from "fast-check";
import { headerText } from "./auth.js";
import { b64, CLIENTS, formEncode, ISSUER, OFFLINE, ON_WORKERD, SERVER_COMMANDS, USER_APIS, utf8, type World } from "./world.js";

export type RefreshSym = "live" | "consumed" | "revoked" | "expired" | "otherClient" | "random" | "long" | "accessToken";

/** The `token` of a revocation or introspection request. */
export type TokenSym = RefreshSym | "ccAccess" | "aliceAccess" | "noApiScopeAccess" | "expiredAccess" | "otherAudienceAccess" | "revokedAccess";

/** A parameter value: literal, or resolved against the world when the request is built. */
export type Value = { lit: string } | { refresh: RefreshSym } | { token: TokenSym };

export type ParamMutation =
  | { k: "drop"; i: number }
  | { k: "dup"; i: number; value: string | null }
  | { k: "rename"; i: number; to: string }
  | { k: "setValue"; i: number; value: string }
  | { k: "add"; name: string; value: string }
  | { k: "rotate"; by: number }
  | { k: "setRefresh"; sym: RefreshSym }
  | { k: "user"; which: "bob" | "unknown" | "Alice" | " alice" | "alice\u0000" | "carol" | "longName" }
  | { k: "password"; how: "append" | "truncate" | "upper" | "empty" | "bobs" | "long" | "nfd" }
  /**
   * A client assertion (RFC 7523 §2.2) beside, or instead of, the client's secret: the type (or
   * none) and the assertion, a token of the world (signed with the server's own key) or a literal.
   * The world's clients authenticate with secrets, so no assertion is theirs.
   */
  | { k: "assertion"; type: string | null; assertion: TokenSym | string | null };

export type AuthMutation =
  | { k: "secret"; how: "append" | "truncate" | "upper" | "other" | "empty" | "long" | "unencodedBasic" }
  | { k: "client"; to: "cc" | "pw" | "odd" | "unknown" | "empty" }
  | { k: "mode"; to: "basic" | "post" | "both" | "none" | "idOnly" | "basicWithBodyId" | "basicWithOtherBodyId" };

export type BodyMutation =
  | { k: "badPercent"; pos: number; text: string }
  | { k: "rawBytes"; pos: number; bytes: number[] }
  | { k: "truncate"; n: number }
  | { k: "huge"; n: number }
  | { k: "manyParams"; n: number }
  | { k: "empty" }
  | { k: "bom" }
  | { k: "plusToSpace" }
  | { k: "semicolons" };

export type BrokenBasic =
  | { k: "schemeOnly"; text: string }
  | { k: "badBase64"; text: string }
  | { k: "noColon" }
  | { k: "nonUtf8"; bytes: number[] }
  | { k: "badPercent" }
  | { k: "raw"; text: string }
  | { k: "twice" }
  | { k: "extraToken" }
  | { k: "latin1Decoded" }
  | { k: "bearer" };

export interface FormSpec {
  /** A grant of the token endpoint, or `token` for revocation/introspection requests. */
  template: "cc" | "password" | "refresh" | "token";
  /** For `token`: which token, and the `token_type_hint` (null: none). */
  tokenSym: TokenSym;
  hint: string | null;
  client: "cc" | "pw" | "odd";
  authMode: "basic" | "post";
  scope: string | null;
  username: "alice" | "carol";
  /** The refresh token of the refresh template. */
  refresh: RefreshSym;
  params: ParamMutation[];
  auth: AuthMutation[];
  body: BodyMutation[];
  contentType: string | null | "form";
  basic: BrokenBasic | null;
  method: string;
  headers: [string, string][];
}

const SCOPE_CHOICES = [USER_APIS, `${USER_APIS} ${SERVER_COMMANDS}`, `${USER_APIS} ${OFFLINE}`, OFFLINE, SERVER_COMMANDS, `${USER_APIS}  ${OFFLINE}`, "", " ", "unknown_scope", `${USER_APIS} ${USER_APIS}`, "Platform_UserAPIs\u0000", "openid", "\u00e9"];

const JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

const paramName = fc.oneof(
  fc.constantFrom("grant_type", "client_id", "client_secret", "username", "password", "scope", "refresh_token", "client_assertion", "client_assertion_type", "Grant_Type", "GRANT_TYPE", "grant_type ", " grant_type", "grant%5Ftype", "token", "token_type_hint", "__proto__", "constructor", "hasOwnProperty", ""),
  fc.string({ maxLength: 12 }),
);
const paramValue = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ unit: "grapheme", maxLength: 10 }),
  fc.string({ unit: "binary", maxLength: 10 }),
  fc.constantFrom("client_credentials", "password", "refresh_token", "authorization_code", "urn:ietf:params:oauth:grant-type:jwt-bearer", JWT_BEARER, "PASSWORD", "", "\u0000", "\ud800", "\udfff\ud800", "%", "a".repeat(2000)),
);

const paramMutationArb: fc.Arbitrary<ParamMutation> = fc.oneof(
  fc.record({ k: fc.constant("drop" as const), i: fc.nat(9) }),
  fc.record({ k: fc.constant("dup" as const), i: fc.nat(9), value: fc.option(paramValue, { nil: null }) }),
  fc.record({ k: fc.constant("rename" as const), i: fc.nat(9), to: paramName }),
  fc.record({ k: fc.constant("setValue" as const), i: fc.nat(9), value: paramValue }),
  fc.record({ k: fc.constant("add" as const), name: paramName, value: paramValue }),
  fc.record({ k: fc.constant("rotate" as const), by: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ k: fc.constant("setRefresh" as const), sym: fc.constantFrom<RefreshSym>("live", "consumed", "revoked", "expired", "otherClient", "random", "long", "accessToken") }),
  fc.record({ k: fc.constant("user" as const), which: fc.constantFrom("bob" as const, "unknown" as const, "Alice" as const, " alice" as const, "alice\u0000" as const, "carol" as const, "longName" as const) }),
  fc.record({ k: fc.constant("password" as const), how: fc.constantFrom("append" as const, "truncate" as const, "upper" as const, "empty" as const, "bobs" as const, "long" as const, "nfd" as const) }),
  fc.record({
    k: fc.constant("assertion" as const),
    type: fc.oneof({ weight: 3, arbitrary: fc.constant(JWT_BEARER) }, fc.constantFrom(null, "", "urn:ietf:params:oauth:grant-type:jwt-bearer", "JWT_BEARER", `${JWT_BEARER} `)),
    assertion: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom<TokenSym>("ccAccess", "aliceAccess", "expiredAccess", "otherAudienceAccess", "revokedAccess", "live") },
      fc.constantFrom(null, "", "a.b.c", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJjYy1jbGllbnQifQ.", "\u0000"),
    ),
  }),
);

const authMutationArb: fc.Arbitrary<AuthMutation> = fc.oneof(
  fc.record({ k: fc.constant("secret" as const), how: fc.constantFrom("append" as const, "truncate" as const, "upper" as const, "other" as const, "empty" as const, "long" as const, "unencodedBasic" as const) }),
  fc.record({ k: fc.constant("client" as const), to: fc.constantFrom("cc" as const, "pw" as const, "odd" as const, "unknown" as const, "empty" as const) }),
  fc.record({ k: fc.constant("mode" as const), to: fc.constantFrom("basic" as const, "post" as const, "both" as const, "none" as const, "idOnly" as const, "basicWithBodyId" as const, "basicWithOtherBodyId" as const) }),
);

const bodyMutationArb: fc.Arbitrary<BodyMutation> = fc.oneof(
  fc.record({ k: fc.constant("badPercent" as const), pos: fc.nat(), text: fc.constantFrom("%", "%G1", "%4", "%zz", "%C3%28", "%ED%A0%80", "%FF", "%00", "%u0041", "%%") }),
  fc.record({ k: fc.constant("rawBytes" as const), pos: fc.nat(), bytes: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 6 }) }),
  fc.record({ k: fc.constant("truncate" as const), n: fc.integer({ min: 1, max: 60 }) }),
  fc.record({ k: fc.constant("huge" as const), n: fc.constantFrom(5_000, 65_000, 70_000, 140_000) }),
  fc.record({ k: fc.constant("manyParams" as const), n: fc.constantFrom(20, 100, 1000, 5000) }),
  fc.constant({ k: "empty" as const }),
  fc.constant({ k: "bom" as const }),
  fc.constant({ k: "plusToSpace" as const }),
  fc.constant({ k: "semicolons" as const }),
);

const brokenBasicArb: fc.Arbitrary<BrokenBasic> = fc.oneof(
  fc.record({ k: fc.constant("schemeOnly" as const), text: fc.constantFrom("Basic", "Basic ", "basic", "BASIC  ", "Basic\t") }),
  fc.record({ k: fc.constant("badBase64" as const), text: fc.oneof(fc.constantFrom("!!!!", "YQ", "YQ=", "YWJj=", "Y", "====", "YWJj ZGVm", "YW Jj", "a-b_", "%41"), headerText(20)) }),
  fc.constant({ k: "noColon" as const }),
  fc.record({ k: fc.constant("nonUtf8" as const), bytes: fc.array(fc.integer({ min: 0x80, max: 0xff }), { minLength: 1, maxLength: 4 }) }),
  fc.constant({ k: "badPercent" as const }),
  fc.record({ k: fc.constant("raw" as const), text: headerText(40) }),
  fc.constant({ k: "twice" as const }),
  fc.constant({ k: "extraToken" as const }),
  fc.constant({ k: "latin1Decoded" as const }),
  fc.constant({ k: "bearer" as const }),
);

const CONTENT_TYPES = [
  "application/x-www-form-urlencoded; charset=utf-8",
  "application/x-www-form-urlencoded;charset=UTF-8",
  "APPLICATION/X-WWW-FORM-URLENCODED",
  "application/x-www-form-urlencoded; charset=ISO-8859-1",
  "application/x-www-form-urlencoded; charset=utf-16",
  "application/x-www-form-urlencoded; charset=\"utf-8\"",
  "application/x-www-form-urlencoded; charset=utf-8; charset=latin1",
  "application/json",
  "text/plain",
  "multipart/form-data; boundary=x",
  "application/x-www-form-urlencoded-evil",
  "",
];

/**
 * Methods of the form requests. On workerd an extension method its HTTP server does not know
 * (`TRACE-ish`) never reaches a Worker: workerd answers `501 ERROR: Unrecognized request method.`
 * itself (text/plain), which no Worker can change; those worlds send the others only.
 */
export const METHODS = ["GET", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "PROPFIND", "post", ...(ON_WORKERD ? [] : ["TRACE-ish"])];

const extraHeaderArb = fc.tuple(
  fc.oneof(fc.constantFrom("x-forwarded-for", "forwarded", "x-real-ip", "content-encoding", "transfer-encoding", "accept", "accept-charset", "x-http-method-override", "origin", "cookie", "dpop"), fc.stringMatching(/^x-[a-z0-9-]{1,10}$/)),
  headerText(40),
);

const TOKEN_SYMS: TokenSym[] = ["live", "consumed", "revoked", "expired", "otherClient", "random", "long", "ccAccess", "aliceAccess", "noApiScopeAccess", "expiredAccess", "otherAudienceAccess", "revokedAccess"];

/**
 * Requests by template, then one or two kinds of mutation (a third stay unmutated, so valid
 * requests stay common). `templates` picks the token endpoint's grants or the `token` template.
 */
export function formSpecArbFor(templates: FormSpec["template"][]): fc.Arbitrary<FormSpec> {
  return fc
    .record({
      template: fc.constantFrom(...templates),
      tokenSym: fc.constantFrom(...TOKEN_SYMS),
      hint: fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, fc.constantFrom("access_token", "refresh_token", "id_token", "ACCESS_TOKEN", "", "\u00e9")),
      client: fc.constantFrom("cc" as const, "pw" as const, "odd" as const),
      authMode: fc.constantFrom("basic" as const, "post" as const),
      scope: fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 3, arbitrary: fc.constantFrom(...SCOPE_CHOICES) }),
      username: fc.constantFrom("alice" as const, "carol" as const),
      refresh: fc.oneof({ weight: 4, arbitrary: fc.constant("live" as const) }, fc.constantFrom<RefreshSym>("consumed", "revoked", "expired", "otherClient", "random", "long", "accessToken")),
      mutated: fc.nat(2),
      keep: fc.uniqueArray(fc.constantFrom("params", "auth", "body", "contentType", "basic", "method", "headers"), { minLength: 1, maxLength: 2 }),
      params: fc.array(paramMutationArb, { minLength: 1, maxLength: 3 }),
      auth: fc.array(authMutationArb, { minLength: 1, maxLength: 2 }),
      body: fc.array(bodyMutationArb, { minLength: 1, maxLength: 2 }),
      contentType: fc.oneof(fc.constant(null), fc.constantFrom(...CONTENT_TYPES)) as fc.Arbitrary<string | null | "form">,
      basic: brokenBasicArb as fc.Arbitrary<BrokenBasic | null>,
      method: fc.constantFrom(...METHODS),
      headers: fc.array(extraHeaderArb, { minLength: 1, maxLength: 2 }),
    })
    .map(({ mutated, keep, ...s }) => {
      // The template picks a client that may use its grant; mutations may then break that.
      const client = s.template === "token" ? s.client : s.template === "cc" ? (s.client === "pw" ? "cc" : s.client) : s.client === "cc" ? "pw" : s.client;
      if (mutated === 0) {
        return { ...s, client, refresh: "live", params: [], auth: [], body: [], contentType: "form", basic: null, method: "POST", headers: [], scope: s.scope === null || SCOPE_CHOICES.indexOf(s.scope) < 3 ? s.scope : null } as FormSpec;
      }
      // One or two kinds of mutation per request: enough to find interactions, few enough that the
      // request is not simply broken in many ways at once.
      const k = (name: (typeof keep)[number]) => keep.includes(name);
      return {
        ...s,
        client,
        params: k("params") ? s.params : [],
        auth: k("auth") ? s.auth : [],
        body: k("body") ? s.body : [],
        contentType: k("contentType") ? s.contentType : "form",
        basic: k("basic") ? s.basic : null,
        method: k("method") ? s.method : "POST",
        headers: k("headers") ? s.headers : [],
      } as FormSpec;
    });
}

/** Token-endpoint requests: the three grants. */
export const formSpecArb = formSpecArbFor(["cc", "password", "refresh"]);

/** Whether a spec is an unmodified template: the server must then answer 200 (when the oracle agrees it is valid). */
export function isPristine(s: FormSpec): boolean {
  return s.refresh === "live" && s.params.length === 0 && s.auth.length === 0 && s.body.length === 0 && s.contentType === "form" && s.basic === null && s.method === "POST" && s.headers.length === 0;
}

/** The request as sent, for the oracle. */
export interface Sent {
  method: string;
  headers: Headers;
  body: Uint8Array | null;
}

const clientFixture = (k: "cc" | "pw" | "odd") => CLIENTS[k === "cc" ? 0 : k === "pw" ? 1 : 2]!;

async function resolveRefresh(world: World, sym: RefreshSym): Promise<string> {
  switch (sym) {
    case "live":
      return world.liveRefresh();
    case "consumed":
      return world.refresh.consumed;
    case "revoked":
      return world.refresh.revoked;
    case "expired":
      return world.refresh.expired;
    case "otherClient":
      return world.refresh.otherClient;
    case "random":
      return "not-a-refresh-token-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    case "long":
      return "R".repeat(600);
    case "accessToken":
      return world.tokens.cc;
  }
}

async function resolveToken(world: World, sym: TokenSym): Promise<string> {
  switch (sym) {
    case "ccAccess":
      return world.tokens.cc;
    case "aliceAccess":
      return world.tokens.alice;
    case "noApiScopeAccess":
      return world.tokens.noApiScope;
    case "expiredAccess":
      return world.tokens.expired;
    case "otherAudienceAccess":
      return world.tokens.otherAudience;
    case "revokedAccess":
      return world.tokens.revoked;
    default:
      return resolveRefresh(world, sym);
  }
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function brokenBasic(b: BrokenBasic, id: string, secret: string): string {
  const enc = (s: string) => b64(utf8(s));
  switch (b.k) {
    case "schemeOnly":
      return b.text;
    case "badBase64":
      return `Basic ${b.text}`;
    case "noColon":
      return `Basic ${enc(formEncode(id) + formEncode(secret))}`;
    case "nonUtf8":
      return `Basic ${b64(concat(utf8(formEncode(id) + ":"), new Uint8Array(b.bytes)))}`;
    case "badPercent":
      return `Basic ${enc(`${formEncode(id)}%zz:${formEncode(secret)}`)}`;
    case "raw":
      return `Basic ${b.text}`;
    case "twice":
      return `Basic ${enc(`${formEncode(id)}:${formEncode(secret)}`)}, Basic ${enc("x:y")}`;
    case "extraToken":
      return `Basic ${enc(`${formEncode(id)}:${formEncode(secret)}`)} extra`;
    case "latin1Decoded": {
      // The secret's bytes as Latin-1 (a client that skipped UTF-8): "ü" becomes two wrong characters.
      const bytes = utf8(`${formEncode(id)}:${secret}`);
      return `Basic ${b64(bytes)}`;
    }
    case "bearer":
      return `Bearer ${enc(`${id}:${secret}`)}`;
  }
}

/** Builds the request a spec describes. */
export async function buildFormRequest(world: World, spec: FormSpec, path: string): Promise<{ request: Request; sent: Sent }> {
  const alice = spec.username === "alice" ? world.accounts[0]! : world.accounts[1]!;
  const params: [string, Value][] = [];
  if (spec.template === "cc") params.push(["grant_type", { lit: "client_credentials" }]);
  if (spec.template === "password") params.push(["grant_type", { lit: "password" }], ["username", { lit: alice.username }], ["password", { lit: alice.password }]);
  if (spec.template === "refresh") params.push(["grant_type", { lit: "refresh_token" }], ["refresh_token", { refresh: spec.refresh }]);
  if (spec.template === "token") {
    params.push(["token", { token: spec.tokenSym }]);
    if (spec.hint !== null) params.push(["token_type_hint", { lit: spec.hint }]);
  } else if (spec.scope !== null) params.push(["scope", { lit: spec.scope }]);

  // Client authentication, then its mutations.
  let client = clientFixture(spec.client);
  let id = client.id;
  let secret = client.secret;
  let mode: "basic" | "post" | "both" | "none" | "idOnly" | "basicWithBodyId" | "basicWithOtherBodyId" = spec.authMode;
  let unencodedBasic = false;
  for (const m of spec.auth) {
    if (m.k === "secret") {
      if (m.how === "append") secret += "x";
      if (m.how === "truncate") secret = secret.slice(0, -1);
      if (m.how === "upper") secret = secret.toUpperCase();
      if (m.how === "other") secret = CLIENTS[(CLIENTS.indexOf(client) + 1) % CLIENTS.length]!.secret;
      if (m.how === "empty") secret = "";
      if (m.how === "long") secret = secret + "s".repeat(5000);
      if (m.how === "unencodedBasic") unencodedBasic = true;
    }
    if (m.k === "client") {
      if (m.to === "unknown") id = "no-such-client";
      else if (m.to === "empty") id = "";
      else {
        client = clientFixture(m.to);
        id = client.id;
      }
    }
    if (m.k === "mode") mode = m.to;
  }
  if (mode === "post" || mode === "both") params.push(["client_id", { lit: id }], ["client_secret", { lit: secret }]);
  if (mode === "idOnly" || mode === "basicWithBodyId") params.push(["client_id", { lit: id }]);
  if (mode === "basicWithOtherBodyId") params.push(["client_id", { lit: "cc-client" === id ? "pw-client" : "cc-client" }]);

  // Password values the mutations below made from a real password.
  const fromPasswords = new Set<string>();
  for (const m of spec.params) {
    const n = params.length;
    if (m.k === "drop" && n > 0) params.splice(m.i % n, 1);
    if (m.k === "dup" && n > 0) {
      const [name, value] = params[m.i % n]!;
      params.push([name, m.value === null ? value : { lit: m.value }]);
    }
    if (m.k === "rename" && n > 0) params[m.i % n]![0] = m.to;
    if (m.k === "setValue" && n > 0) params[m.i % n]![1] = { lit: m.value };
    if (m.k === "add") params.push([m.name, { lit: m.value }]);
    if (m.k === "rotate" && n > 0) params.push(...params.splice(0, m.by % n));
    if (m.k === "setRefresh") {
      const i = params.findIndex(([name]) => name === "refresh_token");
      if (i >= 0) params[i]![1] = { refresh: m.sym };
      else params.push(["refresh_token", { refresh: m.sym }]);
    }
    if (m.k === "user") {
      const i = params.findIndex(([name]) => name === "username");
      const u = { bob: "bob", unknown: "mallory", Alice: "Alice", " alice": " alice", "alice\u0000": "alice\u0000", carol: world.accounts[1]!.username, longName: "u".repeat(3000) }[m.which];
      if (i >= 0) params[i]![1] = { lit: u };
      else params.push(["username", { lit: u }]);
    }
    if (m.k === "assertion") {
      if (m.type !== null) params.push(["client_assertion_type", { lit: m.type }]);
      if (m.assertion !== null) params.push(["client_assertion", TOKEN_SYMS.includes(m.assertion as TokenSym) ? { token: m.assertion as TokenSym } : { lit: m.assertion }]);
    }
    if (m.k === "password") {
      const i = params.findIndex(([name]) => name === "password");
      const cur = i >= 0 && "lit" in params[i]![1] ? (params[i]![1] as { lit: string }).lit : alice.password;
      const p = { append: cur + "!", truncate: cur.slice(0, -1), upper: cur.toUpperCase(), empty: "", bobs: world.accounts[2]!.password, long: cur + "p".repeat(5000), nfd: cur.normalize("NFD") }[m.how];
      // Carried as a password when made from one (an account's, or one an earlier mutation made
      // from it): after a renamed or added parameter the form's `password` may hold a public word
      // (a client id, a grant type, a scope) that the server's events name on purpose; "nfd" or
      // "truncate" of that word is no secret, and looking for it would flag those events.
      if (world.secrets.includes(cur) || fromPasswords.has(cur)) {
        fromPasswords.add(p);
        if (p.length >= 8) world.carried.add(p);
      }
      if (i >= 0) params[i]![1] = { lit: p };
      else params.push(["password", { lit: p }]);
    }
  }

  const parts: string[] = [];
  for (const [name, value] of params) {
    const v = "lit" in value ? value.lit : "refresh" in value ? await resolveRefresh(world, value.refresh) : await resolveToken(world, value.token);
    parts.push(`${formEncode(name)}=${formEncode(v)}`);
    // A token the request carries: no log line or metric may hold it (tests/hostile's output check).
    if (!("lit" in value) && v.length >= 8) world.carried.add(v);
  }
  // So may no client secret or password, as sent (mutated ones included).
  if (secret.length >= 8) world.carried.add(secret);
  let text = parts.join("&");
  let bytes: Uint8Array = utf8(text);
  for (const m of spec.body) {
    if (m.k === "badPercent") {
      const p = text.length === 0 ? 0 : m.pos % (text.length + 1);
      text = text.slice(0, p) + m.text + text.slice(p);
      bytes = utf8(text);
    }
    if (m.k === "rawBytes") {
      const p = bytes.length === 0 ? 0 : m.pos % (bytes.length + 1);
      bytes = concat(bytes.slice(0, p), new Uint8Array(m.bytes), bytes.slice(p));
    }
    if (m.k === "truncate") bytes = bytes.slice(0, Math.max(0, bytes.length - m.n));
    if (m.k === "huge") bytes = concat(bytes, utf8(`&pad=${"a".repeat(m.n)}`));
    if (m.k === "manyParams") bytes = concat(bytes, utf8(Array.from({ length: m.n }, (_, i) => `&p${i}=${i}`).join("")));
    if (m.k === "empty") bytes = new Uint8Array(0);
    if (m.k === "bom") bytes = concat(new Uint8Array([0xef, 0xbb, 0xbf]), bytes);
    if (m.k === "plusToSpace") bytes = utf8(new TextDecoder().decode(bytes).replace(/\+/g, "%20"));
    if (m.k === "semicolons") bytes = utf8(new TextDecoder().decode(bytes).replace(/&/g, ";"));
    if (m.k !== "badPercent") text = new TextDecoder().decode(bytes);
  }

  const headers = new Headers();
  if (spec.contentType === "form") headers.set("content-type", "application/x-www-form-urlencoded");
  else if (spec.contentType !== null) headers.set("content-type", spec.contentType);
  if (mode === "basic" || mode === "both" || mode === "basicWithBodyId" || mode === "basicWithOtherBodyId") {
    headers.set("authorization", unencodedBasic ? `Basic ${b64(utf8(`${id}:${secret}`))}` : `Basic ${b64(utf8(`${formEncode(id)}:${formEncode(secret)}`))}`);
  }
  if (spec.basic) headers.set("authorization", brokenBasic(spec.basic, id, secret));
  for (const [name, value] of spec.headers) headers.set(name, value);
  const hasBody = spec.method !== "GET" && spec.method !== "HEAD";
  const request = new Request(ISSUER + path, { method: spec.method, headers, ...(hasBody ? { body: bytes as Uint8Array<ArrayBuffer> } : {}) });
  return { request, sent: { method: request.method, headers: request.headers, body: hasBody ? bytes : null } };
}

// ------------------------------------------------------------------------------------------------
// The oracle: decides from the bytes actually sent (not from the spec) whether the credentials in
// them are good. It is written from RFC 6749 (§2.3.1, App. B, §3.2, §4.3, §4.4, §6), not from core.

/** Client authentication in the body: RFC 6749 §2.3.1, RFC 7523 §2.2. */
const CLIENT_AUTH_PARAMETERS = ["client_id", "client_secret", "client_assertion_type", "client_assertion"];
/** The token request's parameters (RFC 6749 §4.3.2, §4.4.2, §6) and client authentication. */
export const TOKEN_REQUEST_PARAMETERS: ReadonlySet<string> = new Set(["grant_type", "username", "password", "scope", "refresh_token", ...CLIENT_AUTH_PARAMETERS]);
/** Revocation's (RFC 7009 §2.1) and introspection's (RFC 7662 §2.1) parameters and client authentication. */
export const TOKEN_QUERY_PARAMETERS: ReadonlySet<string> = new Set(["token", "token_type_hint", ...CLIENT_AUTH_PARAMETERS]);

/**
 * The form, or null when it is not valid: not UTF-8, a malformed escape, or a parameter of the
 * endpoint (`recognized`) given twice; any other parameter is ignored, repeated or not (§3.2).
 */
export function parseFormStrict(bytes: Uint8Array, recognized: ReadonlySet<string>): Map<string, string> | null {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
  const out = new Map<string, string>();
  const seen = new Set<string>();
  if (text === "") return out;
  for (const pair of text.split("&")) {
    if (pair === "") continue;
    const eq = pair.indexOf("=");
    let name: string;
    let value: string;
    try {
      name = decodeURIComponent((eq < 0 ? pair : pair.slice(0, eq)).replace(/\+/g, " "));
      value = eq < 0 ? "" : decodeURIComponent(pair.slice(eq + 1).replace(/\+/g, " "));
    } catch {
      return null;
    }
    // RFC 6749 §3.2: request parameters MUST NOT be included more than once; the server MUST
    // ignore unrecognized ones.
    if (seen.has(name)) {
      if (recognized.has(name)) return null;
      continue;
    }
    seen.add(name);
    if (value !== "") out.set(name, value);
  }
  return out;
}

/** The client a request authenticates as (RFC 6749 §2.3.1), or null when its authentication is not valid. */
export function presentedClient(sent: Sent, form: Map<string, string>): { id: string; secret: string } | null {
  // An assertion names a private_key_jwt client (none in the world); beside a secret it is two
  // methods at once (RFC 6749 §2.3: at most one per request).
  if (form.has("client_assertion") || form.has("client_assertion_type")) return null;
  const header = sent.headers.get("authorization");
  if (header !== null && /^basic(?:\s|$)/i.test(header)) {
    if (form.has("client_secret")) return null;
    const m = /^basic +(\S+)$/i.exec(header);
    if (!m || !/^[A-Za-z0-9+/]+={0,2}$/.test(m[1]!)) return null;
    let decoded: string;
    try {
      decoded = new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(atob(m[1]!), (c) => c.charCodeAt(0)));
    } catch {
      return null;
    }
    const colon = decoded.indexOf(":");
    if (colon < 0) return null;
    let id: string;
    let secret: string;
    try {
      id = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, " "));
      secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, " "));
    } catch {
      return null;
    }
    if (form.has("client_id") && form.get("client_id") !== id) return null;
    return { id, secret };
  }
  const id = form.get("client_id");
  const secret = form.get("client_secret");
  return id !== undefined && secret !== undefined ? { id, secret } : null;
}

/** What a correct server may issue for this request: null when nothing (no token for bad credentials). */
export interface Entitlement {
  clientId: string;
  grant: "client_credentials" | "password" | "refresh_token";
  /** `sub` of the token. */
  subject: string;
  requestedScope: string | undefined;
  /** For the refresh grant, the family's scope. */
  familyScope?: string[];
}

/**
 * The client a well-formed form POST to an endpoint whose parameters are `recognized` authenticates
 * as (its secret checked against the world's), with the form; else null.
 */
export function authenticated(world: World, sent: Sent, recognized: ReadonlySet<string>): { client: World["clients"][number]; form: Map<string, string> } | null {
  if (sent.method !== "POST" || sent.body === null) return null;
  const type = (sent.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") return null;
  // RFC 9110 §8.4: a content-coded body is not the form its bytes would read as.
  const codings = (sent.headers.get("content-encoding") ?? "").split(",").map((c) => c.trim().toLowerCase());
  if (codings.some((c) => c !== "" && c !== "identity")) return null;
  const form = parseFormStrict(sent.body, recognized);
  if (!form) return null;
  const presented = presentedClient(sent, form);
  if (!presented) return null;
  const client = world.clients.find((c) => c.id === presented.id);
  if (!client || client.secret !== presented.secret) return null;
  return { client, form };
}

export async function entitlement(world: World, sent: Sent): Promise<Entitlement | null> {
  const auth = authenticated(world, sent, TOKEN_REQUEST_PARAMETERS);
  if (!auth) return null;
  const { client, form } = auth;
  const grant = form.get("grant_type");
  if (grant !== "client_credentials" && grant !== "password" && grant !== "refresh_token") return null;
  if (!client.grants.includes(grant)) return null;
  const requestedScope = form.get("scope");
  if (grant === "client_credentials") return { clientId: client.id, grant, subject: `client:${client.id}`, requestedScope };
  if (grant === "password") {
    const account = world.accounts.find((a) => a.username === form.get("username"));
    if (!account || !account.enabled || account.password !== form.get("password")) return null;
    return { clientId: client.id, grant, subject: account.id, requestedScope };
  }
  const token = form.get("refresh_token");
  if (token === undefined || !(await world.refreshIsLive(token, client.id))) return null;
  const record = (await world.refreshRecord(token))!;
  return { clientId: client.id, grant, subject: record.accountId, requestedScope, familyScope: record.scope };
}

/**
 * The family a request's refresh token belongs to when presenting it again is a replay the server
 * must answer by revoking that family (RFC 9700 §4.14.2): a consumed token, presented by its own
 * client, correctly authenticated, on the refresh grant. Anything less must revoke nothing.
 */
export async function replayedFamily(world: World, sent: Sent): Promise<string | null> {
  if (sent.body === null) return null;
  const form = parseFormStrict(sent.body, TOKEN_REQUEST_PARAMETERS);
  const token = form?.get("refresh_token");
  if (!form || token === undefined || form.get("grant_type") !== "refresh_token") return null;
  const record = await world.refreshRecord(token);
  if (!record || record.consumedAt === null) return null;
  const presented = presentedClient(sent, form);
  const client = world.clients.find((c) => c.id === presented?.id);
  if (!presented || !client || client.secret !== presented.secret || client.id !== record.clientId) return null;
  return record.familyId;
}
