/**
 * Client IP resolution (the brute-force defence's notion of "who"): the socket address, or the
 * rightmost untrusted X-Forwarded-For entry when the socket peer is a trusted proxy.
 */
import { describe, expect, it } from "vitest";
import { compileTrustedProxies, resolveClientIp, throttleAddress } from "../src/index.js";

describe("compileTrustedProxies", () => {
  it("matches exact addresses and IPv4/IPv6 CIDR ranges, IPv4-mapped IPv6 as IPv4", () => {
    const trusted = compileTrustedProxies(["10.0.0.0/8", "192.168.1.7", "fd00::/8", "2001:db8::1"]);
    for (const ip of ["10.0.0.1", "10.255.255.255", "::ffff:10.1.2.3", "192.168.1.7", "fd12:3456::1", "2001:db8:0:0:0:0:0:1", "[2001:db8::1]"]) {
      expect(trusted(ip), ip).toBe(true);
    }
    for (const ip of ["11.0.0.1", "192.168.1.8", "fe80::1", "2001:db8::2", "not-an-ip", "", "10.0.0.256", "1.2.3"]) {
      expect(trusted(ip), ip).toBe(false);
    }
  });

  it("prefix lengths that are not whole bytes", () => {
    const trusted = compileTrustedProxies(["172.16.0.0/12", "2001:db8:8000::/33"]);
    expect(trusted("172.31.255.1")).toBe(true);
    expect(trusted("172.32.0.1")).toBe(false);
    expect(trusted("2001:db8:ffff::1")).toBe(true);
    expect(trusted("2001:db8:7fff::1")).toBe(false);
  });

  it("throws on entries that are not addresses or ranges", () => {
    for (const bad of ["10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/x", "localhost", "1:2:3:4:5:6:7:8:9", "01.2.3.4"]) {
      expect(() => compileTrustedProxies([bad]), bad).toThrow(TypeError);
    }
  });
});

describe("resolveClientIp", () => {
  const trusted = compileTrustedProxies(["10.0.0.0/8"]);

  it("uses the socket address (canonical form) when the peer is not a trusted proxy", () => {
    expect(resolveClientIp(trusted, "203.0.113.7", "198.51.100.1")).toBe("203.0.113.7");
    expect(resolveClientIp(trusted, "::ffff:203.0.113.7", null)).toBe("203.0.113.7");
    expect(resolveClientIp(trusted, "2001:DB8::0:1", null)).toBe("2001:db8:0:0:0:0:0:1");
  });

  it("behind a trusted proxy, takes the rightmost entry that is not itself trusted", () => {
    expect(resolveClientIp(trusted, "10.0.0.1", "198.51.100.1")).toBe("198.51.100.1");
    expect(resolveClientIp(trusted, "10.0.0.1", "6.6.6.6, 198.51.100.1, 10.0.0.2")).toBe("198.51.100.1");
    expect(resolveClientIp(trusted, "10.0.0.1", " 198.51.100.1 ,10.0.0.2")).toBe("198.51.100.1");
    // Every hop trusted: the leftmost one is the best we know.
    expect(resolveClientIp(trusted, "10.0.0.1", "10.0.0.3, 10.0.0.2")).toBe("10.0.0.3");
    // No header: the proxy itself.
    expect(resolveClientIp(trusted, "10.0.0.1", null)).toBe("10.0.0.1");
  });

  it("stops at a malformed entry: what lies left of it is the client's invention", () => {
    expect(resolveClientIp(trusted, "10.0.0.1", "198.51.100.1, garbage")).toBe("10.0.0.1");
    expect(resolveClientIp(trusted, "10.0.0.1", "garbage, 10.0.0.2")).toBe("10.0.0.2");
  });

  it("X-Forwarded-For entries with a port parse to the address; unknown or garbage still stops the walk", () => {
    expect(resolveClientIp(trusted, "10.0.0.1", "198.51.100.1:5678")).toBe("198.51.100.1");
    expect(resolveClientIp(trusted, "10.0.0.1", "[2001:db8::1]:443")).toBe("2001:db8:0:0:0:0:0:1");
    expect(resolveClientIp(trusted, "10.0.0.1", "[2001:db8::1]")).toBe("2001:db8:0:0:0:0:0:1");
    // A trusted proxy with a port is still a trusted hop, and the walk goes on past it.
    expect(resolveClientIp(trusted, "10.0.0.1", "198.51.100.1:1, 10.0.0.2:80")).toBe("198.51.100.1");
    // A bare IPv6 address is not read as address + port.
    expect(resolveClientIp(trusted, "10.0.0.1", "2001:db8::1:443")).toBe("2001:db8:0:0:0:0:1:443");
    for (const bad of ["unknown", "198.51.100.1:", "198.51.100.1:123456", "198.51.100.1:80:80", "[2001:db8::1]:", "[garbage]:443", "[198.51.100.1:80"]) {
      expect([bad, resolveClientIp(trusted, "10.0.0.1", `6.6.6.6, ${bad}`)]).toEqual([bad, "10.0.0.1"]);
    }
  });

  it("throttle counters: IPv4 as is, IPv6 per /64, anything else unchanged", () => {
    expect(throttleAddress("198.51.100.7")).toBe("198.51.100.7");
    expect(throttleAddress("::ffff:198.51.100.7")).toBe("198.51.100.7");
    expect(throttleAddress("2001:db8:0:1:aaaa:bbbb:cccc:dddd")).toBe("2001:db8:0:1::/64");
    expect(throttleAddress("2001:DB8:0:1::7")).toBe("2001:db8:0:1::/64");
    expect(throttleAddress("test-harness")).toBe("test-harness");
  });

  it("no socket address: undefined; a non-address socket value is kept as an opaque, bounded identity", () => {
    expect(resolveClientIp(trusted, undefined, "198.51.100.1")).toBeUndefined();
    expect(resolveClientIp(trusted, "x".repeat(100), null)).toBe("x".repeat(64));
  });
});
