import { importJWK, type CryptoKey, type JWK } from "jose";
import type { Logger } from "../context.js";
import { fromBase64url } from "../crypto/index.js";
import { MIN_RSA_BITS, rsaModulusBits } from "../crypto/rsa.js";
import { declaresOver, readBounded } from "../http/body.js";
import type { ClientRecord } from "../storage/types.js";
import { remember } from "../util/bounded-cache.js";
import { isStorableText } from "../util/storable-text.js";
import { passed } from "../util/passed.js";
import { LATE, waitAtMost } from "../util/wait-at-most.js";

/**
 * The signature algorithms accepted for `private_key_jwt` assertions; never `none` or HMAC.
 * `Ed25519` is RFC 9864's fully-specified name for EdDSA over Ed25519 (what oauth4webapi and
 * openid-client put in the header for an Ed25519 key); a JWK with either name serves both.
 */
export const ASSERTION_ALGS = ["ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"] as const;
export type AssertionAlg = (typeof ASSERTION_ALGS)[number];

/** A JWK's private members (RFC 7518 §6.2.2, §6.3.2, §6.4): none may be in a client's JWK Set. */
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"] as const;

/** Largest JWK Set accepted, inline or fetched (bytes of JSON). */
export const MAX_JWKS_BYTES = 64 * 1024;
/** How long a `jwks_uri` fetch may take. */
export const JWKS_FETCH_TIMEOUT_MS = 5_000;
/**
 * The longest a request waits for a `jwks_uri` fetch another request began: the fetch's own timeout
 * and a second, so where the fetch's timeout holds (on Node, always) it ends first and this never
 * decides. In workerd a fetch and its timeout belong to the context of the request that made it;
 * when that context goes (cancelled, or found hung), the fetch never settles.
 */
export const JWKS_WAIT_MS = JWKS_FETCH_TIMEOUT_MS + 1_000;
/** How long a fetched JWK Set is used before it is fetched again. */
export const JWKS_CACHE_MS = 10 * 60_000;
/** An unknown `kid` refetches a `jwks_uri` at most this often; so does a set past its cache time whose last fetch failed. */
export const JWKS_REFETCH_MS = 60_000;
/**
 * How long after it was fetched a `jwks_uri` set is used at most, while the fetches after its cache
 * time fail (the key host down, a 404): one more cache time, then the client's assertions are
 * refused until a fetch succeeds.
 */
export const JWKS_STALE_MS = 2 * JWKS_CACHE_MS;

/** The algorithms a key of each kind (`kty` and `crv`; an RSA key's `crv` is not looked at) verifies. */
const ALGS_OF = new Map<string, readonly AssertionAlg[]>([
  ["EC P-256", ["ES256"]],
  ["EC P-384", ["ES384"]],
  ["RSA", ["RS256", "PS256"]],
  ["OKP Ed25519", ["EdDSA", "Ed25519"]],
]);
const kindOf = (jwk: JWK) => (jwk.kty === "RSA" ? "RSA" : `${String(jwk.kty)} ${String(jwk.crv)}`);
/** The octets of `x` (and of `y`, EC) on each curve: the full size of a coordinate (RFC 7518 §6.2.1.2, RFC 8037 §2). */
const COORDINATE_BYTES: Record<string, number> = { "P-256": 32, "P-384": 48, Ed25519: 32 };
const isEd = (alg: string | undefined) => alg === "EdDSA" || alg === "Ed25519";
/**
 * Whether `value` is base64 of `bytes` octets, or of at least one when `bytes` is absent. RFC 7515
 * §2 says base64url without padding, but a member with padding, in the standard alphabet (`+`,
 * `/`) or of another length (a coordinate with a leading zero octet, 33 bytes on P-256, as Java's
 * BigInteger writes half of all keys) imports and verifies: keys like that from before 2026-12-02
 * kept working, so only a registration holds a coordinate to its curve's size (`bytes`), and the
 * alphabet and padding are let through everywhere rather than locking such a client out.
 */
const isOctets = (value: unknown, bytes?: number) => {
  const decoded = typeof value === "string" ? fromBase64url(value.replace(/={1,2}$/, "").replace(/\+/g, "-").replace(/\//g, "_")) : null;
  return decoded !== null && (bytes === undefined ? decoded.length > 0 : decoded.length === bytes);
};

/** Why a JWK Set is refused; the message is safe to show to an administrator. */
export class JwksError extends Error {
  override readonly name = "JwksError";
}

/**
 * Parses a JWK Set (RFC 7517 §5) and keeps only the public signature keys an assertion can be
 * verified with: EC on P-256 (`alg` ES256 or none) or P-384 (ES384 or none) with `x` and `y`, RSA
 * of 2048 bits or more (RS256, PS256 or none) with `n` and `e`, OKP on Ed25519 (EdDSA, Ed25519 or
 * none) with `x`, each member base64url (`x` and `y` of the curve's size), no `use` or `use:
 * "sig"`, and no `key_ops` or an array holding "verify". Keys of another kind (an encryption key
 * beside the signature keys, as OpenID Connect clients publish; a `kty` or curve not known here)
 * are passed over, as RFC 7517 §5 asks ("SHOULD ignore JWKs ... that use 'kty' values that are not
 * understood"): until 2026-12-01 one such key refused the whole set, so a client publishing its
 * encryption key beside its signature key could not authenticate at all. So is a key no assertion
 * can be verified with: until 2026-12-02 `kty`, `crv`, `use` and `alg` were looked at one by one, so
 * a P-256 key with `alg` ES384 or RS256, a key without its `x` and `y` (or `n` and `e`), or one
 * whose `key_ops` held no "verify" was kept: registered, every assertion refused, and ten of them
 * before the client's key used up the keys tried for an assertion without `kid`. Throws JwksError
 * for a private key (`d`, ...) or a symmetric one anywhere in the set, and for a set without a
 * usable key (a registration of a set whose only key is P-521 or X25519 was accepted until
 * 2026-12-01, leaving a client that could never authenticate). `registration` also refuses an RSA
 * signature key under 2048 bits by name.
 */
export function parseJwks(text: string, options: { registration?: boolean } = {}): JWK[] {
  if (text.length > MAX_JWKS_BYTES) throw new JwksError(`the JWK Set exceeds ${MAX_JWKS_BYTES} bytes`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new JwksError("the JWK Set is not valid JSON");
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new JwksError('the JWK Set must be an object with a "keys" array');
  const out: JWK[] = [];
  for (const k of keys as unknown[]) {
    if (typeof k !== "object" || k === null || Array.isArray(k)) throw new JwksError("every key must be an object");
    const jwk = k as JWK;
    if (jwk.kty === "oct") throw new JwksError("symmetric (oct) keys are not accepted");
    // Every private member RFC 7518 names (§6.2.2 EC/OKP `d`; §6.3.2 RSA `d p q dp dq qi oth`;
    // §6.4 `k`): an RSA key with `q` alone is its private key (p = n / q). Until 2026-12-01 only
    // `d`, `p` and `k` were looked for, and such a set was stored and shown back.
    for (const member of PRIVATE_MEMBERS) if (member in jwk) throw new JwksError("the JWK Set must hold public keys only (a key has private members)");
    if (jwk.use !== undefined && jwk.use !== "sig") continue;
    // RFC 7517 §4.3: the operations the key is for; an assertion is verified.
    if (jwk.key_ops !== undefined && !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes("verify"))) continue;
    const algs = ALGS_OF.get(kindOf(jwk));
    if (algs === undefined) continue;
    if (jwk.alg !== undefined && !(algs as readonly string[]).includes(jwk.alg)) continue;
    if (jwk.kty === "RSA") {
      if (!isOctets(jwk.n) || !isOctets(jwk.e)) continue;
      const bits = rsaModulusBits(jwk);
      if (bits < MIN_RSA_BITS) {
        if (options.registration) throw new JwksError(`RSA keys must be ${MIN_RSA_BITS} bits or larger (RFC 7518 §3.3); a key has ${bits}`);
        continue;
      }
    } else {
      const bytes = COORDINATE_BYTES[jwk.crv!]!;
      const size = options.registration ? bytes : undefined;
      if (!isOctets(jwk.x, size) || (jwk.kty === "EC" && !isOctets(jwk.y, size))) continue;
    }
    out.push(jwk);
  }
  if (out.length === 0) {
    throw new JwksError(
      `the JWK Set holds no usable signature key: EC P-256 (alg ES256 or none) or P-384 (ES384 or none) with x and y, RSA of ${MIN_RSA_BITS} bits or more (RS256, PS256 or none) with n and e, or OKP Ed25519 (EdDSA, Ed25519 or none) with x, each member base64url (x and y of the curve's size), use "sig" or none, key_ops holding "verify" or none`,
    );
  }
  return out;
}

/** A JWK's public members only: jose takes `key_ops` as the WebCrypto usages (see `importKey` below). */
function publicMembers(jwk: JWK): JWK {
  const { kty, crv, x, y, n, e } = jwk;
  return kty === "RSA" ? { kty, n, e } : kty === "EC" ? { kty, crv, x, y } : { kty, crv, x };
}

/**
 * At registration, after {@link parseJwks} with `registration`: each usable key must import as
 * the public key it says it is, else JwksError naming its kind (no member). WebCrypto's import
 * refuses an EC point off its curve (x and y of the right size: every other rule passed, and
 * until 2026-12-02 such a key was registered and every assertion tried against it refused); Node's
 * does not check an Ed25519 point or an RSA modulus, so those import here and are not refused.
 * Registration only, like the RSA size: a key stored before, or fetched from a `jwks_uri`, that
 * does not import is passed over when an assertion is verified.
 */
export async function checkJwksImports(keys: readonly JWK[]): Promise<void> {
  for (const jwk of keys) {
    const alg = ALGS_OF.get(kindOf(jwk))![0]!;
    try {
      await importJWK({ ...publicMembers(jwk), alg }, alg);
    } catch {
      throw new JwksError(`a key does not import as a public key (${kindOf(jwk)}): its members are no key of that kind, such as a point off the curve`);
    }
  }
}

/** Whether a `jwks_uri` may be used: https, or http to a loopback host (development). */
export function checkJwksUri(uri: string): void {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    throw new JwksError("jwksUri must be an absolute URL");
  }
  const loopback = url.hostname === "localhost" || url.hostname === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && loopback)) throw new JwksError("jwksUri must use https (http only for localhost)");
  if (url.username !== "" || url.password !== "") throw new JwksError("jwksUri must not hold credentials");
  if (uri.length > 2048) throw new JwksError("jwksUri must be at most 2048 characters");
  // The text given is what is stored (the parser's percent-encoding is not): keep it storable everywhere.
  if (!isStorableText(uri)) throw new JwksError("jwksUri must not contain U+0000 or unpaired surrogates");
}

/** Finds the public keys a client's assertions may be verified with. One per app. */
export interface ClientKeys {
  /**
   * Keys of `client` usable for `alg` (and `kid`, when the assertion names one). With `refresh`,
   * a `jwks_uri` is fetched again first unless it was fetched within the last minute. Never
   * throws for a client's bad JWK Set or an unreachable URL: the answer is then no keys.
   */
  candidates(client: ClientRecord, alg: AssertionAlg, kid: string | undefined, refresh: boolean): Promise<CryptoKey[]>;
}

interface Fetched {
  keys: JWK[];
  /** When `keys` were fetched (the last fetch that succeeded); null when none has. */
  fetchedAt: number | null;
  /** When the last fetch, successful or not, ended: the refetch budget counts from it. */
  triedAt: number;
  /** The number of the fetch this came from: a fetch given up on that ends late does not replace a later one's. */
  number: number;
}

/** A fetch in progress, and when it began (real time: the bound is on the wait, not the clock). */
interface InFlight {
  done: Promise<unknown>;
  startedAt: number;
}

/**
 * The body as UTF-8 text, read as it arrives and given up (the stream cancelled) once past `limit`
 * bytes: a hostile key host cannot make the server hold more than that, whatever it sends in the
 * fetch's time.
 */
async function boundedText(res: Response, limit: number): Promise<string> {
  const tooLarge = new JwksError(`the JWK Set exceeds ${limit} bytes`);
  if (declaresOver(res, limit)) {
    await res.body?.cancel().catch(() => undefined);
    throw tooLarge;
  }
  if (res.body === null) return "";
  const bytes = await readBounded(res.body, limit);
  if (bytes === null) throw tooLarge;
  return new TextDecoder().decode(bytes);
}

/**
 * Builds the per-app key finder: inline sets are parsed on use, `jwks_uri` sets are fetched with a
 * timeout and a size cap, kept for {@link JWKS_CACHE_MS}, and fetched again on an unknown `kid` at
 * most once per {@link JWKS_REFETCH_MS}; concurrent requests share one fetch, each waiting for it at
 * most {@link JWKS_WAIT_MS} (past that, the fetch is given up on: the next request begins another).
 * Imported keys are cached (bounded).
 */
export function createClientKeys(clock: () => number, logger: Logger, fetcher: typeof fetch = (...a) => fetch(...a)): ClientKeys {
  const fetched = new Map<string, Fetched>();
  const inFlight = new Map<string, InFlight>();
  const imported = new Map<string, CryptoKey | null>();
  let fetches = 0;

  /**
   * Keeps what fetch `number` found (`keys`; null: it failed), unless a later fetch's result is kept
   * already. A failed fetch keeps the last set fetched, and its time: that set is used until
   * {@link JWKS_STALE_MS} after it was fetched, then no more (until 2026-12-01 each failed fetch
   * kept it as if fetched anew, so a set the client withdrew, a 404 from then on, or replaced by one
   * that could not be read, kept verifying without end where it was cached).
   */
  const keep = (uri: string, keys: JWK[] | null, number: number) => {
    const old = fetched.get(uri);
    if (old !== undefined && old.number > number) return;
    const now = clock();
    const entry: Fetched = keys !== null ? { keys, fetchedAt: now, triedAt: now, number } : { keys: old?.keys ?? [], fetchedAt: old?.fetchedAt ?? null, triedAt: now, number };
    remember(fetched, uri, entry, 1000);
  };

  const fetchSet = async (uri: string, number: number): Promise<void> => {
    try {
      // Redirects are not followed: "manual" hands back the 3xx, refused below as any status but
      // 2xx. Not "error", which workerd refuses outright ("won't be implemented"): until
      // 2026-11-29 every jwks_uri fetch of the Worker failed with it, and its clients with them.
      const res = await fetcher(uri, { signal: AbortSignal.timeout(JWKS_FETCH_TIMEOUT_MS), redirect: "manual", headers: { accept: "application/json" } });
      if (!res.ok) {
        await res.body?.cancel().catch(() => undefined);
        throw new JwksError(`status ${res.status}`);
      }
      keep(uri, parseJwks(await boundedText(res, MAX_JWKS_BYTES)), number);
    } catch (e) {
      logger.warn("jwks_uri could not be used", { jwksUri: shownUri(uri), reason: e instanceof Error ? e.message : "unknown" });
      // A failed fetch also counts against the refetch budget, so a down URL is not hammered.
      keep(uri, null, number);
    }
  };

  /**
   * Waits for a fetch of `uri`: the one in progress, or a new one. The request that begins a fetch
   * waits for it as it is (its own timeout bounds it); a request joining one begun by another waits
   * at most what is left of {@link JWKS_WAIT_MS}, on a timer of its own. In workerd the fetch and
   * its timeout run in the context of the request that began it; when that context went, the fetch
   * never settled, and every later request for that client waited on it without end (no answer).
   */
  const load = async (uri: string): Promise<void> => {
    let running = inFlight.get(uri);
    // Late already: given up on, a new fetch begins.
    if (running !== undefined && Date.now() - running.startedAt >= JWKS_WAIT_MS) running = undefined;
    if (running === undefined) {
      const current: InFlight = { startedAt: Date.now(), done: fetchSet(uri, ++fetches) };
      current.done = current.done.finally(() => {
        if (inFlight.get(uri) === current) inFlight.delete(uri);
      });
      inFlight.set(uri, current);
      return void (await current.done);
    }
    const joined = running;
    if ((await waitAtMost(joined.done, JWKS_WAIT_MS - (Date.now() - joined.startedAt))) !== LATE) return;
    if (inFlight.get(uri) === joined) inFlight.delete(uri);
  };

  const setOf = async (client: ClientRecord, refresh: boolean): Promise<JWK[]> => {
    if (client.jwks !== null) {
      try {
        return parseJwks(client.jwks);
      } catch {
        return [];
      }
    }
    if (client.jwksUri === null) return [];
    const now = clock();
    const have = fetched.get(client.jwksUri);
    // Fetched again once its set is older than the cache time (and, after a failure, once a minute),
    // or on an unknown kid once a minute.
    // A clock stepped back behind a fetch or a try (an NTP correction, a restored VM) counts as the
    // time over: until 2026-12-01 the negative age read as fresh, and a withdrawn set verified for
    // the length of the step on top of the cache time.
    const expired = have === undefined || have.fetchedAt === null || passed(now, have.fetchedAt, JWKS_CACHE_MS);
    if (have === undefined || ((expired || refresh) && passed(now, have.triedAt, JWKS_REFETCH_MS))) await load(client.jwksUri);
    const kept = fetched.get(client.jwksUri);
    if (kept === undefined || kept.fetchedAt === null) return [];
    const age = clock() - kept.fetchedAt;
    return age >= 0 && age < JWKS_STALE_MS ? kept.keys : [];
  };

  const importKey = async (jwk: JWK, alg: AssertionAlg): Promise<CryptoKey | null> => {
    // Its public members only: jose takes `key_ops` as the WebCrypto usages, and refused a public
    // key published with its pair's ["sign", "verify"] (until 2026-12-02 such a key never verified).
    const members = publicMembers(jwk);
    const id = `${alg} ${JSON.stringify(members)}`;
    if (imported.has(id)) return imported.get(id)!;
    let key: CryptoKey | null;
    try {
      const k = await importJWK({ ...members, alg }, alg);
      key = k instanceof Uint8Array ? null : k;
    } catch {
      key = null;
    }
    remember(imported, id, key, 1000);
    return key;
  };

  return {
    async candidates(client, alg, kid, refresh) {
      // The set holds usable keys only (parseJwks), so the first ten of them for this alg (and kid)
      // are tried: until 2026-12-02 keys that could never verify counted toward the ten too.
      const usable = (await setOf(client, refresh)).filter(
        (k) =>
          ALGS_OF.get(kindOf(k))?.includes(alg) === true &&
          (k.alg === undefined || k.alg === alg || (isEd(k.alg) && isEd(alg))) &&
          (kid === undefined || k.kid === kid),
      );
      const keys: CryptoKey[] = [];
      for (const jwk of usable.slice(0, 10)) {
        const key = await importKey(jwk, alg);
        if (key) keys.push(key);
      }
      return keys;
    },
  };
}

/**
 * A jwks_uri as a log line may hold it: without its query and fragment, which on a presigned or
 * tokenised URL (`?X-Amz-Signature=...`, `?sig=...`) are a credential (logged in full before 2026-11-29).
 */
function shownUri(uri: string): string {
  const cut = uri.search(/[?#]/);
  return cut < 0 ? uri : `${uri.slice(0, cut)}?[redacted]`;
}
