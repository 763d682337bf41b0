/**
 * POST /plants under generated requests: hostile bearer credentials (src/auth.ts) combined with
 * generated NewPlant bodies (src/plant-body.ts), content types and methods. Authentication comes
 * first (a refused token is 401 whatever the body); then the body reference decides which error
 * numbers are acceptable, and a 200 must echo exactly the plant that is now stored.
 */
import { expect, it } from "vitest";
import { authArb, authOutcome, resolveAuth } from "../src/auth.js";
import { apiError, fail, logsAreClean, noServerError, read, withStoreCheck, type Answer } from "../src/invariants.js";
import { expectPlant, plantBytes, plantSpecArb } from "../src/plant-body.js";
import { bump, runChunked, summary } from "../src/run.js";
import { COVERAGE_CHECKS, RUNS, RUNTIME_LABEL } from "../src/settings.js";
import { ISSUER, KNOWN_PLANT_ID } from "../src/world.js";
import fc from "fast-check";

/** The 200 body, with the int64 id kept exact (JSON.parse would round it). */
function plantOf(a: Answer): { id: bigint; name: string; tag: string | null } {
  const m = /^\{"id":(-?\d+),/.exec(a.text) ?? /"id":(-?\d+)[,}]/.exec(a.text);
  if (!m) fail("a 200 without an integer id", a);
  const body = JSON.parse(a.text.replace(/"id":(-?\d+)/, '"id":"$1"')) as Record<string, unknown>;
  const keys = Object.keys(body).sort().join();
  if (keys !== "id,name" && keys !== "id,name,tag") fail("a 200 whose members are not {id, name, tag?}", a);
  if (typeof body.name !== "string" || (body.tag !== undefined && typeof body.tag !== "string")) fail("a 200 with mistyped members", a);
  return { id: BigInt(m[1]!), name: body.name, tag: (body.tag as string | undefined) ?? null };
}

it(`${RUNTIME_LABEL}POST /plants: ${RUNS} generated requests: never a 5xx, {error:int32,message} errors, hostile tokens refused, 200 only for a valid NewPlant that is then stored, rejected requests write nothing`, async () => {
  const tally = await runChunked(fc.tuple(authArb, plantSpecArb), async (world, [authSpec, spec], tally) => {
    const { header, verdict } = await resolveAuth(world, authSpec);
    const bytes = plantBytes(spec, KNOWN_PLANT_ID);
    const headers = new Headers();
    if (header !== null) headers.set("authorization", header);
    if (spec.contentType !== null) headers.set("content-type", spec.contentType);
    const hasBody = spec.method !== "GET" && spec.method !== "HEAD";
    const request = new Request(`${ISSUER}/plants`, { method: spec.method, headers, ...(hasBody ? { body: bytes as Uint8Array<ArrayBuffer> } : {}) });
    const storedBefore = await world.storedPlantIds();
    const expectation = expectPlant(spec, bytes, (id) => storedBefore.has(id), KNOWN_PLANT_ID);

    const a = await withStoreCheck(world, async () => read(await world.app.fetch(request)), (x) => x.status !== 200);
    noServerError(a);
    logsAreClean(world);
    if (spec.method !== "POST") {
      if (a.status !== 405) fail(`${spec.method} /plants must be 405`, a);
      apiError(a, { head: spec.method === "HEAD" });
      bump(tally, "method");
      return a.status;
    }
    const code = a.status === 200 ? null : apiError(a);
    const auth = authOutcome(verdict, a.status, code);
    if (auth === "violation") fail(`auth verdict ${JSON.stringify(verdict)} but got ${a.status}/${String(code)} for ${String(header).slice(0, 200)}`, a);
    if (auth === null) {
      bump(tally, `refused-${authSpec.k}`);
      return a.status;
    }
    if (a.status === 200) {
      const plant = plantOf(a);
      if (storedBefore.has(plant.id)) fail("a 200 for an id that was already stored", a);
      const stored = await world.storage.plants.get(plant.id);
      if (!stored || stored.name !== plant.name || stored.tag !== plant.tag) fail(`the echoed plant is not what is stored: ${JSON.stringify(stored, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v))}`, a);
      if (!expectation.loose && expectation.ok === null) fail(`a 200 for a body that must be refused (acceptable: ${[...expectation.codes].join(",")})`, a);
      if (expectation.ok !== null && (expectation.ok.id !== plant.id || expectation.ok.name !== plant.name || expectation.ok.tag !== plant.tag)) {
        fail(`stored ${plant.id}/${JSON.stringify(plant.name)}/${JSON.stringify(plant.tag)}, expected ${expectation.ok.id}/${JSON.stringify(expectation.ok.name)}/${JSON.stringify(expectation.ok.tag)}`, a);
      }
      bump(tally, `stored-${authSpec.k}`);
      return a.status;
    }
    if (a.status === 401 || a.status === 403) fail("an accepted token was refused", a);
    if (!expectation.codes.has(code!)) {
      if (expectation.ok !== null && !expectation.loose) fail(`a valid NewPlant was refused`, a);
      fail(`error ${String(code)}; acceptable: ${[...expectation.codes].join(",")}`, a);
    }
    bump(tally, `e${String(code)}`);
    return a.status;
  });
  console.log(`POST /plants: ${summary(tally)}`);
  expect(tally.runs).toBeGreaterThanOrEqual(RUNS);
  if (COVERAGE_CHECKS) for (const label of ["stored-valid", "stored-crafted", "refused-crafted", "refused-mutated", "refused-none", "e1001", "e1003", "e1004", "e1005", "e1006", "e1008", "e1009", "method"]) {
    expect(tally.labels.get(label) ?? 0, label).toBeGreaterThan(RUNS / 1000);
  }
});
