/**
 * The address-less warning (core's `requestClientIp`) behind Express: a peer that disconnects
 * while a host middleware awaits leaves no `socket.remoteAddress` for the adapter to read, so
 * that request has no client address although the adapter is wired right. Until a review of
 * 2026-12-03 (its scratch test, adapted here) the warning then blamed the adapter ("pass the
 * peer's address as clientIp"); a request whose signal is aborted is no warning now.
 */
import express from "express";
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { plantgate } from "../src/index.js";
import { listen, plantgateApp } from "./support.js";

describe("the address-less warning behind Express", () => {
  it("a client that disconnects while an earlier async middleware runs: no warning; a well-wired request before it none either", async () => {
    const warnings: string[] = [];
    const pg = await plantgateApp({ issuer: "http://127.0.0.1", logger: { error() {}, warn: (m: string) => void warnings.push(m) } });
    const app = express();
    let reached = 0;
    // A host middleware that awaits something (a session lookup, a rate limiter).
    app.use(async (_req, _res, next) => {
      await new Promise((resolve) => setTimeout(resolve, 100));
      reached++;
      next();
    });
    app.use("/auth", plantgate(pg));
    const origin = new URL(await listen(app));
    expect((await fetch(`${origin.origin}/auth/.well-known/jwks.json`)).status).toBe(200);
    const socket = connect(Number(origin.port), origin.hostname);
    await new Promise<void>((resolve) => socket.on("connect", () => resolve()));
    socket.write(`POST /auth/UserService/connect/token HTTP/1.1\r\nHost: ${origin.host}\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: 29\r\n\r\ngrant_type=client_credentials`);
    await new Promise((resolve) => setTimeout(resolve, 20));
    socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Both requests went through the middleware to plantgate.
    expect({ reached, warnings: warnings.filter((w) => w.includes("no client address")) }).toEqual({ reached: 2, warnings: [] });
  });
});
