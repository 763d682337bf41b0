/**
 * POST {base}/UserService/connect/token under generated requests: valid ones by template (three
 * grants, Basic and body authentication), then mutated parameters, client authentication, bytes,
 * content types, headers and methods.
 *
 * How "valid by construction" is known: an oracle (src/form-request.ts) re-reads the bytes actually
 * sent and the world's known secrets and live refresh tokens, written from RFC 6749 and not from
 * core. A 200 is allowed only when it says the credentials are good, and the token must then name
 * that client and subject; an unmutated template it accepts must get its 200.
 */
import { expect, it } from "vitest";
import { fail, familyRevocation, noServerError, oauthError, read, withStoreCheck, type Answer } from "../src/invariants.js";
import { buildFormRequest, entitlement, formSpecArb, isPristine, parseFormStrict, replayedFamily, TOKEN_REQUEST_PARAMETERS, type Entitlement } from "../src/form-request.js";
import { bump, runChunked, summary } from "../src/run.js";
import { COVERAGE_CHECKS, RUNS, RUNTIME_LABEL } from "../src/settings.js";
import { ISSUER, OFFLINE, TOKEN_PATH, type World } from "../src/world.js";

function claimsOf(jwt: string): Record<string, unknown> {
  const payload = jwt.split(".")[1] ?? "";
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(payload.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0)))) as Record<string, unknown>;
}

/** The scope a correct server grants, or null when it must refuse it (invalid_scope). */
function grantedScope(world: World, ent: Entitlement): string[] | null {
  const client = world.clients.find((c) => c.id === ent.clientId)!;
  if (ent.requestedScope === undefined) {
    if (ent.grant === "refresh_token") return ent.familyScope!;
    return client.scopes.filter((s) => s !== OFFLINE);
  }
  if (!/^[\x21\x23-\x5b\x5d-\x7e]+(?: [\x21\x23-\x5b\x5d-\x7e]+)*$/.test(ent.requestedScope)) return null;
  const requested = [...new Set(ent.requestedScope.split(" "))];
  if (ent.grant === "client_credentials" && requested.includes(OFFLINE)) return null;
  if (ent.grant === "refresh_token") return requested.every((s) => ent.familyScope!.includes(s)) && ent.familyScope!.every((s) => client.scopes.includes(s)) ? requested : null;
  return requested.every((s) => client.scopes.includes(s)) ? requested : null;
}

function checkIssued(world: World, a: Answer, ent: Entitlement): void {
  if (a.headers.get("cache-control") !== "no-store" || a.headers.get("pragma") !== "no-cache") fail("a token response without no-store/no-cache", a);
  const body = a.json as Record<string, unknown>;
  const keys = Object.keys(body ?? {}).sort().join();
  const expectsRefresh = ent.grant === "refresh_token" || (ent.grant === "password" && String(body?.scope).split(" ").includes(OFFLINE));
  if (keys !== (expectsRefresh ? "access_token,expires_in,refresh_token,scope,token_type" : "access_token,expires_in,scope,token_type")) fail("token response members", a);
  if (body.token_type !== "Bearer" || body.expires_in !== 7200 || typeof body.access_token !== "string") fail("token response values", a);
  if (expectsRefresh && (typeof body.refresh_token !== "string" || (body.refresh_token as string).length < 43)) fail("refresh token too short", a);
  const scope = grantedScope(world, ent);
  if (scope === null) fail("a token for a scope that must be refused", a);
  if ((body.scope as string) !== scope.join(" ")) fail(`granted scope ${String(body.scope)}, expected ${scope.join(" ")}`, a);
  const claims = claimsOf(body.access_token as string);
  if (claims.client_id !== ent.clientId || claims.sub !== ent.subject || claims.iss !== ISSUER || claims.aud !== ISSUER || claims.scope !== body.scope) {
    fail(`token claims ${JSON.stringify(claims)} do not match client ${ent.clientId} / subject ${ent.subject}`, a);
  }
}

it(`${RUNTIME_LABEL}token endpoint: ${RUNS} generated requests: never a 5xx, RFC 6749 error shapes, no token for bad credentials, rejected requests write nothing`, async () => {
  const tally = await runChunked(formSpecArb, async (world, spec, tally) => {
    const { request, sent } = await buildFormRequest(world, spec, TOKEN_PATH);
    const ent = await entitlement(world, sent);
    const family = await replayedFamily(world, sent);
    const a = await withStoreCheck(
      world,
      async () => read(await world.app.fetch(request)),
      (x) => x.status !== 200,
      () =>
        family === null
          ? undefined
          : familyRevocation(family),
    );
    noServerError(a);
    if (a.status === 200) {
      if (ent === null) fail("a token was issued for a request without valid credentials", a);
      checkIssued(world, a, ent);
      bump(tally, `issued-${ent.grant}`);
    } else {
      const code = oauthError(a, { head: sent.method === "HEAD" });
      bump(tally, code || "head");
      if (isPristine(spec) && ent !== null && grantedScope(world, ent) !== null) fail("a valid, unmutated request was refused", a);
    }
    if (isPristine(spec)) bump(tally, "pristine");
    if (family !== null) bump(tally, "replay");
    // Counted by what was sent (a form the server can read, carrying an assertion parameter), not by
    // the spec: an assertion mutation may send nothing (both parts null) or be undone by a later one.
    const form = sent.body === null ? null : parseFormStrict(sent.body, TOKEN_REQUEST_PARAMETERS);
    if (form !== null && (form.has("client_assertion") || form.has("client_assertion_type"))) bump(tally, a.status === 200 ? "assertion-200" : "assertion-refused");
    return a.status;
  });
  console.log(`token endpoint: ${summary(tally)}`);
  expect(tally.runs).toBeGreaterThanOrEqual(RUNS);
  // The generator must reach both sides, or "no token for bad credentials" would prove nothing.
  if (COVERAGE_CHECKS) for (const label of ["issued-client_credentials", "issued-password", "issued-refresh_token", "invalid_client", "invalid_request", "invalid_grant", "invalid_scope", "replay", "assertion-refused"]) {
    expect(tally.labels.get(label) ?? 0, label).toBeGreaterThan(label === "replay" || label === "assertion-refused" ? RUNS / 2000 : RUNS / 500);
  }
});
