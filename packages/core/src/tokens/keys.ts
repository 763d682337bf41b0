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
 * A keyring over a store. With `configured`, that key signs (and is stored so other instances
 * verify it); otherwise the newest stored key signs, and one is generated if the store has none.
 */
export function createKeyring(
  store: SigningKeyStore,
  opts: { alg: SigningAlg; configured?: JWK | string; clock: () => number; reloadIntervalMs?: number; signingReloadMs?: number },
): Keyring {
  let keys: Map<string, LoadedKey> | null = null;
  let active: LoadedKey | null = null;
  let loading: Promise<void> | null = null;
  let lastReload = 0;
  const reloadInterval = opts.reloadIntervalMs ?? 10_000;
  // How often the signing key is re-read, so a rotation done elsewhere (the CLI, another instance)
  // takes over signing everywhere within this time.
  const signingReload = opts.signingReloadMs ?? 60_000;

  async function reload(): Promise<void> {
    let records = await store.list();
    let preferred: string | null = null;
    if (opts.configured !== undefined) {
      const record = await keyRecordFromJwk(opts.configured, opts.alg, opts.clock());
      preferred = record.kid;
      if (!records.some((r) => r.kid === record.kid)) {
        await store.create(record);
        records = await store.list();
      }
    } else if (records.length === 0) {
      await store.create(await generateKeyRecord(opts.alg, opts.clock()));
      // Re-read: if another instance raced us, everyone converges on the same newest key.
      records = await store.list();
    }
    const loaded = new Map<string, LoadedKey>();
    for (const r of records) loaded.set(r.kid, await load(r));
    const newest = [...records].sort((a, b) => b.createdAt - a.createdAt || (a.kid < b.kid ? -1 : 1))[0]!;
    keys = loaded;
    active = loaded.get(preferred ?? newest.kid)!;
    lastReload = opts.clock();
  }

  async function ensure(): Promise<void> {
    if (keys) return;
    loading ??= reload().finally(() => {
      loading = null;
    });
    await loading;
  }

  return {
    async signingKey() {
      await ensure();
      if (opts.clock() - lastReload >= signingReload) {
        loading ??= reload().finally(() => {
          loading = null;
        });
        await loading;
      }
      return { kid: active!.kid, alg: active!.alg, key: active!.privateKey! };
    },
    async verificationKey(kid) {
      await ensure();
      let k = keys!.get(kid);
      if (!k && opts.clock() - lastReload >= reloadInterval) {
        loading ??= reload().finally(() => {
          loading = null;
        });
        await loading;
        k = keys!.get(kid);
      }
      return k ? { alg: k.alg, key: k.publicKey } : null;
    },
    async jwks() {
      await ensure();
      return { keys: [...keys!.values()].map((k) => k.publicJwk) };
    },
    invalidate() {
      keys = null;
      active = null;
    },
  };
}
