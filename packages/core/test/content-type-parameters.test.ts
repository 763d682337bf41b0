/**
 * Content-Type with a quoted parameter value (RFC 9110 §5.6.6: a quoted-string may hold "," and
 * ";"): the media type is still what it names. Until 2026-12-01 any "," refused the request (1008 on
 * the plant store, invalid_request on the token endpoint), and `charset` was looked for inside
 * quoted values too. Two Content-Type fields joined by ", " are still refused.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { BASE, basic, clientToken, harness, type Harness } from "./helpers.js";
import { PLANTS_URL, postPlant, read } from "./api-helpers.js";

let h: Harness;
let token: string;

beforeEach(async () => {
  h = await harness();
  token = await clientToken(h);
});

describe("POST /plants Content-Type with a quoted parameter", () => {
  it("takes application/json whose parameter's quoted value holds a comma (RFC 9110 §5.6.6)", async () => {
    const r = await read(await postPlant(h.app, '{"id":41,"name":"fern"}', { token, contentType: 'application/json; profile="a,b"' }));
    expect({ status: r.status, text: r.text }).toEqual({ status: 200, text: '{"id":41,"name":"fern"}' });
  });

  it("reads charset as a parameter, not inside a quoted value; refuses a charset other than UTF-8 given as one", async () => {
    const ok = await read(await postPlant(h.app, '{"id":43,"name":"fern"}', { token, contentType: 'application/json; profile="x;charset=latin1"; charset="UTF-8"' }));
    expect({ status: ok.status, text: ok.text }).toEqual({ status: 200, text: '{"id":43,"name":"fern"}' });
    const latin = await read(await postPlant(h.app, '{"id":44,"name":"fern"}', { token, contentType: 'application/json; profile="a,b"; charset="latin1"' }));
    expect(latin.status).toBe(400);
    expect((latin.body as { error: number }).error).toBe(1008);
    // An unterminated quote names no media type.
    const open = await read(await postPlant(h.app, '{"id":45,"name":"fern"}', { token, contentType: 'application/json; profile="a,b' }));
    expect((open.body as { error: number }).error).toBe(1008);
  });

  it("the token endpoint takes a form Content-Type with such a parameter", async () => {
    const res = await h.app.fetch(
      new Request(`${BASE}/UserService/connect/token`, {
        method: "POST",
        headers: { "content-type": 'application/x-www-form-urlencoded; profile="a,b"', authorization: basic(h.clientId, h.clientSecret) },
        body: "grant_type=client_credentials",
      }),
    );
    expect(res.status).toBe(200);
    expect(((await res.json()) as { token_type: string }).token_type).toBe("Bearer");
  });

  it("still refuses two Content-Type values joined by a comma (the case the comma rule is for)", async () => {
    const r = await read(await postPlant(h.app, '{"id":42,"name":"fern"}', { token, contentType: "application/json, text/plain" }));
    expect(r.status).toBe(400);
    expect((r.body as { error: number }).error).toBe(1008);
  });
});

describe("two Content-Type fields whose quotes pair up across the join (accepted by this session's first quoted-value reader)", () => {
  it("POST /plants: application/json; a=\"x + text/plain; b=\" (two fields) is refused, 1008", async () => {
    const headers = new Headers({ authorization: `Bearer ${token}` });
    headers.append("content-type", 'application/json; a="x');
    headers.append("content-type", 'text/plain; b="');
    // What the app sees (the Node adapter combines rawHeaders the same way).
    expect(headers.get("content-type")).toBe('application/json; a="x, text/plain; b="');
    const r = await read(await h.app.fetch(new Request(PLANTS_URL, { method: "POST", headers, body: '{"id":51,"name":"fern"}' })));
    expect({ status: r.status, error: (r.body as { error?: number } | undefined)?.error }).toEqual({ status: 400, error: 1008 });
  });

  it("the token endpoint: a form type then text/plain (two fields) is refused as invalid_request", async () => {
    const headers = new Headers({ authorization: basic(h.clientId, h.clientSecret) });
    headers.append("content-type", 'application/x-www-form-urlencoded; a="x');
    headers.append("content-type", 'text/plain; b="');
    const res = await h.app.fetch(new Request(`${BASE}/UserService/connect/token`, { method: "POST", headers, body: "grant_type=client_credentials" }));
    expect([res.status, await res.json()]).toEqual([400, { error: "invalid_request", error_description: "The request body must be application/x-www-form-urlencoded." }]);
  });
});
