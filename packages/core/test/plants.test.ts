/**
 * POST /plants: NewPlant {id: int64, name, tag?} -> 200 Plant; every failure 400 {error: int32, message}
 * with its own documented number (errors/index.ts ApiErrorCode), and never a partial write.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { createMemoryStorage, StorageError, type Storage } from "../src/index.js";
import { clientToken, harness, type Harness } from "./helpers.js";
import { postPlant, read } from "./api-helpers.js";

let h: Harness;
let token: string;

beforeEach(async () => {
  h = await harness();
  token = await clientToken(h);
});

const post = async (body: BodyInit, contentType: string | null = "application/json") => read(await postPlant(h.app, body, { token, contentType }));

/** Proves nothing was stored under `id`: storage has no such plant and a fresh valid POST of that id succeeds. */
async function expectNothingStoredAt(id: bigint) {
  expect(await h.app.storage.plants.get(id)).toBeNull();
  const r = await post(`{"id":${id},"name":"probe"}`);
  expect(r.status).toBe(200);
  expect(r.text).toBe(`{"id":${id},"name":"probe"}`);
}

function expect400(r: Awaited<ReturnType<typeof read>>, error: number, message: string | RegExp) {
  expect(r.status).toBe(400);
  expect(r.contentType).toBe("application/json");
  expect(r.body).toEqual({ error, message: typeof message === "string" ? message : expect.stringMatching(message) });
  // Error.error is int32 (spec: Error schema).
  expect(Number.isInteger((r.body as { error: number }).error)).toBe(true);
}

describe("POST /plants success", () => {
  it("returns 200 with the stored plant, exactly as JSON text", async () => {
    const r = await post('{"id":1,"name":"fern","tag":"indoor"}');
    expect(r.status).toBe(200);
    expect(r.contentType).toBe("application/json");
    expect(r.text).toBe('{"id":1,"name":"fern","tag":"indoor"}');
    expect(await h.app.storage.plants.get(1n)).toEqual({ id: 1n, name: "fern", tag: "indoor" });
  });

  it("omits tag when it was not given", async () => {
    const r = await post('{"id":2,"name":"fern"}');
    expect(r.status).toBe(200);
    expect(r.text).toBe('{"id":2,"name":"fern"}');
    expect(await h.app.storage.plants.get(2n)).toEqual({ id: 2n, name: "fern", tag: null });
  });

  it("int64 extremes round-trip exactly in the response text (no float rounding)", async () => {
    for (const id of ["9223372036854775807", "-9223372036854775808", "9007199254740993", "-9007199254740993", "0"]) {
      const r = await post(`{"id":${id},"name":"n${id}"}`);
      expect(r.status).toBe(200);
      expect(r.text).toBe(`{"id":${id},"name":"n${id}"}`);
      expect(await h.app.storage.plants.get(BigInt(id))).toEqual({ id: BigInt(id), name: `n${id}`, tag: null });
    }
  });

  it("accepts application/json with a charset parameter and media types in any case", async () => {
    expect((await post('{"id":3,"name":"a"}', "application/json; charset=utf-8")).text).toBe('{"id":3,"name":"a"}');
    expect((await post('{"id":4,"name":"b"}', "Application/JSON")).text).toBe('{"id":4,"name":"b"}');
  });

  it("ignores members the schema does not name (not stored, not echoed), including __proto__", async () => {
    const r = await post('{"id":5,"name":"fern","color":"green","__proto__":{"tag":"injected"}}');
    expect(r.status).toBe(200);
    expect(r.text).toBe('{"id":5,"name":"fern"}');
    expect(await h.app.storage.plants.get(5n)).toEqual({ id: 5n, name: "fern", tag: null });
  });

  it("keeps non-ASCII text and JSON escapes intact", async () => {
    const r = await post('{"id":6,"name":"Fougère \\u00e9\\n\\"x\\"","tag":"🌿"}');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ id: 6, name: 'Fougère é\n"x"', tag: "🌿" });
  });

  it("accepts insignificant whitespace around tokens (RFC 8259 §2)", async () => {
    const r = await post(' \t\r\n{ "id" : 8 ,\n "name" : "fern" } \n');
    expect(r.text).toBe('{"id":8,"name":"fern"}');
  });

  it("accepts a body of exactly the size limit", async () => {
    const core = '{"id":9,"name":"fern"}';
    const r = await post(core + " ".repeat(65_536 - core.length));
    expect(r.status).toBe(200);
    expect(r.text).toBe(core);
  });
});

describe("POST /plants rejections (400, documented number, nothing stored)", () => {
  const MAX = 9223372036854775807n;
  const MIN = -9223372036854775808n;
  const INVALID_JSON = /^The body is not valid JSON: .+\.$/;

  // [case, body, error, message, ids that must remain free afterwards]
  const cases: Array<[string, string, number, string | RegExp, bigint[]]> = [
    ["id 2^63 (one past int64 max)", '{"id":9223372036854775808,"name":"fern"}', 1005, "id must be a signed 64-bit integer.", [MAX, MIN]],
    ["id -2^63-1 (one below int64 min)", '{"id":-9223372036854775809,"name":"fern"}', 1005, "id must be a signed 64-bit integer.", [MAX, MIN]],
    ["id with 400 digits", `{"id":${"9".repeat(400)},"name":"fern"}`, 1005, "id must be a signed 64-bit integer.", [MAX]],
    ["id 1.5", '{"id":1.5,"name":"fern"}', 1004, "id must be an integer.", [1n, 2n]],
    ["id 1e3", '{"id":1e3,"name":"fern"}', 1004, "id must be an integer.", [1000n]],
    ["id 1.0", '{"id":1.0,"name":"fern"}', 1004, "id must be an integer.", [1n]],
    ['id "12" (string)', '{"id":"12","name":"fern"}', 1004, "id must be an integer.", [12n]],
    ["id true", '{"id":true,"name":"fern"}', 1004, "id must be an integer.", [1n]],
    ["id an object", '{"id":{"value":1},"name":"fern"}', 1004, "id must be an integer.", [1n]],
    ["id null", '{"id":null,"name":"fern"}', 1003, "id is required.", [0n]],
    ["id missing", '{"name":"fern"}', 1003, "id is required.", [0n]],
    ["name missing", '{"id":1}', 1003, "name is required.", [1n]],
    ["name null", '{"id":1,"name":null}', 1003, "name is required.", [1n]],
    ["name numeric", '{"id":1,"name":42}', 1004, "name must be a string.", [1n]],
    ["name an array", '{"id":1,"name":["fern"]}', 1004, "name must be a string.", [1n]],
    ["name empty", '{"id":1,"name":""}', 1009, "name must be 1 to 256 characters.", [1n]],
    ["name of 257 characters", `{"id":1,"name":"${"n".repeat(257)}"}`, 1009, "name must be 1 to 256 characters.", [1n]],
    ["name with U+0000", '{"id":1,"name":"fe\\u0000rn"}', 1009, "name must not contain U+0000 or unpaired surrogates.", [1n]],
    ["name with a lone surrogate", '{"id":1,"name":"fe\\ud800rn"}', 1009, "name must not contain U+0000 or unpaired surrogates.", [1n]],
    ["tag with U+0000", '{"id":1,"name":"fern","tag":"\\u0000"}', 1009, "tag must not contain U+0000 or unpaired surrogates.", [1n]],
    ["tag with a lone low surrogate", '{"id":1,"name":"fern","tag":"\\udc00x"}', 1009, "tag must not contain U+0000 or unpaired surrogates.", [1n]],
    ["tag numeric", '{"id":1,"name":"fern","tag":7}', 1004, "tag must be a string.", [1n]],
    ["tag boolean", '{"id":1,"name":"fern","tag":false}', 1004, "tag must be a string.", [1n]],
    ["tag of 257 characters", `{"id":1,"name":"fern","tag":"${"t".repeat(257)}"}`, 1009, "tag must be at most 256 characters.", [1n]],
    ["non-JSON text", "id=1&name=fern", 1001, INVALID_JSON, [1n]],
    ["truncated JSON", '{"id":1,"name":"fe', 1001, INVALID_JSON, [1n]],
    ["truncated after a member", '{"id":1,"name":"fern",', 1001, INVALID_JSON, [1n]],
    ["empty body", "", 1001, INVALID_JSON, [1n]],
    ["whitespace-only body", "  \n ", 1001, INVALID_JSON, [1n]],
    ["trailing comma", '{"id":1,"name":"fern",}', 1001, INVALID_JSON, [1n]],
    ["single quotes", "{'id':1,'name':'fern'}", 1001, INVALID_JSON, [1n]],
    ["leading zero in a number", '{"id":01,"name":"fern"}', 1001, INVALID_JSON, [1n]],
    ["NaN", '{"id":NaN,"name":"fern"}', 1001, INVALID_JSON, [0n]],
    ["raw control character in a string", '{"id":1,"name":"fe\u0001rn"}', 1001, INVALID_JSON, [1n]],
    ["two JSON values", '{"id":1,"name":"fern"}{"id":2,"name":"rose"}', 1001, INVALID_JSON, [1n, 2n]],
    ["duplicate key", '{"id":1,"name":"fern","id":2}', 1001, INVALID_JSON, [1n, 2n]],
    ["duplicate key spelled with an escape", '{"id":1,"name":"fern","\\u0069d":2}', 1001, INVALID_JSON, [1n, 2n]],
    ["duplicate name", '{"id":1,"name":"fern","name":"rose"}', 1001, INVALID_JSON, [1n]],
    ["array body", '[{"id":1,"name":"fern"}]', 1002, "The body must be a JSON object.", [1n]],
    ["top-level string", '"{\\"id\\":1,\\"name\\":\\"fern\\"}"', 1002, "The body must be a JSON object.", [1n]],
    ["top-level number", "1", 1002, "The body must be a JSON object.", [1n]],
    ["top-level null", "null", 1002, "The body must be a JSON object.", [1n]],
    [
      "100 levels of nesting",
      `{"id":1,"name":"fern","extra":${"[".repeat(100)}${"]".repeat(100)}}`,
      1001,
      INVALID_JSON,
      [1n],
    ],
  ];

  it.each(cases)("%s", async (_label, body, error, message, free) => {
    expect400(await post(body), error, message);
    for (const id of free) await expectNothingStoredAt(id);
  });

  it("a body over the limit (2 MB) -> 1007", async () => {
    const body = `{"id":1,"name":"${"a".repeat(2 * 1024 * 1024)}"}`;
    expect400(await post(body), 1007, "The body exceeds 65536 bytes.");
    await expectNothingStoredAt(1n);
  });

  it("a body one byte over the limit -> 1007", async () => {
    const core = '{"id":1,"name":"fern"}';
    expect400(await post(core + " ".repeat(65_537 - core.length)), 1007, "The body exceeds 65536 bytes.");
    await expectNothingStoredAt(1n);
  });

  it("an endless streamed body -> 1007, and reading stops soon after the limit", async () => {
    let pulled = 0;
    let cancelled = false;
    const chunk = new TextEncoder().encode(" ".repeat(16_384));
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += chunk.byteLength;
        controller.enqueue(chunk);
      },
      cancel() {
        cancelled = true;
      },
    });
    expect400(await post(stream), 1007, "The body exceeds 65536 bytes.");
    expect(pulled).toBeLessThanOrEqual(65_536 + 4 * 16_384);
    expect(cancelled).toBe(true);
  });

  it("a body stream that fails midway -> 400 1001, nothing stored", async () => {
    let sent = false;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (!sent) {
          sent = true;
          controller.enqueue(new TextEncoder().encode('{"id":1,"name":"fe'));
        } else controller.error(new Error("connection reset"));
      },
    });
    expect400(await post(stream), 1001, "The body could not be read.");
    await expectNothingStoredAt(1n);
  });

  it.each([
    ["text/plain", "text/plain"],
    ["form encoding", "application/x-www-form-urlencoded"],
    ["no content type", null],
    ["a type merely starting with application/json", "application/jsonx"],
    ["two Content-Type headers, joined", "application/json, text/plain"],
  ])("wrong content type (%s) -> 1008", async (_label, contentType) => {
    expect400(await post('{"id":1,"name":"fern"}', contentType), 1008, "The body must be application/json.");
    await expectNothingStoredAt(1n);
  });

  it("invalid UTF-8 bytes -> 1001", async () => {
    const prefix = new TextEncoder().encode('{"id":1,"name":"f');
    const suffix = new TextEncoder().encode('rn"}');
    for (const bad of [[0xff], [0xc3], [0xed, 0xa0, 0x80] /* encoded surrogate */, [0xc0, 0xaf] /* overlong */]) {
      const body = new Uint8Array([...prefix, ...bad, ...suffix]);
      expect400(await post(body), 1001, "The body is not valid UTF-8.");
    }
    await expectNothingStoredAt(1n);
  });

  it("a duplicate id -> 1006, and the first plant is unchanged", async () => {
    expect((await post('{"id":77,"name":"fern","tag":"indoor"}')).status).toBe(200);
    expect400(await post('{"id":77,"name":"rose","tag":"outdoor"}'), 1006, "A plant with id 77 already exists.");
    expect400(await post('{"id":77,"name":"rose"}'), 1006, "A plant with id 77 already exists.");
    expect(await h.app.storage.plants.get(77n)).toEqual({ id: 77n, name: "fern", tag: "indoor" });
  });

  it("a duplicate int64-max id is detected exactly (no rounding collisions with neighbours)", async () => {
    expect((await post('{"id":9223372036854775807,"name":"max"}')).status).toBe(200);
    expect((await post('{"id":9223372036854775806,"name":"max-1"}')).text).toBe('{"id":9223372036854775806,"name":"max-1"}');
    expect400(await post('{"id":9223372036854775807,"name":"again"}'), 1006, "A plant with id 9223372036854775807 already exists.");
    expect(await h.app.storage.plants.get(9223372036854775807n)).toEqual({ id: 9223372036854775807n, name: "max", tag: null });
  });

  it("concurrent creates of one id: exactly one wins", async () => {
    const results = await Promise.all([1, 2, 3, 4].map((n) => post(`{"id":500,"name":"p${n}"}`)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 400, 400, 400]);
    const winner = results.find((r) => r.status === 200)!;
    const stored = await h.app.storage.plants.get(500n);
    expect(winner.text).toBe(`{"id":500,"name":"${stored!.name}"}`);
    for (const r of results.filter((x) => x.status === 400)) expect(r.body).toEqual({ error: 1006, message: "A plant with id 500 already exists." });
  });

  it("error messages do not echo the submitted values", async () => {
    const secretish = "s3cr3t-value-should-not-echo";
    for (const body of [`{"id":"${secretish}","name":"x"}`, `{"id":1,"name":${secretish}}`, `{"id":1,"name":7,"tag":"${secretish}"}`]) {
      const r = await post(body);
      expect(r.status).toBe(400);
      expect(r.text).not.toContain(secretish);
    }
  });
});

describe("POST /plants when storage fails (design: outage -> 503, unexpected -> 500, nothing internal leaked)", () => {
  function failingPlants(error: Error) {
    const storage: Storage = createMemoryStorage();
    const logged: unknown[] = [];
    const failing: Storage = {
      ...storage,
      plants: {
        ...storage.plants,
        async create() {
          throw error;
        },
      },
    };
    const logger = { error: (...args: unknown[]) => logged.push(args), warn() {} };
    return { failing, logged, logger };
  }

  it("a StorageError -> 503 {error:1503} with Retry-After", async () => {
    const { failing, logged, logger } = failingPlants(new StorageError("connection refused to db-internal-7:5432"));
    const hh = await harness({ storage: failing, logger });
    const res = await postPlant(hh.app, '{"id":1,"name":"fern"}', { token: await clientToken(hh) });
    expect(res.headers.get("retry-after")).toBe("5");
    const r = await read(res);
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ error: 1503, message: "The service is temporarily unavailable; retry later." });
    expect(r.text).not.toContain("db-internal-7");
    expect(logged.length).toBe(1);
  });

  it("an unexpected error -> 500 {error:1500} without internals", async () => {
    const { failing, logged, logger } = failingPlants(new TypeError("Cannot read properties of undefined (reading 'secretColumn')"));
    const hh = await harness({ storage: failing, logger });
    const r = await read(await postPlant(hh.app, '{"id":1,"name":"fern"}', { token: await clientToken(hh) }));
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ error: 1500, message: "The server encountered an unexpected error." });
    expect(r.text).not.toContain("secretColumn");
    expect(logged.length).toBe(1);
  });
});
