/**
 * The dot-segment / backslash check stands twice: `AMBIGUOUS` in @plantgate/node (hasAmbiguousPath,
 * the adapters' check of the target as sent) and `AMBIGUOUS_PATH` in @plantgate/core (`owns()`).
 * @plantgate/node depends on nothing of ours, so it cannot import core's; this package depends on
 * both, so the twins meet here: a change to one that forgets the other fails the first test.
 * The second counts how often one request through the middleware runs them.
 */
import express from "express";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createRequestListener } from "@plantgate/node";
import { afterEach, describe, expect, it } from "vitest";
import { AMBIGUOUS_PATH } from "../../core/src/app.js";
import { AMBIGUOUS } from "../../node/src/incoming.js";
import { plantgate } from "../src/index.js";
import { listen, plantgateApp } from "./support.js";

/** Dot segments (`%2e` in every case), near misses, and other segments. */
const SEGMENTS = ["", ".", "..", "...", ".a", "a.", "a", "%2e", "%2E", ".%2e", ".%2E", "%2e.", "%2E.", "%2e%2e", "%2E%2e", "%2e%2E", "%2E%2E", "%2e%2e%2e", "%2", "%2ex", "%252e", "%2f"];
/** What comes before the segment: nothing (the start), a slash, a path, a backslash, an authority. */
const BEFORE = ["", "/", "/a/", "/a", "//", "/a\\", "\\", "http://h/", "http://h", "a/", "/a\t", "/a\r/"];
/** What follows it: the end, a slash, the query, the fragment (holding dot segments too), a backslash, a tab, CR, LF. */
const AFTER = ["", "/", "/b", "?", "?q", "?x=/../", "#", "#f", "#/..", "\\", "\\b", "\t", "\r", "\n", "\r\n", "b", ";", "%2f", "/%2e"];
const TARGETS = BEFORE.flatMap((before) => SEGMENTS.flatMap((segment) => AFTER.map((after) => before + segment + after)));

describe("the ambiguous-path twins", () => {
  it(`agree on ${TARGETS.length} generated targets`, () => {
    const disagreements = TARGETS.filter((target) => AMBIGUOUS.test(target) !== AMBIGUOUS_PATH.test(target)).map((target) => JSON.stringify(target));
    expect(disagreements).toEqual([]);
    // Neither answers the same for everything (the set holds both kinds), and a few by name.
    const ambiguous = TARGETS.filter((target) => AMBIGUOUS.test(target));
    expect([ambiguous.length > 0, ambiguous.length < TARGETS.length]).toEqual([true, true]);
    const known = { "/a/../b": true, "/a/%2E%2e?x": true, "/a/.#f": true, "/a/%2e": true, "/a\\b": true, "/a\tb": true, "/a/b\n": true, "/a/...": false, "/a/.a/b": false, "/a/%2ex": false, "/a/%252e/b": false, "/a/b": false };
    for (const [target, answer] of Object.entries(known)) expect([target, AMBIGUOUS.test(target), AMBIGUOUS_PATH.test(target)]).toEqual([target, answer, answer]);
  });
});

describe("runs of the ambiguous-path check per request", () => {
  const realTest = RegExp.prototype.test;
  let runs = 0;
  afterEach(() => {
    RegExp.prototype.test = realTest;
  });
  /** Counts every `test` of either twin (the real method runs) for the request `send` makes. */
  async function counted(send: () => Promise<Response>): Promise<{ status: number; body: string; runs: number }> {
    runs = 0;
    RegExp.prototype.test = function (this: RegExp, s: string): boolean {
      if (this === AMBIGUOUS || this === AMBIGUOUS_PATH) runs++;
      return realTest.call(this, s);
    };
    try {
      const res = await send();
      return { status: res.status, body: await res.text(), runs };
    } finally {
      RegExp.prototype.test = realTest;
    }
  }
  const USE_POST = { status: 405, body: JSON.stringify({ error: "invalid_request", error_description: "Use POST for this endpoint." }) };

  async function expressOrigin(mount: "root" | "/auth", notFound: "next" | "respond"): Promise<string> {
    const pg = await plantgateApp();
    const app = express();
    if (mount === "root") app.use(plantgate(pg, { notFound }));
    else app.use("/auth", plantgate(pg, { notFound }));
    // The host's own route under plantgate's base path (not one of plantgate's).
    app.get("/auth/hosts-own", (_req, res) => {
      res.json({ host: true });
    });
    return listen(app);
  }

  // Until 2026-12-02 three with owns() asked (notFound "next"): the middleware's own check of
  // req.originalUrl, createNodeRequest's of the same string (req.url is set to it first), owns()'s.
  for (const mount of ["root", "/auth"] as const) {
    it(`Express (${mount} mount, notFound "next"): twice, its own check of the target and owns()'s; on the host's own path too`, async () => {
      const origin = await expressOrigin(mount, "next");
      expect(await counted(() => fetch(`${origin}/auth/UserService/connect/token`))).toEqual({ ...USE_POST, runs: 2 });
      expect(await counted(() => fetch(`${origin}/auth/hosts-own`))).toEqual({ status: 200, body: '{"host":true}', runs: 2 });
    });
  }

  it(`Express (notFound "respond", no owns() asked): once`, async () => {
    const origin = await expressOrigin("root", "respond");
    expect(await counted(() => fetch(`${origin}/auth/UserService/connect/token`))).toEqual({ ...USE_POST, runs: 1 });
  });

  it("the Node listener: once", async () => {
    const server: Server = createServer(createRequestListener(await plantgateApp()));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      expect(await counted(() => fetch(`${origin}/auth/UserService/connect/token`))).toEqual({ ...USE_POST, runs: 1 });
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
