import fetch from "node-fetch";
import { describe, expect, it } from "vitest";
import type { FetchApp } from "../src/index.js";
import { echoApp, rawExchange, start, type Echo } from "./support.js";

// The request listener hands the app a lightweight Request; these tests pin down that it behaves
// as a real undici Request wherever an app can tell the difference.

/** Serves an app that records what `inspect` returns for each request, answering its JSON. */
async function probe(inspect: (request: Request) => Promise<unknown>): Promise<string> {
  const app: FetchApp = {
    async fetch(request) {
      try {
        return Response.json({ ok: await inspect(request) });
      } catch (error) {
        return Response.json({ error: error instanceof Error ? error.name : String(error) });
      }
    },
  };
  return (await start(app)).url;
}

describe("the listener's request", () => {
  it("is an instance of Request and answers members it does not implement from a real one", async () => {
    const url = await probe(async (request) => ({
      isRequest: request instanceof Request,
      tag: Object.prototype.toString.call(request),
      cache: request.cache,
      redirect: request.redirect,
      mode: request.mode,
      keepalive: request.keepalive,
      method: request.method,
    }));
    const response = await fetch(`${url}/x`);
    expect(await response.json()).toEqual({
      ok: {
        isRequest: true,
        tag: "[object Request]",
        cache: "default",
        redirect: "follow",
        mode: "cors",
        keepalive: false,
        method: "GET",
      },
    });
  });

  it("clones with the body, and both copies read the same bytes", async () => {
    const url = await probe(async (request) => {
      const copy = request.clone();
      return { isRequest: copy instanceof Request, url: copy.url, a: await request.text(), b: await copy.text() };
    });
    const response = await fetch(`${url}/c?q=1`, { method: "POST", body: "same bytes" });
    expect(await response.json()).toEqual({ ok: { isRequest: true, url: `${url}/c?q=1`, a: "same bytes", b: "same bytes" } });
  });

  it("parses formData() through the real Request", async () => {
    const url = await probe(async (request) => Object.fromEntries(await request.formData()));
    const response = await fetch(`${url}/f`, {
      method: "POST",
      body: "a=1&b=two+words",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(await response.json()).toEqual({ ok: { a: "1", b: "two words" } });
  });

  it("tracks bodyUsed and refuses a second read, like a Request", async () => {
    const url = await probe(async (request) => {
      const before = request.bodyUsed;
      const text = await request.text();
      const after = request.bodyUsed;
      const again = await request.text().then(
        () => "read twice",
        (error: unknown) => (error instanceof TypeError ? "TypeError" : String(error)),
      );
      let clone: string;
      try {
        request.clone();
        clone = "cloned a used body";
      } catch (error) {
        clone = error instanceof TypeError ? "TypeError" : String(error);
      }
      return { before, text, after, again, clone, realBodyUsed: request.bodyUsed };
    });
    const response = await fetch(`${url}/`, { method: "POST", body: "once" });
    expect(await response.json()).toEqual({
      ok: { before: false, text: "once", after: true, again: "TypeError", clone: "TypeError", realBodyUsed: true },
    });
  });

  it("reads json() and an exactly sized arrayBuffer()", async () => {
    const jsonUrl = await probe(async (request) => request.json());
    const json = await fetch(`${jsonUrl}/`, { method: "POST", body: '{"a":[1,"\u2713"]}' });
    expect(await json.json()).toEqual({ ok: { a: [1, "\u2713"] } });

    const bufferUrl = await probe(async (request) => {
      const buffer = await request.arrayBuffer();
      return { size: buffer.byteLength, text: new TextDecoder().decode(buffer) };
    });
    const buffer = await fetch(`${bufferUrl}/`, { method: "PUT", body: "twelve bytes" });
    expect(await buffer.json()).toEqual({ ok: { size: 12, text: "twelve bytes" } });
  });

  it("has a null body and empty reads for GET", async () => {
    const url = await probe(async (request) => ({
      body: request.body,
      bodyUsed: request.bodyUsed,
      text: await request.text(),
      bytes: (await request.arrayBuffer()).byteLength,
    }));
    const response = await fetch(`${url}/`);
    expect(await response.json()).toEqual({ ok: { body: null, bodyUsed: false, text: "", bytes: 0 } });
  });

  it.each([
    "/plain/path?x=1&y=2",
    "/a/.hidden/..x",
    "/a/...",
    "/a/%2e%2e%2e/b?/../c",
    "/x%5Cy?\\z",
    "/q'?a='b'",
    "/caret^and`tick`?x=^`",
    "/sp%20ace?x=%20",
    "/brace{}?{}",
    "/pipe|?|",
  ])("gives %s the URL a real Request would have", async (path) => {
    const { url } = await start(echoApp);
    const { status, body } = await rawExchange(url, `GET ${path} HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n`);
    expect(status).toBe(200);
    const echo = JSON.parse(body.toString()) as Echo;
    expect(echo.url).toBe(new Request(`http://example.com${path}`).url);
  });

  // The URL parser would make another path of these (dot segments resolved, `\` read as `/`): the
  // listener refuses them rather than serve a path a guard matching the target as sent never saw.
  it.each(["/a/%2e%2e/b", "/a/%2E/b?c", "/a/./b/../c", "/x%5Cy\\z"])("refuses %s with its 400", async (path) => {
    const { url } = await start(echoApp);
    const { status, body } = await rawExchange(url, `GET ${path} HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n`);
    expect({ status, body: body.toString() }).toEqual({
      status: 400,
      body: '{"error":"invalid_request","error_description":"The request target\'s path holds a dot segment or a backslash; send the path resolved."}',
    });
  });
});
