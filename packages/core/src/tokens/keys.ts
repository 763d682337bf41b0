import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from "jose";
import type { SigningKeyRecord, SigningKeyStore } from "../storage/types.js";

/** The JWS algorithms plantgate signs with. */
export type SigningAlg = "ES256" | "ES384" | "RS256" | "PS256" | "EdDSA";

export const SUPPORTED_ALGS: readonly SigningAlg[] = ["ES256", "ES384", "RS256", "PS256", "EdDSA"];

interface LoadedKey {
  kid: string;
  alg: SigningAlg;
  publicJwk: JWK;
  privateKey?: CryptoKey | Uint8Array;
  publicKey: CryptoKey | Uint8Array;
  /** Epoch ms from which the key is no longer trusted (Infinity while it is not retired). */
  until?: number;
}

/** Signing and verification keys, loaded from storage (or options) once and cached. */
export interface Keyring {
  /** The key new tokens are signed with. */
  signingKey(): Promise<{ kid: string; alg: SigningAlg; key: CryptoKey | Uint8Array }>;
  /** The verification key for a kid, reloading from storage at most once per interval for unknown kids. */
  verificationKey(kid: string): Promise<{ alg: SigningAlg; key: CryptoKey | Uint8Array } | null>;
  /** The public JWK Set. */
  jwks(): Promise<{ keys: JWK[] }>;
  /** Forgets the cache so the next use reads the store again (after a rotation in this process). */
  invalidate(): void;
  /** Whether the signing key is configured (`signingKey`): then it is rotated by changing that option, not by plantgate. */
  readonly configured: boolean;
}

const PUBLIC_MEMBERS = ["kty", "crv", "x", "y", "n", "e", "alg", "kid", "use"] as const;

function publicPart(jwk: JWK): JWK {
  const out: JWK = {};
  for (const m of PUBLIC_MEMBERS) if (jwk[m] !== undefined) (out as Record<string, unknown>)[m] = jwk[m];
  return out;
}

async function load(record: SigningKeyRecord): Promise<LoadedKey> {
  const alg = record.alg as SigningAlg;
  const publicJwk = publicPart(JSON.parse(record.publicJwk) as JWK);
  const privateJwk = JSON.parse(record.privateJwk) as JWK;
  return {
    kid: record.kid,
    alg,
    publicJwk: { ...publicJwk, kid: record.kid, alg, use: "sig" },
    privateKey: await importJWK(privateJwk, alg),
    publicKey: await importJWK(publicJwk, alg),
  };
}

/**
 * Turns a private JWK (object or JSON text) into a key record; `kid` defaults to its RFC 7638 thumbprint.
 *
 * @example
 * const record = await keyRecordFromJwk(process.env.PLANTGATE_SIGNING_KEY!, "ES256", Date.now());
 */
export async function keyRecordFromJwk(input: JWK | string, defaultAlg: SigningAlg, now: number): Promise<SigningKeyRecord> {
  const jwk = (typeof input === "string" ? JSON.parse(input) : input) as JWK;
  if (typeof jwk !== "object" || jwk === null || !jwk.kty || !("d" in jwk)) {
    throw new TypeError("signingKey must be a private JWK (it has no 'd' member)");
  }
  const alg = (jwk.alg ?? defaultAlg) as SigningAlg;
  if (!SUPPORTED_ALGS.includes(alg)) throw new TypeError(`signingKey alg ${alg} is not supported`);
  const kid = jwk.kid ?? (await calculateJwkThumbprint(jwk));
  const pub = publicPart(jwk);
  return { kid, alg, privateJwk: JSON.stringify({ ...jwk, kid, alg }), publicJwk: JSON.stringify({ ...pub, kid, alg }), createdAt: now };
}

/** Generates a fresh key pair record. */
export async function generateKeyRecord(alg: SigningAlg, now: number): Promise<SigningKeyRecord> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true, ...(alg === "EdDSA" ? { crv: "Ed25519" } : {}) });
  const jwk = await exportJWK(privateKey);
  return keyRecordFromJwk(jwk, alg, now);
}

/**
 * Where a key is in its life: `active` signs new tokens; `retired` was replaced but may still have
 * unexpired tokens, so it stays in the JWKS and verifies; `prunable` was replaced longer ago than
 * the longest access-token lifetime, so no live token can carry it and it can be deleted.
 */
export type SigningKeyStatus = "active" | "retired" | "prunable";

/** A key as `keys list` and the admin show it; never the private part. */
export interface SigningKeyInfo {
  kid: string;
  alg: string;
  /** Epoch ms. */
  createdAt: number;
  /** Epoch ms when a newer key took over signing; null for the active key. */
  retiredAt: number | null;
  status: SigningKeyStatus;
}

/**
 * How long other instances may go on signing with a key after it was replaced: they re-read the
 * keys at most this long after their last read.
 */
export const SIGNING_RELOAD_MS = 60_000;

/** Newest first; equal times are ordered by kid so every instance picks the same "newest". */
const newestFirst = (a: SigningKeyRecord, b: SigningKeyRecord) => b.createdAt - a.createdAt || (a.kid < b.kid ? -1 : a.kid > b.kid ? 1 : 0);

/**
 * The status of every key, newest first. `activeKid` is the configured signing key when there is
 * one (else the newest key signs); `maxTokenTtlMs` is the longest access-token lifetime in force.
 *
 * @example
 * describeKeys(await storage.signingKeys.list(), Date.now(), 7200_000);
 */
export function describeKeys(records: readonly SigningKeyRecord[], now: number, maxTokenTtlMs: number, activeKid?: string): SigningKeyInfo[] {
  const sorted = [...records].sort(newestFirst);
  const active = activeKid ?? sorted[0]?.kid;
  return sorted.map((r, i) => {
    // Replaced when the next newer key appeared; a configured older key keeps signing regardless.
    const retiredAt = r.kid === active || i === 0 ? null : sorted[i - 1]!.createdAt;
    // Prunable once the last token it could have signed (up to SIGNING_RELOAD_MS after it was
    // replaced, on an instance that had not re-read the keys yet) has expired.
    const prunable = retiredAt !== null && now - retiredAt >= maxTokenTtlMs + SIGNING_RELOAD_MS;
    const status: SigningKeyStatus = r.kid === active ? "active" : prunable ? "prunable" : "retired";
    return { kid: r.kid, alg: r.alg, createdAt: r.createdAt, retiredAt, status };
  });
}

/**
 * Deletes the prunable keys of a store and returns their kids.
 *
 * @example
 * const deleted = await pruneKeys(storage.signingKeys, Date.now(), 7200_000);
 */
export async function pruneKeys(store: SigningKeyStore, now: number, maxTokenTtlMs: number, activeKid?: string): Promise<string[]> {
  const deleted: string[] = [];
  for (const k of describeKeys(await store.list(), now, maxTokenTtlMs, activeKid)) {
    // "prunable" is never the active key; the kid check says so again, so no caller can delete the key that signs.
    if (k.status === "prunable" && k.kid !== activeKid && (await store.delete(k.kid))) deleted.push(k.kid);
  }
  return deleted;
}

/** Options of {@link createKeyring}. */
export interface KeyringOptions {
  alg: SigningAlg;
  /** A configured private key: it signs, and automatic rotation is off. */
  configured?: JWK | string;
  clock: () => number;
  /** Rotate when the signing key is older than this (ms). Default: never. */
  maxAgeMs?: number;
  /**
   * The longest access-token lifetime in ms (server default or any client's own); read only when
   * a retired key might be prunable. Default: 7200 s.
   */
  maxTokenTtlMs?: () => Promise<number>;
  /** The server default lifetime (a lower bound of `maxTokenTtlMs`), used while no key is retired. */
  minTokenTtlMs?: number;
  reloadIntervalMs?: number;
  signingReloadMs?: number;
}

/**
 * A keyring over a store. With `configured`, that key signs (and is stored so other instances
 * verify it); otherwise the newest stored key signs, and one is generated if the store has none
 * or, with `maxAgeMs`, when the newest is too old. Any instance may rotate: racing instances each
 * store a key, and all of them then sign with the newest one (ties broken by kid). Replaced keys
 * keep verifying and stay in the JWKS until no unexpired token can carry them; then they are no
 * longer trusted, and the next rotation (automatic or `admin.rotateSigningKey`) deletes them.
 */
export function createKeyring(store: SigningKeyStore, opts: KeyringOptions): Keyring {
  let keys: Map<string, LoadedKey> | null = null;
  let active: LoadedKey | null = null;
  let loading: Promise<void> | null = null;
  let lastReload = 0;
  const reloadInterval = opts.reloadIntervalMs ?? 10_000;
  // How often the signing key is re-read, so a rotation done elsewhere (the CLI, another instance)
  // takes over signing everywhere within this time.
  const signingReload = opts.signingReloadMs ?? SIGNING_RELOAD_MS;

  const minTtl = opts.minTokenTtlMs ?? 7200_000;
  const maxTtl = async () => Math.max(minTtl, opts.maxTokenTtlMs ? await opts.maxTokenTtlMs() : minTtl);

  async function reload(): Promise<void> {
    const now = opts.clock();
    let records = await store.list();
    let preferred: string | undefined;
    if (opts.configured !== undefined) {
      const record = await keyRecordFromJwk(opts.configured, opts.alg, now);
      preferred = record.kid;
      if (!records.some((r) => r.kid === record.kid)) {
        await store.create(record);
        records = await store.list();
      }
    } else {
      const newest = [...records].sort(newestFirst)[0];
      const rotate = newest !== undefined && opts.maxAgeMs !== undefined && now - newest.createdAt >= opts.maxAgeMs;
      if (!newest || rotate) {
        // Strictly newer than what we saw, so "newest signs" holds even within one millisecond.
        await store.create(await generateKeyRecord(opts.alg, Math.max(now, (newest?.createdAt ?? 0) + 1)));
        if (rotate) await pruneKeys(store, now, await maxTtl());
        // Re-read: if another instance raced us, everyone converges on the same newest key.
        records = await store.list();
      }
    }
    // A retired key is trusted (and published) until it becomes prunable, whether or not a rotation
    // has deleted it yet; the deadline is kept per key so a cached keyring drops it on time. The
    // longest lifetime (a clients scan) is read only while some key is retired.
    const described = describeKeys(records, now, 0, preferred);
    const ttl = described.some((k) => k.retiredAt !== null) ? await maxTtl() : minTtl;
    const loaded = new Map<string, LoadedKey>();
    for (const d of described) {
      const until = d.retiredAt === null ? Infinity : d.retiredAt + ttl + SIGNING_RELOAD_MS;
      if (now < until) loaded.set(d.kid, { ...(await load(records.find((r) => r.kid === d.kid)!)), until });
    }
    keys = loaded;
    active = loaded.get(preferred ?? described[0]!.kid)!;
    lastReload = now;
  }

  async function reloadOnce(): Promise<void> {
    loading ??= reload().finally(() => {
      loading = null;
    });
    await loading;
  }

  const trusted = (k: LoadedKey) => opts.clock() < (k.until ?? Infinity);

  /** Loads on first use, and again once the cache is older than the signing reload interval. */
  async function ensure(): Promise<void> {
    if (!keys || opts.clock() - lastReload >= signingReload) await reloadOnce();
  }

  return {
    async signingKey() {
      await ensure();
      return { kid: active!.kid, alg: active!.alg, key: active!.privateKey! };
    },
    async verificationKey(kid) {
      await ensure();
      let k = keys!.get(kid);
      if (!k && opts.clock() - lastReload >= reloadInterval) {
        await reloadOnce();
        k = keys!.get(kid);
      }
      return k && trusted(k) ? { alg: k.alg, key: k.publicKey } : null;
    },
    async jwks() {
      await ensure();
      return { keys: [...keys!.values()].filter(trusted).map((k) => k.publicJwk) };
    },
    invalidate() {
      keys = null;
      active = null;
    },
    configured: opts.configured !== undefined,
  };
}
