/**
 * The callgrind reading behind `count-http.ts`: a function's own instructions without the calls'
 * inclusive costs, groups, and JIT addresses named from a perf map.
 */
import { describe, expect, it } from "vitest";
import { groupOf, nameAt, parsePerfMap, selfCosts, summarize } from "../src/callgrind.js";

// Shaped as callgrind writes with --compress-strings=no: main (self 10 + 5) calls a JIT function
// (inclusive 40, of which 30 its own and 10 in a builtin it calls).
const FILE = [
  "version: 1",
  "events: Ir",
  "fn=(1) main",
  "16 10",
  "cfn=(2) 0x0000000000001010",
  "calls=1 0",
  "17 40",
  "18 5",
  "fn=(2) 0x0000000000001010",
  "0 30",
  "cfn=(3) Builtins_StringAdd_CheckNone",
  "calls=2 0",
  "+1 10",
  "fn=(3) Builtins_StringAdd_CheckNone",
  "0 10",
  "summary: 55",
].join("\n");

describe("callgrind reading", () => {
  it("counts each function's own instructions, not its calls'", () => {
    expect(Object.fromEntries(selfCosts(FILE))).toEqual({ main: 15, "0x0000000000001010": 30, Builtins_StringAdd_CheckNone: 10 });
  });

  it("names JIT addresses by the perf map entry that holds them, and says when none does", () => {
    const map = parsePerfMap("2000 40 JS:*encodeEventLine file:///work/x/bench/.build/plantgate.mjs:10:3\n1000 20 JS:~issueTokens file:///work/x/bench/.build/plantgate.mjs:5:1\n");
    expect(map.map((e) => e.start)).toEqual([0x1000, 0x2000]);
    expect(nameAt(map, 0x1010)).toBe("issueTokens plantgate.mjs:5:1");
    expect(nameAt(map, 0x2000)).toBe("encodeEventLine plantgate.mjs:10:3");
    expect(nameAt(map, 0x1020)).toBe("(unmapped)");
    expect(nameAt(map, 0x0fff)).toBe("(unmapped)");
    expect(nameAt([], 0x1000)).toBe("(unmapped)");
  });

  it("groups functions and sums JIT code by JavaScript function", () => {
    expect(groupOf("0x000000000d143040")).toBe("JIT code");
    expect(groupOf("v8::internal::compiler::GraphReducer::ReduceTop()")).toBe("optimizing compiler");
    expect(groupOf("v8::internal::Scavenger::ScavengePage(v8::internal::MemoryChunk*)")).toBe("garbage collector");
    expect(groupOf("Builtins_TypedArrayPrototypeSet")).toBe("V8 builtins");
    expect(groupOf("__ecp_nistz256_mul_montq")).toBe("OpenSSL");
    expect(groupOf("llhttp__internal__run")).toBe("llhttp");
    const map = parsePerfMap("1000 20 JS:*issueTokens file:///w/bench/.build/plantgate.mjs:5:1\n");
    const { groups, js, total } = summarize(selfCosts(FILE), map);
    expect(total).toBe(55);
    expect(Object.fromEntries(groups)).toEqual({ "other V8 and C++": 15, "JIT code": 30, "V8 builtins": 10 });
    expect(Object.fromEntries(js)).toEqual({ "issueTokens plantgate.mjs:5:1": 30 });
  });
});
