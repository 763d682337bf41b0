/**
 * `trustedProxies` as a hop count (`trustedProxies: 2`, env `PLANTGATE_TRUSTED_PROXIES=2`): trust
 * exactly that many proxies in front of the server, whatever their addresses (a cloud load
 * balancer's are not known in advance), as Express's `trust proxy: 2`. The socket peer is the
 * first; the client is the Nth `X-Forwarded-For` entry from the right. Until 2026-12-02 such a
 * deployment could only list `0.0.0.0/0`, which walked to the header's client-written left end.
 * Shown over the request path: the `client_ip` of the event a token request emits.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, createPlantgate, optionsFromEnv, type HandleInfo, type PlantgateOptions, type SecurityEvent } from "../src/index.js";
import { basic, BASE, harness } from "./helpers.js";

/** The `client_ip` plantgate resolves for a token request from `peer` with these X-Forwarded-For lines. */
async function clientIpOf(options: PlantgateOptions, peer: string | undefined | HandleInfo, ...xff: string[]): Promise<string | null | undefined> {
  const events: SecurityEvent[] = [];
  const h = await harness({ onEvent: (e) => void events.push(e), ...options });
  const headers = new Headers({ "content-type": "application/x-www-form-urlencoded", authorization: basic(h.clientId, h.clientSecret) });
  for (const line of xff) headers.append("x-forwarded-for", line);
  const res = await h.app.fetch(new Request(`${BASE}/UserService/connect/token`, { method: "POST", headers, body: "grant_type=client_credentials" }), typeof peer === "object" ? peer : peer === undefined ? {} : { clientIp: peer });
  expect(res.status).toBe(200);
  await h.app.flushEvents();
  const issued = events.filter((e) => e.type === "token.issued");
  expect(issued).toHaveLength(1);
  return (issued[0] as { client_ip?: string | null }).client_ip;
}

describe("trustedProxies: a hop count", () => {
  it("1: the peer is the one proxy; the client is the rightmost X-Forwarded-For entry, whatever the addresses", async () => {
    expect(await clientIpOf({ trustedProxies: 1 }, "203.0.113.200", "6.6.6.6, 198.51.100.7")).toBe("198.51.100.7");
    // The client prepending entries changes nothing (with 0.0.0.0/0 it chose its own address).
    expect(await clientIpOf({ trustedProxies: 1 }, "203.0.113.200", "1.1.1.1, 2.2.2.2, 198.51.100.7")).toBe("198.51.100.7");
    expect(await clientIpOf({ trustedProxies: ["0.0.0.0/0"] }, "203.0.113.200", "1.1.1.1, 2.2.2.2, 198.51.100.7")).toBe("1.1.1.1");
    // No header: the peer itself (it is the proxy, but nothing better is known).
    expect(await clientIpOf({ trustedProxies: 1 }, "203.0.113.200")).toBe("203.0.113.200");
  });

  it("2: the second entry from the right; entries with a port count as their address; IPv6 canonical", async () => {
    expect(await clientIpOf({ trustedProxies: 2 }, "10.0.0.1", "6.6.6.6, 198.51.100.7, 10.0.0.2")).toBe("198.51.100.7");
    expect(await clientIpOf({ trustedProxies: 2 }, "10.0.0.1", "6.6.6.6, [2001:DB8::7]:443, 10.0.0.2:80")).toBe("2001:db8:0:0:0:0:0:7");
  });

  it("several X-Forwarded-For lines count as one list, joined in order", async () => {
    expect(await clientIpOf({ trustedProxies: 2 }, "10.0.0.1", "6.6.6.6", "198.51.100.7, 10.0.0.2")).toBe("198.51.100.7");
    expect(await clientIpOf({ trustedProxies: 2 }, "10.0.0.1", "6.6.6.6, 198.51.100.7", "10.0.0.2")).toBe("198.51.100.7");
  });

  it("fewer entries than proxies: the leftmost entry (as Express)", async () => {
    expect(await clientIpOf({ trustedProxies: 3 }, "10.0.0.1", "198.51.100.7, 10.0.0.2")).toBe("198.51.100.7");
    expect(await clientIpOf({ trustedProxies: 16 }, "10.0.0.1", "198.51.100.7")).toBe("198.51.100.7");
  });

  it("a malformed entry within the trusted hops ends the walk at the last entry vouched for", async () => {
    // The proxies should never write one; what lies left of it proves nothing.
    expect(await clientIpOf({ trustedProxies: 2 }, "10.0.0.1", "6.6.6.6, 198.51.100.7, unknown")).toBe("10.0.0.1");
    expect(await clientIpOf({ trustedProxies: 3 }, "10.0.0.1", "6.6.6.6, garbage, 10.0.0.3, 10.0.0.2")).toBe("10.0.0.3");
    // Beyond the trusted hops it is never read.
    expect(await clientIpOf({ trustedProxies: 1 }, "10.0.0.1", "garbage, 198.51.100.7")).toBe("198.51.100.7");
  });

  it("no peer address from the adapter: null, as without trustedProxies", async () => {
    expect(await clientIpOf({ trustedProxies: 1 }, undefined, "198.51.100.7")).toBeNull();
  });

  it("is bounded: a whole number from 1 to 16, refused when the app is made", () => {
    for (const bad of [0, -1, 17, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => createPlantgate({ trustedProxies: bad }), String(bad)).toThrow(
        new TypeError(`trustedProxies must be a hop count from 1 to 16 or a list of addresses and CIDR ranges, got ${bad}`),
      );
    }
    // A digit string in the list is neither an address nor a hop count (a count stands alone, as a number).
    expect(() => createPlantgate({ trustedProxies: ["1"] })).toThrow('trustedProxies: "1" is not an IP address or CIDR range (a hop count is a number: trustedProxies: 1)');
  });
});

describe("PLANTGATE_TRUSTED_PROXIES: a hop count", () => {
  it("a bare whole number 1-16 is a hop count; a list of addresses as before", () => {
    expect(optionsFromEnv({ PLANTGATE_TRUSTED_PROXIES: "1" })).toEqual({ trustedProxies: 1 });
    expect(optionsFromEnv({ PLANTGATE_TRUSTED_PROXIES: " 16 " })).toEqual({ trustedProxies: 16 });
    expect(optionsFromEnv({ PLANTGATE_TRUSTED_PROXIES: "10.0.0.1, 192.168.0.0/16" })).toEqual({ trustedProxies: ["10.0.0.1", "192.168.0.0/16"] });
  });

  it("refuses a count out of range, and a count mixed into a list, naming the variable", () => {
    for (const bad of ["0", "17", "01", "99999999999999999999"]) {
      expect(() => optionsFromEnv({ PLANTGATE_TRUSTED_PROXIES: bad }), bad).toThrow(
        new ConfigError(`PLANTGATE_TRUSTED_PROXIES must be a hop count from 1 to 16 or comma-separated addresses / CIDR ranges, got "${bad}"`),
      );
    }
    expect(() => optionsFromEnv({ PLANTGATE_TRUSTED_PROXIES: "1, 10.0.0.1" })).toThrow(
      new ConfigError('PLANTGATE_TRUSTED_PROXIES: "1" is not an IP address or CIDR range (a hop count is a number: trustedProxies: 1)'),
    );
  });
});

/**
 * A server on a Unix domain socket (nginx on the same host in front) has no peer address: the
 * adapter says `unixSocket: true` instead. Until 2026-12-02 `client_ip` was then null whatever
 * `trustedProxies` said, and the per-IP counters were off.
 */
describe("a Unix-socket peer", () => {
  const viaUnix = (options: PlantgateOptions, ...xff: string[]) => clientIpOf(options, { unixSocket: true }, ...xff);

  it('is a trusted proxy when trustedProxies lists "unix": the walk goes on as from any trusted proxy', async () => {
    expect(await viaUnix({ trustedProxies: ["unix"] }, "6.6.6.6, 198.51.100.7")).toBe("198.51.100.7");
    expect(await viaUnix({ trustedProxies: ["unix", "10.0.0.0/8"] }, "6.6.6.6, 198.51.100.7, 10.0.0.2")).toBe("198.51.100.7");
  });

  it("is the first proxy of a hop count", async () => {
    expect(await viaUnix({ trustedProxies: 1 }, "6.6.6.6, 198.51.100.7")).toBe("198.51.100.7");
    expect(await viaUnix({ trustedProxies: 2 }, "6.6.6.6, 198.51.100.7, 10.0.0.2")).toBe("198.51.100.7");
  });

  it("not trusted (no trustedProxies, or addresses without \"unix\"), no header, or a malformed rightmost entry: null, as before", async () => {
    expect(await viaUnix({}, "198.51.100.7")).toBeNull();
    expect(await viaUnix({ trustedProxies: ["10.0.0.0/8"] }, "198.51.100.7")).toBeNull();
    expect(await viaUnix({ trustedProxies: ["unix"] })).toBeNull();
    expect(await viaUnix({ trustedProxies: 1 }, "198.51.100.7, unknown")).toBeNull();
  });

  it("PLANTGATE_TRUSTED_PROXIES takes unix as an entry", () => {
    expect(optionsFromEnv({ PLANTGATE_TRUSTED_PROXIES: "unix, 10.0.0.0/8" })).toEqual({ trustedProxies: ["unix", "10.0.0.0/8"] });
  });
});
