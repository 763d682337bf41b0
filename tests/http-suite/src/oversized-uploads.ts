/**
 * Node-only part of the HTTP suite (issue 16): oversized uploads sent as many HTTP clients send
 * them, through {@link rawUpload} (a fresh socket each, the whole body written before the answer is
 * read, `Connection: close`), to `POST /plants` (with a token: 400 1007; without: 401, refused
 * before the body is read) and to the token endpoint (400 invalid_request); every one of them must
 * get the documented answer with its whole body, and the server must still answer afterwards. The
 * same cases run again while a child process spins on the CPU. A reset is a failure, and nothing
 * is retried.
 *
 * Runner-independent: a runner hands {@link describeOversizedUploads} to the suite as
 * `HttpSuiteTarget.moreTests`, and it runs against that runner's server.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rawUpload, type RawAnswer } from "./raw-upload.js";
import type { RunningTarget } from "./suite.js";

/** plantgate's default `maxBodyBytes`. */
const MAX_BODY_BYTES = 65_536;
/** How many times each case is sent. */
export const OVERSIZED_REPEATS = 20;
/** The body sizes sent: just over the limit, 200 KB, 2 MB, 10 MB. */
export const OVERSIZED_SIZES: [label: string, bytes: number][] = [
  ["just over the limit", MAX_BODY_BYTES + 1],
  ["200 KB", 200 * 1024],
  ["2 MB", 2 * 1024 * 1024],
  ["10 MB", 10 * 1024 * 1024],
];

interface Endpoint {
  name: string;
  path: string;
  headers(t: RunningTarget, token: string): Record<string, string>;
  /** A body of exactly `bytes` bytes. */
  body(bytes: number): string;
  check(answer: RawAnswer): void;
}

/** `bytes` characters long: `prefix`, then `x` padding, then `suffix`. */
const padded = (prefix: string, suffix: string, bytes: number) => prefix + "x".repeat(bytes - prefix.length - suffix.length) + suffix;

const ENDPOINTS: Endpoint[] = [
  {
    name: "POST /plants",
    path: "/plants",
    headers: (_t, token) => ({ authorization: `Bearer ${token}`, "content-type": "application/json" }),
    body: (bytes) => padded(`{"id":7,"name":"x","pad":"`, `"}`, bytes),
    check(answer) {
      expect({ status: answer.status, type: answer.headers.get("content-type"), text: answer.text }).toEqual({
        status: 400,
        type: "application/json",
        text: `{"error":1007,"message":"The body exceeds ${MAX_BODY_BYTES} bytes."}`,
      });
    },
  },
  {
    // Refused before the body is read at all.
    name: "POST /plants without an access token",
    path: "/plants",
    headers: () => ({ "content-type": "application/json" }),
    body: (bytes) => padded(`{"id":7,"name":"x","pad":"`, `"}`, bytes),
    check(answer) {
      expect({ status: answer.status, type: answer.headers.get("content-type"), challenge: answer.headers.get("www-authenticate"), text: answer.text }).toEqual({
        status: 401,
        type: "application/json",
        challenge: 'Bearer realm="plantgate"',
        text: `{"error":1201,"message":"An access token is required."}`,
      });
    },
  },
  {
    name: "the token endpoint",
    path: "/UserService/connect/token",
    headers: (t) => ({ authorization: basic(t.clientId, t.clientSecret), "content-type": "application/x-www-form-urlencoded" }),
    body: (bytes) => padded("grant_type=client_credentials&pad=", "", bytes),
    check(answer) {
      expect({
        status: answer.status,
        type: answer.headers.get("content-type"),
        cacheControl: answer.headers.get("cache-control"),
        pragma: answer.headers.get("pragma"),
        text: answer.text,
      }).toEqual({
        status: 400,
        type: "application/json",
        cacheControl: "no-store",
        pragma: "no-cache",
        text: `{"error":"invalid_request","error_description":"The request body exceeds ${MAX_BODY_BYTES} bytes."}`,
      });
    },
  },
];

function basic(id: string, secret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, "+");
  return `Basic ${Buffer.from(`${enc(id)}:${enc(secret)}`).toString("base64")}`;
}

/** A child process that keeps one CPU core busy until stopped. */
async function spinCpu(): Promise<() => Promise<void>> {
  const child: ChildProcess = spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" });
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", reject);
  });
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the CPU load stopped early (${child.exitCode ?? child.signalCode})`);
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    await exited;
  };
}

/**
 * Registers the oversized-upload cases (each endpoint x each size, {@link OVERSIZED_REPEATS} times,
 * then a normal request on a fresh connection), once plainly and once under CPU load. `srv` gives
 * the running target once the suite has started it.
 */
export function describeOversizedUploads(srv: () => RunningTarget): void {
  let token: string | undefined;
  let nextId = 8_000_000_000_000n + BigInt(Math.floor(Math.random() * 1_000_000)) * 1000n;

  const obtainToken = async (): Promise<string> => {
    if (token !== undefined) return token;
    const t = srv();
    const r = await rawUpload(`${t.baseUrl}/UserService/connect/token`, "grant_type=client_credentials", {
      headers: { authorization: basic(t.clientId, t.clientSecret), "content-type": "application/x-www-form-urlencoded" },
    });
    expect(r.status, r.text).toBe(200);
    return (token = (JSON.parse(r.text) as { access_token: string }).access_token);
  };

  /** A normal request afterwards, on a fresh connection: the server still answers, and stores. */
  const stillAnswers = async () => {
    const id = (nextId += 1n).toString();
    const r = await rawUpload(`${srv().baseUrl}/plants`, `{"id":${id},"name":"After"}`, {
      headers: { authorization: `Bearer ${await obtainToken()}`, "content-type": "application/json" },
    });
    expect({ status: r.status, text: r.text }).toEqual({ status: 200, text: `{"id":${id},"name":"After"}` });
  };

  const cases = () => {
    for (const endpoint of ENDPOINTS) {
      for (const [label, bytes] of OVERSIZED_SIZES) {
        it(`${endpoint.name}, ${label} (${bytes} bytes): the documented answer, ${OVERSIZED_REPEATS} of ${OVERSIZED_REPEATS}`, async () => {
          const t = srv();
          const headers = endpoint.headers(t, await obtainToken());
          const body = endpoint.body(bytes);
          expect(Buffer.byteLength(body)).toBe(bytes);
          for (let i = 1; i <= OVERSIZED_REPEATS; i++) {
            let answer: RawAnswer;
            try {
              answer = await rawUpload(t.baseUrl + endpoint.path, body, { headers });
            } catch (error) {
              throw new Error(`upload ${i} of ${OVERSIZED_REPEATS} got no answer: ${(error as Error).message}`);
            }
            endpoint.check(answer);
          }
          await stillAnswers();
        }, 180_000);
      }
    }
  };

  describe("oversized uploads over raw sockets (whole body written first, Connection: close)", () => {
    cases();
  });

  it("a GET that comes with a body (Content-Length: 0, as some clients and proxies send, or bytes) is answered as one without", async () => {
    const url = `${srv().baseUrl}/.well-known/jwks.json`;
    const plain = await fetch(url);
    const expected = { status: 200, text: await plain.text() };
    for (const body of ["", "hello"]) {
      const r = await rawUpload(url, body, { method: "GET" });
      expect({ body, status: r.status, text: r.text }).toEqual({ body, ...expected });
    }
  });

  describe("oversized uploads over raw sockets, while another process loads the CPU", () => {
    let stop: (() => Promise<void>) | undefined;
    beforeAll(async () => {
      stop = await spinCpu();
    });
    afterAll(async () => {
      await stop?.();
    });
    cases();
  });
}
