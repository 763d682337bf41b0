/**
 * GET /rbac/ServerCommand/GetAccountList under generated requests: hostile bearer credentials
 * (src/auth.ts), generated raw query strings (numbers of every shape, repeats, bad escapes,
 * unknown parameters) and methods. A 200 must be exactly the page the store holds.
 */
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { ApiErrorCode } from "@plantgate/core";
import { expect, it } from "vitest";
import { authArb, authOutcome, headerText, resolveAuth } from "../src/auth.js";
import { apiError, fail, logsAreClean, noServerError, read, withStoreCheck } from "../src/invariants.js";
import { bump, runChunked, summary } from "../src/run.js";
import { COVERAGE_CHECKS, RUNS, RUNTIME_LABEL } from "../src/settings.js";
import { ISSUER, LIST_PATH, SERVER_COMMANDS, USER_APIS, type World } from "../src/world.js";

const MAX_PAGE_SIZE = 100;
const DEFAULT_PAGE_SIZE = 20;

const numberText = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 5 }).map(String) },
  { weight: 2, arbitrary: fc.integer({ min: -5, max: 150 }).map(String) },
  fc.constantFrom("0", "-0", "01", "+1", "1.0", "1e1", "1.5", " 1", "1 ", "0x1", "١", "１", "NaN", "Infinity", "", "abc", "2147483647", "2147483648", "99999999999999999999", "9007199254740993", "1%00", "%31", "%", "%zz", "1;2", "1,2", "[1]", "true"),
);

interface QuerySpec {
  parts: [string, string][];
  raw: string | null;
  method: string;
  extraHeaders: [string, string][];
}

const querySpecArb: fc.Arbitrary<QuerySpec> = fc.record({
  parts: fc.array(
    fc.oneof(
      { weight: 4, arbitrary: fc.tuple(fc.constantFrom("page", "pageSize"), numberText) },
      fc.tuple(fc.constantFrom("PAGE", "pagesize", "page_size", "page[]", "pageSize ", "p%61ge", "limit", "offset", "__proto__"), numberText),
    ),
    { maxLength: 3 },
  ),
  raw: fc.oneof({ weight: 10, arbitrary: fc.constant(null) }, fc.constantFrom("&&&", "=", "page", "page&pageSize", "%", "%E0%A4%A", "page=1#frag", "page=1&page=1", "pageSize=%F0%9F%8C%B1", "a=%00")),
  method: fc.oneof({ weight: 20, arbitrary: fc.constant("GET") }, fc.constantFrom("HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")),
  extraHeaders: fc.array(fc.tuple(fc.constantFrom("accept", "if-none-match", "range", "x-forwarded-host", "forwarded"), headerText(30)), { maxLength: 2 }),
});

/** The expected answer, from the design's rules ("page >= 1, pageSize 1..100, anything else is 400"). */
function expectQuery(search: URLSearchParams): { codes: Set<number>; page?: number; pageSize?: number; loose: boolean } {
  const codes = new Set<number>();
  let loose = false;
  const one = (name: "page" | "pageSize", max: number, code: number): number | undefined => {
    const all = search.getAll(name);
    if (all.length > 1) {
      codes.add(ApiErrorCode.repeatedParameter);
      // A repeat of an also-invalid value may be reported as either cause.
      codes.add(code);
      return undefined;
    }
    const v = all[0];
    if (v === undefined) return name === "page" ? 1 : DEFAULT_PAGE_SIZE;
    if (/^[1-9]\d*$/.test(v) && Number(v) <= max) return Number(v);
    // An empty value, leading zeros or a page past 2^31-1 are unspecified: refusing them is fine, as is reading them.
    if (v === "" || /^0+[1-9]\d*$/.test(v) || (name === "page" && /^[1-9]\d*$/.test(v))) loose = true;
    codes.add(code);
    return undefined;
  };
  const page = one("page", 2_147_483_647, ApiErrorCode.invalidPage);
  const pageSize = one("pageSize", MAX_PAGE_SIZE, ApiErrorCode.invalidPageSize);
  return { codes, ...(page !== undefined ? { page } : {}), ...(pageSize !== undefined ? { pageSize } : {}), loose };
}

async function expectedPage(world: World, page: number, pageSize: number): Promise<unknown> {
  const { items, total } = await world.storage.accounts.list((page - 1) * pageSize, pageSize);
  return {
    accounts: items.map((a) => ({ id: a.id, username: a.username, displayName: a.displayName, email: a.email, roles: a.roles, enabled: a.enabled, createdAt: new Date(a.createdAt).toISOString() })),
    page,
    pageSize,
    total,
    totalPages: Math.ceil(total / pageSize),
  };
}

it(`${RUNTIME_LABEL}GET GetAccountList: ${RUNS} generated requests: never a 5xx, {error:int32,message} errors, hostile tokens refused, scope enforced, 200 is exactly the stored page, nothing written`, async () => {
  const tally = await runChunked(fc.tuple(authArb, querySpecArb), async (world, [authSpec, q], tally) => {
    const { header, verdict } = await resolveAuth(world, authSpec);
    const query = [...q.parts.map(([k, v]) => `${encodeURIComponent(k)}=${v}`), ...(q.raw !== null ? [q.raw] : [])].join("&");
    const url = `${ISSUER}${LIST_PATH}${query === "" ? "" : `?${query}`}`;
    const headers = new Headers(q.extraHeaders);
    if (header !== null) headers.set("authorization", header);
    const request = new Request(url, { method: q.method, headers });
    // Listing never writes, so every request is held to "nothing changed".
    const a = await withStoreCheck(world, async () => read(await world.app.fetch(request)), () => true);
    noServerError(a);
    logsAreClean(world);
    const head = q.method === "HEAD";
    if (q.method !== "GET" && !head) {
      if (a.status !== 405) fail(`${q.method} must be 405`, a);
      apiError(a);
      bump(tally, "method");
      return a.status;
    }
    const code = a.status === 200 ? null : apiError(a, { head });
    const auth = authOutcome(verdict, a.status, head ? null : code);
    if (auth === "violation") fail(`auth verdict ${JSON.stringify(verdict)} but got ${a.status}/${String(code)}`, a);
    if (auth === null) {
      bump(tally, "refused-token");
      return a.status;
    }
    const hasScope = auth.scope.includes(USER_APIS) || auth.scope.includes(SERVER_COMMANDS);
    if (!hasScope) {
      if (a.status !== 403 || (!head && code !== ApiErrorCode.insufficientScope)) fail("a token without an API scope was not refused with 403", a);
      if (!/insufficient_scope/.test(a.headers.get("www-authenticate") ?? "")) fail("403 without error=insufficient_scope", a);
      bump(tally, "403");
      return a.status;
    }
    const expectation = expectQuery(new URL(url).searchParams);
    if (a.status === 200) {
      if (expectation.codes.size > 0 && !expectation.loose) fail(`a 200 for a query that must be refused (${[...expectation.codes].join(",")})`, a);
      if (a.headers.get("cache-control") !== "no-store") fail("an account page without Cache-Control: no-store", a);
      if (!head) {
        const body = a.json as { page: number; pageSize: number };
        const want = await expectedPage(world, body.page, body.pageSize);
        if (expectation.page !== undefined && body.page !== expectation.page) fail(`page ${body.page}, expected ${expectation.page}`, a);
        if (expectation.pageSize !== undefined && body.pageSize !== expectation.pageSize) fail(`pageSize ${body.pageSize}, expected ${expectation.pageSize}`, a);
        if (!isDeepStrictEqual(a.json, want)) fail(`the page is not what the store holds: expected ${JSON.stringify(want).slice(0, 300)}`, a);
        bump(tally, (want as { accounts: unknown[] }).accounts.length > 0 ? "page-with-accounts" : "page-empty");
      }
      return a.status;
    }
    if (head) {
      if (a.status !== 400) fail("HEAD with a valid token: only 200 or 400", a);
      return a.status;
    }
    if (!expectation.codes.has(code!)) fail(`error ${String(code)}; acceptable: ${[...expectation.codes].join(",") || "none (must be 200)"}`, a);
    bump(tally, `e${String(code)}`);
    return a.status;
  });
  console.log(`GetAccountList: ${summary(tally)}`);
  expect(tally.runs).toBeGreaterThanOrEqual(RUNS);
  if (COVERAGE_CHECKS) for (const label of ["page-with-accounts", "page-empty", "403", "refused-token", "e1101", "e1102", "e1103", "method"]) {
    expect(tally.labels.get(label) ?? 0, label).toBeGreaterThan(RUNS / 1000);
  }
});
