/**
 * RFC 7009 revocation and RFC 7662 introspection under generated requests: the token endpoint's
 * client-authentication and encoding mutations (src/form-request.ts) around a `token` that is live,
 * spent, revoked, expired, someone else's, another audience's or garbage.
 *
 * Oracle: `authenticated()` re-reads the bytes sent (RFC 6749 §2.3.1 and App. B) against the
 * world's secrets. Without valid client credentials neither endpoint may answer 200. Introspection
 * never writes and says `active: true` only for a live token of the asking client; revocation
 * changes exactly the asking client's token (the refresh token's family, or the access token's
 * jti) and nothing else.
 */
import { expect, it } from "vitest";
import { authenticated, buildFormRequest, formSpecArbFor, isPristine, TOKEN_QUERY_PARAMETERS, type FormSpec } from "../src/form-request.js";
import { fail, familyRevocation, logsAreClean, noServerError, oauthError, read, withStoreCheck, type Answer } from "../src/invariants.js";
import { bump, runChunked, summary } from "../src/run.js";
import { COVERAGE_CHECKS, RUNS } from "../src/settings.js";
import type { StoreSnapshot } from "../src/snapshot.js";
import { INTROSPECTION_PATH, REVOCATION_PATH, type World } from "../src/world.js";

const tokenSpecArb = formSpecArbFor(["token"]);

function claimsOf(jwt: string): Record<string, unknown> | null {
  try {
    const p = jwt.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(p), (c) => c.charCodeAt(0)))) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** What the presented token is, read from the world (not from the server). */
async function known(world: World, token: string | undefined) {
  if (token === undefined) return { kind: "none" as const };
  const record = await world.refreshRecord(token);
  if (record) return { kind: "refresh" as const, record };
  // Access tokens the world minted and that verify here (right issuer and audience, unexpired).
  const valid = [world.tokens.cc, world.tokens.alice, world.tokens.noApiScope, world.tokens.revoked];
  if (valid.includes(token)) {
    const c = claimsOf(token)!;
    return { kind: "access" as const, jti: c.jti as string, clientId: c.client_id as string, sub: c.sub as string, exp: c.exp as number, scope: c.scope as string };
  }
  return { kind: "unknown" as const };
}

async function property(path: string, world: World, spec: FormSpec, tally: import("../src/run.js").Tally): Promise<number> {
  const { request, sent } = await buildFormRequest(world, spec, path);
  const auth = authenticated(world, sent, TOKEN_QUERY_PARAMETERS);
  const token = auth?.form.get("token");
  const what = await known(world, token);
  const now = world.clock.now;
  const isRevocation = path === REVOCATION_PATH;
  const liveRefresh = what.kind === "refresh" && auth !== null && (await world.refreshIsLive(token!, auth.client.id));
  const liveAccess =
    what.kind === "access" && auth !== null && what.clientId === auth.client.id && !(await world.storage.revokedTokens.has(what.jti)) && what.exp * 1000 > now;
  // An unexpired access token of this client: a 200 must have recorded its jti.
  const ownAccess = what.kind === "access" && auth !== null && what.clientId === auth.client.id && what.exp * 1000 > now;

  const a = await withStoreCheck(
    world,
    async () => read(await world.app.fetch(request)),
    // Introspection never writes; revocation is checked on every answer, with its change allowed only on a 200.
    () => true,
    (answer: Answer) => {
      if (!isRevocation || answer.status !== 200 || auth === null) return undefined;
      if (what.kind === "refresh" && what.record.clientId === auth.client.id) {
        const family = what.record.familyId;
        return familyRevocation(family);
      }
      if (what.kind === "access" && what.clientId === auth.client.id) {
        const jti = what.jti;
        return {
          writes: ["revokedTokens.add"],
          apply(before: StoreSnapshot) {
            if (!before.revoked.some(([j]) => j === jti)) before.revoked.push([jti, true]);
            before.revoked.sort((x, y) => (x[0] < y[0] ? -1 : 1));
          },
        };
      }
      return undefined;
    },
  );
  noServerError(a);
  logsAreClean(world);
  if (a.status !== 200) {
    const code = oauthError(a, { head: sent.method === "HEAD" });
    bump(tally, code || "head");
    if (isPristine(spec) && auth !== null && token !== undefined && (!isRevocation || what.kind !== "refresh" || what.record.clientId === auth.client.id) && (isRevocation ? what.kind !== "access" || what.clientId === auth.client.id : true)) {
      fail("a well-formed, authenticated request was refused", a);
    }
    return a.status;
  }
  if (auth === null) fail("a 200 for a request without valid client credentials", a);
  if (a.headers.get("cache-control") !== "no-store") fail("a 200 without Cache-Control: no-store", a);
  if (token === undefined) fail("a 200 for a request without a token", a);
  if (isRevocation) {
    // What the 200 did (a write removed from the endpoint went unnoticed before: the store check only
    // allows the change): this client's refresh token's family revoked, its access token's jti recorded.
    if (what.kind === "refresh" && what.record.clientId === auth!.client.id) {
      const family = what.record.familyId;
      const stored = await world.refreshRecord(token!);
      if (stored?.familyId === family && stored.revokedAt === null) fail("a 200 for this client's refresh token left it unrevoked", a);
    }
    if (ownAccess && what.kind === "access" && !(await world.storage.revokedTokens.has(what.jti))) fail("a 200 for this client's access token left its jti unrecorded", a);
    bump(tally, what.kind === "unknown" ? "revoked-unknown" : `revoked-${what.kind}`);
    return a.status;
  }
  const body = a.json as Record<string, unknown>;
  if (typeof body !== "object" || body === null || typeof body.active !== "boolean") fail("not an RFC 7662 response", a);
  if (!body.active) {
    if (Object.keys(body).join() !== "active") fail("an inactive answer with more than `active`", a);
    if (isPristine(spec) && (liveRefresh || liveAccess)) fail("a live token of this client introspected as inactive", a);
    bump(tally, "inactive");
    return a.status;
  }
  if (!liveRefresh && !liveAccess) fail(`active: true for a token that is not a live token of ${auth.client.id}`, a);
  if (body.client_id !== auth.client.id) fail("active token of another client", a);
  if (what.kind === "refresh") {
    if (body.sub !== what.record.accountId || body.scope !== what.record.scope.join(" ")) fail("introspection disagrees with the stored refresh token", a);
    bump(tally, "active-refresh");
  } else if (what.kind === "access") {
    if (body.jti !== what.jti || body.sub !== what.sub || body.scope !== what.scope || body.exp !== what.exp || body.token_type !== "Bearer") fail("introspection disagrees with the access token", a);
    bump(tally, "active-access");
  }
  return a.status;
}

it(`revocation: ${RUNS} generated requests: never a 5xx, RFC error shapes, no 200 without client credentials, only the client's own token changes`, async () => {
  const tally = await runChunked(tokenSpecArb, (world, spec, tally) => property(REVOCATION_PATH, world, spec, tally));
  console.log(`revocation: ${summary(tally)}`);
  expect(tally.runs).toBeGreaterThanOrEqual(RUNS);
  if (COVERAGE_CHECKS) for (const label of ["revoked-refresh", "revoked-access", "revoked-unknown", "invalid_client", "invalid_request"]) {
    expect(tally.labels.get(label) ?? 0, label).toBeGreaterThan(RUNS / 500);
  }
});

it(`introspection: ${RUNS} generated requests: never a 5xx, RFC error shapes, no 200 without client credentials, active only for the client's live tokens, never writes`, async () => {
  const tally = await runChunked(tokenSpecArb, (world, spec, tally) => property(INTROSPECTION_PATH, world, spec, tally));
  console.log(`introspection: ${summary(tally)}`);
  expect(tally.runs).toBeGreaterThanOrEqual(RUNS);
  if (COVERAGE_CHECKS) for (const label of ["active-refresh", "active-access", "inactive", "invalid_client", "invalid_request"]) {
    expect(tally.labels.get(label) ?? 0, label).toBeGreaterThan(RUNS / 500);
  }
});
