/**
 * If-None-Match is read on every GET of `/openapi.json` (always served, no authentication) and of
 * the reference page and its files: a hostile field must cost time linear in its length. A field of
 * white space that does not end the field (`"a"` + spaces + `x`) made the trim's `[ \t]+$`
 * alternative try every start position: about 200 ms of event-loop time for one 16 KiB request on
 * Node (the most its header limit lets through), seconds for the 128 KB Workers allow.
 */
import { describe, expect, it } from "vitest";
import { createPlantgate } from "../src/index.js";
import { notModified } from "../src/http/conditional.js";
import { BASE } from "./helpers.js";

const quiet = { logger: { error() {}, warn() {} } };

/** Milliseconds `fn` takes, the least of up to three runs (so a busy machine does not make a slow one). */
async function cost(fn: () => unknown): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < 3 && best >= 100; i++) {
    const t = performance.now();
    await fn();
    best = Math.min(best, performance.now() - t);
  }
  return best;
}

describe("If-None-Match parsing cost", () => {
  it("a field of 40 000 blanks inside it is parsed in linear time (notModified)", async () => {
    for (const blank of [" ", "\t"]) {
      const field = `"a"${blank.repeat(40_000)}x`;
      expect(notModified(field, '"a"')).toBe(false);
      // Linear work on 40 KB is well under a millisecond; the quadratic trim took over a second here.
      expect(await cost(() => notModified(field, '"a"'))).toBeLessThan(100);
    }
  });

  it("GET /openapi.json with such a field is answered without holding the event loop (200, not seconds of CPU)", async () => {
    const app = createPlantgate(quiet);
    await (await app.fetch(new Request(`${BASE}/openapi.json`))).text(); // the document is built once
    const field = `"a"${" ".repeat(40_000)}x`;
    let status = 0;
    const ms = await cost(async () => {
      const res = await app.fetch(new Request(`${BASE}/openapi.json`, { headers: { "if-none-match": field } }));
      status = res.status;
      await res.arrayBuffer();
    });
    expect(status).toBe(200);
    expect(ms).toBeLessThan(100);
  });
});
