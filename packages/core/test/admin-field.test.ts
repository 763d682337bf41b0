/**
 * `AdminError.field`: every refusal of the client and account checks (and of their page queries)
 * names the one input field it is about, so code can tell refusals apart without reading the
 * message (checkBootstrap maps it to the bootstrap variable); a refusal about several fields or
 * none has no `field` at all. The messages are as they were before `field` (the CLI, the console
 * and the README show them), but for createClient's secretExpiresIn, whose message names it (it said
 * expiresIn until 2026-11-30), and ids, quoted as JSON since 2026-11-30.
 */
import { describe, expect, it } from "vitest";
import { AdminConflictError, AdminError, AdminNotFoundError, checkAccountInput, MAX_TTL_SECONDS, type AdminField } from "../src/index.js";
import { harness } from "./helpers.js";

/** The whole error as one value: its class, name, message, `field`, and its own enumerable members. */
async function refusal(op: () => Promise<unknown>) {
  const e = await op().then(
    () => null,
    (error: unknown) => error,
  );
  if (!(e instanceof Error)) throw new Error("not refused with an Error");
  return { class: e.constructor, name: e.name, message: e.message, field: (e as AdminError).field, record: (e as AdminError).record, own: Object.keys(e) };
}

/** What `refusal` gives for an AdminError (of `kind`) about `field`. */
const about = (field: AdminField | undefined, message: string, kind: typeof AdminError = AdminError, record?: number) => ({
  class: kind,
  name: "AdminError",
  message,
  field,
  record,
  own: ["name", ...(field === undefined ? [] : ["field"]), ...(record === undefined ? [] : ["record"])],
});

const TTL = `must be from 1 to ${MAX_TTL_SECONDS} seconds`;
const BIDI = "must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069)";

describe("AdminError.field", () => {
  it("each client field's refusal names that field, and its message the field the caller passed", async () => {
    const { app } = await harness();
    const create = (input: Parameters<typeof app.admin.createClient>[0]) => refusal(() => app.admin.createClient(input));
    const cases: [Awaited<ReturnType<typeof refusal>>, ReturnType<typeof about>][] = [
      [await create({ clientId: "has space" }), about("clientId", "clientId must be 1-200 printable ASCII characters without spaces")],
      [await create({ clientId: "" }), about("clientId", "clientId must be 1-200 printable ASCII characters without spaces")],
      [await create({ clientId: ".." }), about("clientId", 'clientId must not be "." or ".."')],
      [await create({ clientSecret: "short" }), about("clientSecret", "clientSecret must be 16-1024 characters")],
      [await create({ clientSecret: "x".repeat(1025) }), about("clientSecret", "clientSecret must be 16-1024 characters")],
      // The message names the field the caller passed (until 2026-11-30 createClient's said expiresIn).
      [await create({ secretExpiresIn: 0 }), about("secretExpiresIn", `secretExpiresIn ${TTL}`)],
      [await refusal(() => app.admin.addClientSecret("app-1", { expiresIn: MAX_TTL_SECONDS + 1 })), about("expiresIn", `expiresIn ${TTL}`)],
      [await create({ name: "" }), about("name", "name must be 1-200 characters without U+0000 or unpaired surrogates")],
      [await create({ name: "\u200b" }), about("name", "name must hold a visible character and no control characters")],
      [await create({ name: "a\u202eb" }), about("name", `name ${BIDI}`)],
      [await create({ authMethod: "none" as never }), about("authMethod", "authMethod must be client_secret or private_key_jwt")],
      [await create({ authMethod: "private_key_jwt", jwks: "{" }), about("jwks", "the JWK Set is not valid JSON")],
      [await create({ authMethod: "private_key_jwt", jwksUri: "http://keys.example.test/jwks" }), about("jwksUri", "jwksUri must use https (http only for localhost)")],
      [await create({ authMethod: "private_key_jwt", jwksUri: 42 as unknown as string }), about("jwksUri", "jwksUri must be a string")],
      [await create({ grantTypes: ["implicit" as never] }), about("grantTypes", "unknown grant type")],
      [await create({ scopes: ["nope"] }), about("scopes", "unknown scope; known: Platform_UserAPIs Platform_AllAppsServerCommands offline_access")],
      [await create({ accessTokenTtl: 0 }), about("accessTokenTtl", `accessTokenTtl ${TTL}`)],
      [await create({ refreshTokenTtl: 1.5 }), about("refreshTokenTtl", `refreshTokenTtl ${TTL}`)],
      [await create({ refreshTokenAbsoluteTtl: MAX_TTL_SECONDS + 1 }), about("refreshTokenAbsoluteTtl", `refreshTokenAbsoluteTtl ${TTL}`)],
      [await refusal(() => app.admin.listClientsPage({ limit: 0 })), about("limit", "limit must be an integer from 1 to 1000")],
      [await refusal(() => app.admin.listClientsPage({ after: "\ud800" })), about("after", "after must be the next cursor of a previous page")],
      // About several fields, or none: no field.
      [await create({ jwksUri: "https://keys.example.test/jwks" }), about(undefined, "jwks and jwksUri are for authMethod private_key_jwt")],
      [await create({ authMethod: "private_key_jwt" }), about(undefined, "a private_key_jwt client needs exactly one of jwks and jwksUri")],
      [await create({ authMethod: "private_key_jwt", jwksUri: "https://keys.example.test/jwks", clientSecret: "x".repeat(32) }), about(undefined, "a private_key_jwt client has no secret")],
      [await create({ clientId: "app-1" }), about(undefined, 'client "app-1" already exists', AdminConflictError)],
      [await refusal(() => app.admin.deleteClient("gone")), about(undefined, 'client "gone" does not exist', AdminNotFoundError)],
    ];
    for (const [got, want] of cases) expect(got, want.message).toEqual(want);
  });

  it("each account field's refusal names that field, on create, import (record N) and page queries; never the password", async () => {
    const { app } = await harness();
    const password = "s3cret-Passw0rd";
    const create = (input: Partial<Parameters<typeof app.admin.createAccount>[0]>) => refusal(() => app.admin.createAccount({ username: "bob", password, ...input }));
    const cases: [Awaited<ReturnType<typeof refusal>>, ReturnType<typeof about>][] = [
      [await create({ username: "" }), about("username", "username must be 1-200 characters")],
      [await create({ username: "a\u0000b" }), about("username", "username must not contain U+0000 or unpaired surrogates")],
      [await create({ username: "bob " }), about("username", "username must not start or end with white space or an invisible character")],
      [await create({ username: "b\u202eob" }), about("username", `username ${BIDI}`)],
      [await create({ password: "short" }), about("password", "password must be 8-1024 characters")],
      [await create({ password: `${password}\u0000` }), about("password", "password must not contain U+0000")],
      [await create({ displayName: "x".repeat(321) }), about("displayName", "displayName must be a string of at most 320 characters")],
      [await create({ email: 42 as unknown as string }), about("email", "email must be a string of at most 320 characters")],
      [await create({ roles: ["admin\u200b"] }), about("roles", "roles must be a list of at most 32 strings of 1-100 characters, without control or invisible characters")],
      [await create({ enabled: "yes" as unknown as boolean }), about("enabled", "enabled must be true or false")],
      [await refusal(() => app.admin.importAccounts([{ username: "ok-1", password }, { username: "ok-2", password: "short" }])), about("password", "record 2: password must be 8-1024 characters", AdminError, 2)],
      [await refusal(() => app.admin.listAccountsPage({ page: 0 })), about("page", "page must be an integer from 1 to 2147483647.")],
      [await refusal(() => app.admin.listAccountsPage({ pageSize: 1001 })), about("pageSize", "pageSize must be an integer from 1 to 100.")],
      [await refusal(() => app.admin.listAccountsPage({ pageSize: "2" as unknown as number })), about("pageSize", "pageSize must be a number")],
      [await refusal(() => app.admin.importAccounts([null as never])), about(undefined, "record 1: an account must be an object", AdminError, 1)],
      [await refusal(() => app.admin.importAccounts([{ username: "ok-3", password }, { username: "alice", password }])), about(undefined, 'record 2: username "alice" is taken', AdminConflictError, 2)],
      [await create({ username: "alice" }), about(undefined, 'username "alice" is taken', AdminConflictError)],
      [await refusal(() => app.admin.setAccountEnabled("nobody", false)), about(undefined, 'user "nobody" does not exist', AdminNotFoundError)],
    ];
    for (const [got, want] of cases) {
      expect(got, want.message).toEqual(want);
      expect(got.message).not.toContain(password);
    }
  });

  it("each refusal of an audit-trail query names its field (type, clientId, account, limit, before), with a store that keeps a trail or without one (since 2026-12-03; the CLI words them with its flags)", async () => {
    const { createMemoryStorage } = await import("../src/index.js");
    for (const audit of [true, false]) {
      const { app } = await harness({ storage: createMemoryStorage({ audit }) });
      const cases: [Awaited<ReturnType<typeof refusal>>, ReturnType<typeof about>][] = [
        [await refusal(() => app.admin.listEvents({ type: "nope" as never })), about("type", expect.stringMatching(/^type must be one of token\.issued, /) as unknown as string)],
        [await refusal(() => app.admin.listEvents({ clientId: "" })), about("clientId", "client must be 1-200 characters")],
        [await refusal(() => app.admin.listEvents({ account: "a".repeat(201) })), about("account", "account must be 1-200 characters")],
        [await refusal(() => app.admin.listEvents({ limit: 1001 })), about("limit", "limit must be an integer from 1 to 1000")],
        [await refusal(() => app.admin.listEvents({ before: "not-a-cursor" })), about("before", "before must be the next cursor of a previous page")],
      ];
      for (const [got, want] of cases) expect(got, `${want.field} (audit ${audit})`).toEqual(want);
    }
  });

  it("checkAccountInput (exported for tools that ask for the password last) applies createAccount's rules; { password: false } leaves the password out, the other fields still judged", async () => {
    const sync = (op: () => void) => refusal(async () => op());
    expect(checkAccountInput({ username: "ann", password: "", email: "a@example.com", roles: ["ops"] }, { password: false })).toBeUndefined();
    expect(await sync(() => checkAccountInput({ username: "ann", password: "" }))).toEqual(about("password", "password must be 8-1024 characters"));
    expect(await sync(() => checkAccountInput({ username: "ann", password: "x".repeat(1025) }, {}))).toEqual(about("password", "password must be 8-1024 characters"));
    expect(await sync(() => checkAccountInput({ username: "ann ", password: "" }, { password: false }))).toEqual(about("username", "username must not start or end with white space or an invisible character"));
    expect(await sync(() => checkAccountInput({ username: "ann", password: "", email: "e".repeat(321) }, { password: false }))).toEqual(about("email", "email must be a string of at most 320 characters"));
    expect(await sync(() => checkAccountInput({ username: "ann", password: "", roles: [""] }, { password: false }))).toEqual(about("roles", "roles must be a list of at most 32 strings of 1-100 characters, without control or invisible characters"));
  });
});
