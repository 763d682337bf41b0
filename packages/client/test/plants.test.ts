/**
 * int64 plant ids are exact on the wire both ways: the request writes the bigint's digits as a
 * raw JSON number, and the response's digits are read losslessly (JSON.parse would round them).
 */
import { describe, expect, it } from "vitest";
import { parseLosslessJson, JsonNumber } from "../src/lossless-json.js";
import { clientOn, fakeTokenEndpoint, headerOf, newMock } from "./support.js";

const MAX = 9223372036854775807n;
const MIN = -9223372036854775808n;

/** A fake POST /plants that echoes the request body text back, as the real one does. */
function echoPlants() {
  const fm = newMock();
  fakeTokenEndpoint(fm);
  fm.post("path:/plants", (call) => ({ status: 200, headers: { "content-type": "application/json" }, body: String(call.options.body) }), { name: "plants" });
  return fm;
}

describe("createPlant", () => {
  it.each([
    [MAX, "9223372036854775807"],
    [MIN, "-9223372036854775808"],
    [9007199254740993n, "9007199254740993"], // 2^53 + 1: the first integer a double cannot hold
    [0n, "0"],
    [-1n, "-1"],
  ])("sends %s as the raw JSON number %s and reads it back exactly", async (id, digits) => {
    const fm = echoPlants();
    const plant = await clientOn(fm).createPlant({ id, name: "Monstera", tag: "indoor" });
    expect(plant).toEqual({ id, name: "Monstera", tag: "indoor" });
    expect(typeof plant.id).toBe("bigint");
    const call = fm.callHistory.calls("plants")[0]!;
    expect(call.options.body).toBe(`{"id":${digits},"name":"Monstera","tag":"indoor"}`);
    expect(headerOf(call, "content-type")).toBe("application/json");
    expect(headerOf(call, "authorization")).toBe("Bearer at-1");
  });

  it("reads a response id that JSON.parse would round", async () => {
    const fm = newMock();
    fakeTokenEndpoint(fm);
    const text = '{ "name" : "Fern", "id" : 9223372036854775807 , "extra": [1.5e300, {"nested": "x\\u00e9\\"y"}] }';
    fm.post("path:/plants", { status: 200, body: text });
    expect(BigInt(JSON.parse(text).id)).toBe(2n ** 63n); // what JSON.parse makes of it: off by one
    expect(await clientOn(fm).createPlant({ id: MAX, name: "Fern" })).toEqual({ id: MAX, name: "Fern" });
  });

  it("omits tag when not given, and returns no tag when the server stored none", async () => {
    const fm = echoPlants();
    const plant = await clientOn(fm).createPlant({ id: 5n, name: "Cactus" });
    expect(plant).toEqual({ id: 5n, name: "Cactus" });
    expect("tag" in plant).toBe(false);
    expect(fm.callHistory.calls("plants")[0]!.options.body).toBe('{"id":5,"name":"Cactus"}');
  });

  it("escapes name and tag as JSON strings", async () => {
    const fm = echoPlants();
    const name = 'Aloe "vera" \\ \n ünï 𝄞';
    const plant = await clientOn(fm).createPlant({ id: 6n, name, tag: "</script>" });
    expect(plant).toEqual({ id: 6n, name, tag: "</script>" });
    expect(JSON.parse(String(fm.callHistory.calls("plants")[0]!.options.body))).toEqual({ id: 6, name, tag: "</script>" });
  });
});

describe("parseLosslessJson", () => {
  it("keeps every number's text", () => {
    const v = parseLosslessJson('[9223372036854775807, -9223372036854775808, 1.50, 2e10, 0]') as JsonNumber[];
    expect(v.map((n) => n.raw)).toEqual(["9223372036854775807", "-9223372036854775808", "1.50", "2e10", "0"]);
    expect(v.map((n) => n.toBigInt())).toEqual([MAX, MIN, null, null, 0n]);
  });

  it("parses what JSON.parse parses (numbers aside)", () => {
    const text = '{"a":[true,false,null,"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\ud834\\udd1e"],"b":{},"c":[]}';
    expect(parseLosslessJson(text)).toEqual(JSON.parse(text));
  });

  it.each(["", "{", '{"a":1,}', '{"a":1 "b":2}', "[1,]", "01", "-", '"\u0001"', '"\\x"', '{"a":1}x', '{"a":1,"a":2}', "tru", "[".repeat(100)])(
    "rejects %j with a SyntaxError",
    (text) => {
      expect(() => parseLosslessJson(text)).toThrow(SyntaxError);
    },
  );
});
