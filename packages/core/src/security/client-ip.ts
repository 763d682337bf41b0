/**
 * Client IP resolution for the brute-force defence. The socket address is the only thing a client
 * cannot forge; `X-Forwarded-For` is believed only when the socket peer is a proxy the host told us
 * to trust, and then only as far back as the chain of trusted proxies goes.
 */
import { remember } from "../util/bounded-cache.js";

type Parsed = { v: 4 | 6; bytes: Uint8Array };

function parseV4(text: string): Uint8Array | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!;
    if (!/^(?:0|[1-9]\d{0,2})$/.test(p) || Number(p) > 255) return null;
    out[i] = Number(p);
  }
  return out;
}

function parseV6(text: string): Uint8Array | null {
  if (text.length > 45 || !/^[0-9a-fA-F:.]+$/.test(text)) return null;
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (s: string): number[] | null => {
    if (s === "") return [];
    const out: number[] = [];
    const parts = s.split(":");
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i]!;
      if (i === parts.length - 1 && p.includes(".")) {
        const v4 = parseV4(p);
        if (!v4) return null;
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(p)) out.push(parseInt(p, 16));
      else return null;
    }
    return out;
  };
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  if (!head || !tail) return null;
  const fill = 8 - head.length - tail.length;
  if (halves.length === 2 ? fill < 1 : fill !== 0) return null;
  const all = [...head, ...new Array<number>(fill).fill(0), ...tail];
  const out = new Uint8Array(16);
  all.forEach((g, i) => {
    out[i * 2] = g >> 8;
    out[i * 2 + 1] = g & 0xff;
  });
  return out;
}

/** Parses an IP address; IPv4-mapped IPv6 (`::ffff:1.2.3.4`, as Node reports IPv4 on a dual-stack socket) becomes IPv4. */
function parseIp(raw: string): Parsed | null {
  let text = raw.trim();
  if (text.startsWith("[") && text.endsWith("]")) text = text.slice(1, -1);
  const zone = text.indexOf("%");
  if (zone >= 0) text = text.slice(0, zone);
  const v4 = parseV4(text);
  if (v4) return { v: 4, bytes: v4 };
  const v6 = parseV6(text);
  if (!v6) return null;
  const mapped = v6.slice(0, 10).every((b) => b === 0) && v6[10] === 0xff && v6[11] === 0xff;
  return mapped ? { v: 4, bytes: v6.slice(12) } : { v: 6, bytes: v6 };
}

/**
 * Whether `text` is one IP address (v4, v6, bracketed v6, with a zone): what an adapter may pass
 * as `clientIp` from a header its platform sets (Cloudflare's `CF-Connecting-IP`), so that a value
 * that is none (set by a caller the platform does not stand in front of) is not taken for one.
 */
export function isIpAddress(text: string): boolean {
  return text.length <= 64 && parseIp(text) !== null;
}

/**
 * Parses one `X-Forwarded-For` entry. Some proxies write the client's port too: `1.2.3.4:5678`,
 * `[2001:db8::1]:443`; the port is dropped. A bare IPv6 address is never read as having a port.
 */
function parseHop(raw: string): Parsed | null {
  const text = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(text);
  if (bracketed) return parseIp(`[${bracketed[1]!}]`);
  const v4WithPort = /^([0-9.]+):\d{1,5}$/.exec(text);
  if (v4WithPort) {
    const v4 = parseV4(v4WithPort[1]!);
    return v4 && { v: 4, bytes: v4 };
  }
  return parseIp(text);
}

/** Canonical text of an address, so `::FFFF:10.0.0.1` and `10.0.0.1` count as one client. */
function format(ip: Parsed): string {
  if (ip.v === 4) return [...ip.bytes].join(".");
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((ip.bytes[i]! << 8) | ip.bytes[i + 1]!).toString(16));
  return groups.join(":");
}

interface Range {
  v: 4 | 6;
  bytes: Uint8Array;
  bits: number;
}

/**
 * A trusted-proxy matcher; built once from the `trustedProxies` option. `hop` is how far the
 * address is from the server: 0 for the socket peer, 1 for the rightmost `X-Forwarded-For` entry,
 * and so on (a list of addresses ignores it; a hop count trusts the first N hops, whatever their
 * addresses). Default 0.
 */
export interface ProxyMatcher {
  (ip: string, hop?: number): boolean;
}

/**
 * What a {@link ProxyMatcher} is asked about a peer on a Unix domain socket (no address): trusted
 * when `trustedProxies` lists `"unix"`, or is a hop count. Never an `X-Forwarded-For` entry (not an address).
 */
export const UNIX_SOCKET_PEER = "unix";

/** The most proxies a hop count may name: a chain longer than this is a misconfiguration. */
export const MAX_TRUSTED_PROXY_HOPS = 16;

/** Whether `value` is a hop count `trustedProxies` takes: a whole number from 1 to {@link MAX_TRUSTED_PROXY_HOPS}. */
export function isTrustedProxyHops(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_TRUSTED_PROXY_HOPS;
}

/**
 * Compiles `trustedProxies`: exact addresses or CIDR ranges such as `10.0.0.0/8`, `fd00::/8`, and
 * `"unix"` for a peer on a Unix domain socket (see {@link UNIX_SOCKET_PEER}); or a
 * hop count, 1-16, trusting exactly that many proxies in front of the server (Express's
 * `trust proxy: N`). Throws `TypeError` for an entry that is neither address nor range, or a count
 * out of range, so a typo fails at start-up instead of silently trusting nobody (or everybody).
 */
export function compileTrustedProxies(entries: readonly string[] | number): ProxyMatcher {
  if (typeof entries === "number") {
    if (!isTrustedProxyHops(entries)) {
      throw new TypeError(`trustedProxies must be a hop count from 1 to ${MAX_TRUSTED_PROXY_HOPS} or a list of addresses and CIDR ranges, got ${entries}`);
    }
    return (_ip, hop = 0) => hop < entries;
  }
  if (!Array.isArray(entries)) throw new TypeError(`trustedProxies must be a hop count from 1 to ${MAX_TRUSTED_PROXY_HOPS} or a list of addresses and CIDR ranges, got ${String(entries)}`);
  const unix = entries.includes(UNIX_SOCKET_PEER);
  const ranges: Range[] = entries.filter((entry) => entry !== UNIX_SOCKET_PEER).map((entry) => {
    const slash = entry.indexOf("/");
    const ip = parseIp(slash < 0 ? entry : entry.slice(0, slash));
    if (!ip) {
      const count = /^\d{1,2}$/.test(entry.trim()) ? ` (a hop count is a number: trustedProxies: ${Number(entry)})` : "";
      throw new TypeError(`trustedProxies: "${entry}" is not an IP address or CIDR range${count}`);
    }
    const max = ip.v === 4 ? 32 : 128;
    const bitsText = slash < 0 ? String(max) : entry.slice(slash + 1);
    if (!/^\d{1,3}$/.test(bitsText) || Number(bitsText) > max) throw new TypeError(`trustedProxies: "${entry}" has a bad prefix length`);
    return { ...ip, bits: Number(bitsText) };
  });
  return (text) => {
    if (text === UNIX_SOCKET_PEER) return unix;
    const ip = parseIp(text);
    if (!ip) return false;
    return ranges.some((r) => {
      if (r.v !== ip.v) return false;
      let bits = r.bits;
      for (let i = 0; bits > 0; i++, bits -= 8) {
        const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
        if ((r.bytes[i]! & mask) !== (ip.bytes[i]! & mask)) return false;
      }
      return true;
    });
  };
}

/**
 * The client's address: the socket address, unless the socket peer is a trusted proxy; then the
 * rightmost `X-Forwarded-For` entry that is not itself a trusted proxy (entries further left were
 * written by the client and prove nothing). With a hop count N, the peer is the first proxy and
 * the client the Nth entry from the right; a header with fewer entries gives its leftmost. Several
 * `X-Forwarded-For` lines come joined (`, `) by the `Headers` object, in order. A malformed entry
 * ends the walk at the last address vouched for. Returns undefined when the adapter passed no address,
 * unless `unixSocket` (the request came over a Unix domain socket, which has none) and that peer is
 * trusted (`"unix"` listed, or a hop count): then the walk starts from it, and finds undefined
 * when the header is missing or its rightmost entry is malformed.
 *
 * @example
 * const trusted = compileTrustedProxies(["10.0.0.0/8"]);
 * resolveClientIp(trusted, "10.0.0.5", "198.51.100.7, 10.0.0.9"); // "198.51.100.7"
 * resolveClientIp(compileTrustedProxies(1), "203.0.113.9", "6.6.6.6, 198.51.100.7"); // "198.51.100.7"
 */
export function resolveClientIp(trusted: ProxyMatcher, socketIp: string | undefined, forwardedFor: string | null, unixSocket = false): string | undefined {
  let client: string | undefined;
  if (socketIp === undefined) {
    if (!unixSocket || forwardedFor === null || !trusted(UNIX_SOCKET_PEER, 0)) return undefined;
  } else {
    client = canonicalSocketIp(socketIp);
    // Not an address (a test harness, an exotic transport): kept as an opaque identity.
    if (client === undefined) return socketIp.slice(0, 64);
    if (forwardedFor === null || !trusted(client, 0)) return client;
  }
  const hops = forwardedFor.split(",");
  for (let i = hops.length - 1, hop = 1; i >= 0; i--, hop++) {
    const parsed = parseHop(hops[i]!);
    // A malformed entry can only be the client's own invention: stop at the last hop we can vouch for.
    if (!parsed) break;
    client = format(parsed);
    if (!trusted(client, hop)) break;
  }
  return client;
}

/**
 * The address a brute-force counter is kept for: an IPv4 address as is, an IPv6 address as its
 * /64 prefix (`2001:db8:0:1::/64`). One IPv6 host usually holds a whole /64 and can pick any
 * address in it, so counting per address would give it 2^64 fresh counters. Anything that is not
 * an address (an opaque identity from a test harness or exotic transport) is returned unchanged.
 *
 * @example
 * throttleAddress("2001:db8:0:1:aaaa::7"); // "2001:db8:0:1::/64"
 * throttleAddress("198.51.100.7");         // "198.51.100.7"
 */
export function throttleAddress(ip: string): string {
  let address = throttleAddresses.get(ip);
  if (address === undefined) {
    address = throttleAddressUncached(ip);
    remember(throttleAddresses, ip, address, CACHE_LIMIT);
  }
  return address;
}

// A server sees the same few peer addresses (its proxies, its busy clients) over and over; both
// functions below are pure, so their answers are cached. Bounded, since addresses come from the
// network: when full, a cache starts over.
const CACHE_LIMIT = 1024;
const socketIps = new Map<string, string | undefined>();
const throttleAddresses = new Map<string, string>();

/** The socket address in canonical form; undefined when it is not an IP address. */
function canonicalSocketIp(socketIp: string): string | undefined {
  if (socketIps.has(socketIp)) return socketIps.get(socketIp);
  const parsed = parseIp(socketIp);
  const canonical = parsed ? format(parsed) : undefined;
  remember(socketIps, socketIp, canonical, CACHE_LIMIT);
  return canonical;
}

function throttleAddressUncached(ip: string): string {
  const parsed = parseIp(ip);
  if (!parsed) return ip;
  if (parsed.v === 4) return format(parsed);
  const groups: string[] = [];
  for (let i = 0; i < 8; i += 2) groups.push(((parsed.bytes[i]! << 8) | parsed.bytes[i + 1]!).toString(16));
  return `${groups.join(":")}::/64`;
}
