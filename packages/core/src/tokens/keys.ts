import { isoTimestamp } from "../util/iso-time.js";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from "jose";
import { quoteId } from "../admin/errors.js";
import { MIN_RSA_BITS, rsaModulusBits } from "../crypto/rsa.js";
import { EXTERNAL_PRIVATE_KEY, isSealed, KEK_SOURCE, KeyEncryptionError, sealedUnder, sealsExternalMarker, type KeyEncryption } from "../crypto/key-encryption.js";
import { StorageError } from "../errors/index.js";
import type { SigningKeyRecord, SigningKeyStore } from "../storage/types.js";
import { passed } from "../util/passed.js";
import { LATE, waitAtMost } from "../util/wait-at-most.js";
import { describeKeys, place, pruneKeys, ROTATION_KEY_DELETES, SIGNING_RELOAD_MS, signingIndex, type SigningKeyInfo, type SigningKeyStatus } from "./key-lifecycle.js";

export { describeKeys, pruneKeys, REVOKE_KEY_DELETES, ROTATION_KEY_DELETES, SIGNING_RELOAD_MS, type SigningKeyInfo, type SigningKeyStatus } from "./key-lifecycle.js";

/**
 * The most keys stored in clear one load of the keys seals (once a key encryption key is
 * configured): a statement each, in the request (or cron run) that loads them, so a store of many
 * such keys costs a load at most this many; the next loads (one a minute) seal the rest, the
 * newest keys first. Until 2026-12-02 one load sealed them all.
 */
export const KEYS_SEALED_PER_LOAD = 4;

/** The JWS algorithms plantgate signs with. */
export type SigningAlg = "ES256" | "ES384" | "RS256" | "PS256" | "EdDSA";

export const SUPPORTED_ALGS: readonly SigningAlg[] = ["ES256", "ES384", "RS256", "PS256", "EdDSA"];

/**
 * An alg with the indefinite article it is read aloud with, letter by letter: "a PS256", "an ES256",
 * "an RS256", "an EdDSA" (a letter whose name starts with a vowel sound takes "an"). Until
 * 2026-12-02 the messages said "an" before every alg ("an PS256") or "a" ("a ES256").
 */
function withArticle(alg: string): string {
  return `${/^[AEFHILMNORSX]/.test(alg) ? "an" : "a"} ${alg}`;
}

/** `Cache-Control: max-age` of `/.well-known/jwks.json`: how long a resource server may keep a copy. */
export const JWKS_MAX_AGE_SECONDS = 300;

/** How long (ms) after a failed periodic re-read of the keys (keys loaded before) the next is tried. */
export const RELOAD_RETRY_MS = 5_000;

/** How often (ms) at most a token with a kid this instance does not know makes it re-read the keys. */
export const UNKNOWN_KID_RELOAD_MS = 1_000;

/**
 * The default, and the least allowed, delay between publishing a new key and signing with it: a
 * resource server that fetched the JWKS just before the new key appeared (up to the reload
 * interval after it was stored) holds that copy for the JWKS cache lifetime. 300 s + 60 s.
 */
export const MIN_ACTIVATION_DELAY_SECONDS = JWKS_MAX_AGE_SECONDS + SIGNING_RELOAD_MS / 1000;

/**
 * A signing key that never enters plantgate (a cloud KMS, an HSM, a non-extractable Web Crypto
 * key): plantgate hands it the JWS signing input and publishes `publicJwk` in the JWKS.
 *
 * @example
 * ```ts
 * const { privateKey, publicKey } = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"]);
 * const signer: SigningKeySigner = {
 *   alg: "ES256",
 *   publicJwk: await crypto.subtle.exportKey("jwk", publicKey),
 *   sign: async (data) => new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, privateKey, data)),
 * };
 * createPlantgate({ signer });
 * ```
 */
export interface SigningKeySigner {
  alg: SigningAlg;
  /**
   * The public key; published in the JWKS. It must import as an `alg` key (an EC P-256 key is
   * ES256, not PS256 or ES384): one that does not fails the first load of the keys, nothing stored.
   */
  publicJwk: JWK;
  /** Default: the RFC 7638 thumbprint of `publicJwk`. */
  kid?: string;
  /**
   * The JWS signature (RFC 7518 form: raw `r || s` for ECDSA, not DER) of `data`, the ASCII signing
   * input. Another length or a value that is no `Uint8Array` fails the token request (a 500, logged).
   */
  sign(data: SigningInput): Promise<Uint8Array> | Uint8Array;
}

/**
 * The bytes a signer is handed: a `Uint8Array` over a plain `ArrayBuffer`, which Web Crypto's
 * `sign()` takes as a `BufferSource` under TypeScript 5.7's typed arrays (a bare `Uint8Array` there
 * is `Uint8Array<ArrayBufferLike>`, refused: until 2026-12-02 the README's signer sample did not
 * type-check). Written as an intersection, not `Uint8Array<ArrayBuffer>`, so the published types
 * still compile under TypeScript 5.6, where `Uint8Array` is not generic.
 */
export type SigningInput = Uint8Array & { readonly buffer: ArrayBuffer };

/** The key that signs now: a private key of the keyring, or an external signer. */
export interface ActiveSigningKey {
  kid: string;
  alg: SigningAlg;
  /** The private key; null when an external signer signs. */
  key: CryptoKey | Uint8Array | null;
  /** The external signer's function; null for a stored key. */
  sign: ((data: SigningInput) => Promise<Uint8Array> | Uint8Array) | null;
}

interface LoadedKey {
  kid: string;
  alg: SigningAlg;
  publicJwk: JWK;
  privateKey: CryptoKey | Uint8Array | null;
  external: ActiveSigningKey["sign"];
  publicKey: CryptoKey | Uint8Array;
  activatesAt: number;
  /** Epoch ms from which the key is no longer trusted (Infinity while it is not retired). */
  until: number;
}

/** Signing and verification keys, loaded from storage (or options) and re-read every minute. */
export interface Keyring {
  /** The key new tokens are signed with: the newest key whose activation time has come. */
  signingKey(): Promise<ActiveSigningKey>;
  /**
   * The verification key for a kid, reloading from storage at most once per interval for unknown
   * kids; with `lookNow`, an unknown kid is looked for in the stored keys at once (one read of the
   * key rows), whatever the interval: for a revocation, whose 200 must not leave a token of a key
   * another instance just stored working there.
   */
  verificationKey(kid: string, options?: { lookNow?: boolean }): Promise<{ alg: SigningAlg; key: CryptoKey | Uint8Array } | null>;
  /** The public JWK Set: `next`, `active` and `retired` keys. */
  jwks(): Promise<{ keys: JWK[] }>;
  /**
   * Whether the last re-read of the keys failed (a storage outage) or was given up on past
   * `loadTimeoutMs`, and the keys loaded before serve: then the JWK Set may lack a key other
   * instances have stored since, and is served uncached.
   */
  readonly stale: boolean;
  /**
   * Every stored key with its status, newest first (loads first, so a fresh store gets its key).
   * What signing acts on; a listing for people is {@link listSigningKeys}, which writes nothing.
   */
  list(): Promise<SigningKeyInfo[]>;
  /**
   * The record the configured key (`signingKey` or `signer`) is stored as, made at `now` and not
   * stored; null without one. Throws TypeError for a `signingKey` that does not import.
   */
  configuredRecord(now: number): Promise<SigningKeyRecord | null>;
  /** Forgets the cache so the next use reads the store again (after a rotation in this process). */
  invalidate(): void;
  /**
   * Which option gives the signing key (`signingKey` or `signer`), if one does: then it is rotated
   * by changing that option, not by plantgate.
   */
  readonly configured: "signingKey" | "signer" | null;
}

const PUBLIC_MEMBERS = ["kty", "crv", "x", "y", "n", "e", "alg", "kid", "use"] as const;

function publicPart(jwk: JWK): JWK {
  const out: JWK = {};
  for (const m of PUBLIC_MEMBERS) if (jwk[m] !== undefined) (out as Record<string, unknown>)[m] = jwk[m];
  return out;
}

/**
 * `JSON.parse` of a private key's text that never quotes it: V8's SyntaxError message shows the
 * text around the fault (`..."d":SECRET... is not valid JSON`), and that message is logged (a 500's
 * `unexpected error` line on every request loading the keys, until 2026-12-01). Throws a TypeError
 * with `message` alone, no cause.
 */
function parseKeyText(text: string, message: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new TypeError(message);
  }
}

/** The `signingKey` option's text parsed, or a TypeError that does not quote it (see parseKeyText). */
export function parseSigningKeyText(text: string): unknown {
  return parseKeyText(text, "signingKey (PLANTGATE_SIGNING_KEY) is not JSON: give a private JWK in JSON text");
}

/** The longest `kid` a configured key may give (a token's header carries it; tokens are at most 8,192 characters). */
const MAX_KID_LENGTH = 1024;

/**
 * The server's own key's rules beyond importing (`signingKey`, `signer`), so that a key is refused
 * at start rather than published and then failing every token: a `kid`, when given, is a string of
 * at most {@link MAX_KID_LENGTH} characters (RFC 7517 §4.5: a number was put in the headers as given,
 * and plantgate's own check refused every token: 401 at the APIs, inactive at introspection); an
 * RSA key has a modulus of {@link MIN_RSA_BITS} bits or more (RFC 7518 §3.3: jose refused to sign
 * with a smaller one, a 500 for every token request, and `nodeCrypto()` or a signer issued tokens
 * jose then refused). Both until 2026-12-01. `what` names the option in the message.
 */
export function checkOwnKey(jwk: JWK, kid: unknown, what: string, kidName: string): void {
  if (kid !== undefined && (typeof kid !== "string" || kid.length > MAX_KID_LENGTH)) {
    throw new TypeError(`${kidName} must be a string of at most ${MAX_KID_LENGTH} characters (RFC 7517 §4.5); nothing was stored`);
  }
  if (jwk.kty === "RSA") {
    const bits = rsaModulusBits(jwk);
    if (bits < MIN_RSA_BITS) throw new TypeError(`${what} is an RSA key of ${bits} bits; RS256 and PS256 need ${MIN_RSA_BITS} or more (RFC 7518 §3.3); nothing was stored`);
  }
}

/** What a value is, for a message that must not show it (a signer's answer may be key material). */
const kindOf = (value: unknown): string => (value === null ? "null" : typeof value !== "object" ? typeof value : (Object.prototype.toString.call(value).slice(8, -1) || "object"));

/**
 * A signer's `sign`, its answer held to the JWS form of its algorithm (RFC 7518 §3.4: ECDSA's is
 * raw `r || s`, 64 bytes for ES256 and 96 for ES384; Ed25519's 64 bytes; RSA's as long as the
 * modulus). Until 2026-12-02 a DER-encoded ECDSA signature, what cloud KMSs and Node's `sign()`
 * give by default, went into tokens that every verifier refused (plantgate's own APIs too: 401
 * everywhere, token requests 200), and an answer that was no `Uint8Array` (undefined, an
 * `ArrayBuffer`) failed in jose with a message that named neither. Now the token request is a 500
 * and the log says what the signer returned (its length or kind, never its bytes).
 */
function checkedSign(signer: SigningKeySigner, publicJwk: JWK): (data: SigningInput) => Promise<Uint8Array> {
  const alg = signer.alg;
  const size = alg === "ES256" ? 64 : alg === "ES384" ? 96 : alg === "EdDSA" ? (publicJwk.crv === "Ed448" ? 114 : 64) : Math.ceil(rsaModulusBits(publicJwk) / 8);
  return async (data) => {
    const signature: unknown = await signer.sign(data);
    if (!(signature instanceof Uint8Array)) throw new TypeError(`signer.sign must return a Uint8Array holding the signature; it returned ${kindOf(signature)}`);
    if (signature.length !== size) {
      const der = alg === "ES256" || alg === "ES384" ? " (raw r || s, RFC 7518 §3.4: a DER-encoded signature, as cloud KMSs and Node's sign() give by default, must be converted)" : "";
      throw new TypeError(`signer.sign returned ${signature.length} bytes; ${withArticle(alg)} signature with this key is ${size} bytes${der}`);
    }
    return signature;
  };
}

/**
 * Turns a private JWK (object or JSON text) into a key record that signs from `now`; `kid`
 * defaults to its RFC 7638 thumbprint.
 *
 * @example
 * const record = await keyRecordFromJwk(process.env.PLANTGATE_SIGNING_KEY!, "ES256", Date.now());
 */
export async function keyRecordFromJwk(input: JWK | string, defaultAlg: SigningAlg, now: number): Promise<SigningKeyRecord> {
  const jwk = (typeof input === "string" ? parseSigningKeyText(input) : input) as JWK;
  // Each shape said as what it is: until 2026-12-02 a key with `d` but no `kty` (and a value that
  // is no object) was told "it has no 'd' member", and a `kty` that is no string failed in jose.
  if (typeof jwk !== "object" || jwk === null || Array.isArray(jwk)) throw new TypeError("signingKey must be a private JWK (a JSON object)");
  if (!("kty" in jwk)) throw new TypeError("signingKey must be a private JWK (it has no 'kty' member)");
  if (typeof jwk.kty !== "string" || jwk.kty === "") throw new TypeError("signingKey must be a private JWK (its 'kty' member is not a non-empty string)");
  if (!("d" in jwk)) throw new TypeError("signingKey must be a private JWK (it has no 'd' member)");
  const alg = (jwk.alg ?? defaultAlg) as SigningAlg;
  if (!SUPPORTED_ALGS.includes(alg)) throw new TypeError(`signingKey alg ${alg} is not supported`);
  checkOwnKey(jwk, jwk.kid, "signingKey (PLANTGATE_SIGNING_KEY)", "signingKey (PLANTGATE_SIGNING_KEY) kid");
  const kid = jwk.kid ?? (await calculateJwkThumbprint(jwk));
  const pub = publicPart(jwk);
  // Both halves must import before the record can be stored: one that does not (an EC key named
  // PS256, a point off the curve) was stored first and then failed every later load, the CLI's
  // `keys list`/`keys revoke` and the server's start included, until removed by hand.
  try {
    await importJWK({ ...jwk, alg }, alg);
    await importJWK({ ...pub, alg }, alg);
  } catch {
    throw new TypeError(`signingKey (PLANTGATE_SIGNING_KEY) does not import as ${withArticle(alg)} key; nothing was stored`);
  }
  return { kid, alg, privateJwk: JSON.stringify({ ...jwk, kid, alg }), publicJwk: JSON.stringify({ ...pub, kid, alg }), createdAt: now, activatesAt: now };
}

/**
 * Generates a fresh key pair record, created at `now`, signing from `activatesAt` (default `now`).
 *
 * @example
 * const next = await generateKeyRecord("ES256", Date.now(), Date.now() + 360_000);
 */
export async function generateKeyRecord(alg: SigningAlg, now: number, activatesAt: number = now): Promise<SigningKeyRecord> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true, ...(alg === "EdDSA" ? { crv: "Ed25519" } : {}) });
  const jwk = await exportJWK(privateKey);
  return { ...(await keyRecordFromJwk(jwk, alg, now)), activatesAt };
}

/**
 * The id of the key encryption key the key signing now (of `records`, at `now`) is sealed under, or
 * null (none stored, in clear, a signer's). New keys are sealed under it rather than under the first
 * configured KEK: while `<new>,<old>` is deployed gradually, instances with `<old>` alone still open
 * them; moving the keys to the first KEK is `keys reencrypt`'s, when the operator chooses. Until
 * 2026-12-01 a rotation (automatic, or by an administrator) on an instance already given
 * `<new>,<old>` sealed its key under `<new>`, and every instance still on `<old>` failed its next
 * reload.
 */
export function signingKek(records: readonly SigningKeyRecord[], now: number): string | null {
  if (records.length === 0) return null;
  const placed = place(records).map((p) => p.record);
  return sealedUnder(placed[signingIndex(placed, now)]!.privateJwk);
}

/**
 * After a rotation stored `kid` (its private key `privateJwk`, stored as `stored`, sealed under the
 * KEK of the key signing when the rows were read, see {@link signingKek}): `records`, the rows read
 * again after that create, say which KEK the key signing now is under. When that KEK is another one
 * (a `keys reencrypt` moved the keys meanwhile) and `encryption` has it, the new key's row is sealed
 * again under it, compare-and-set (a reencrypt that moved it meanwhile wins; nothing is lost).
 * Returns whether it sealed the row again. Until 2026-12-02 a rotation that had read the rows
 * before a reencrypt stored its key under the old KEK after the reencrypt had answered that every
 * key was moved, and a deployment that then dropped the old KEK failed every load of the keys.
 *
 * A reencrypt whose last pass reads the rows after this create moves the key itself (see
 * `reencryptSigningKeys`); one whose last pass read them before it moved the signing key before
 * `records` was read, so this sees that.
 *
 * @example
 * const records = await store.list();
 * await resealUnderSigningKek(store, encryption, record.kid, record.privateJwk, stored.privateJwk, records, Date.now());
 */
export async function resealUnderSigningKek(
  store: SigningKeyStore,
  encryption: KeyEncryption,
  kid: string,
  privateJwk: string,
  stored: string,
  records: readonly SigningKeyRecord[],
  now: number,
): Promise<boolean> {
  if (!encryption.configured || !isSealed(stored)) return false;
  const target = signingKek(
    records.filter((r) => r.kid !== kid),
    now,
  );
  if (target === null || target === sealedUnder(stored) || !(await encryption.ids()).includes(target)) return false;
  return store.replacePrivateJwk(kid, stored, await encryption.seal(kid, privateJwk, target));
}

/** The RFC 7638 thumbprint of a stored public JWK's text (the key itself, whatever its other members). */
async function thumbprintOf(publicJwk: string): Promise<string> {
  return calculateJwkThumbprint(publicPart(JSON.parse(publicJwk) as JWK));
}

/**
 * The stored record of a {@link SigningKeySigner}: its public key only, which must import under
 * `signer.alg`. Until 2026-12-02 one that did not (an EC P-256 key named PS256) was stored at the
 * first load: every token and JWKS request was then a 500, and the stored row's alg outlived the
 * fix (matched by kid) until the row was deleted by hand.
 */
export async function signerRecord(signer: SigningKeySigner, now: number): Promise<SigningKeyRecord> {
  const jwk = signer.publicJwk as JWK;
  const pub = publicPart(jwk);
  try {
    await importJWK({ ...pub, alg: signer.alg }, signer.alg);
  } catch {
    throw new TypeError(`signer.publicJwk does not import as ${withArticle(signer.alg)} key (signer.alg); nothing was stored`);
  }
  const kid = signer.kid ?? (await calculateJwkThumbprint(pub));
  return { kid, alg: signer.alg, privateJwk: EXTERNAL_PRIVATE_KEY, publicJwk: JSON.stringify({ ...pub, kid, alg: signer.alg }), createdAt: now, activatesAt: now };
}

/** Options of {@link createKeyring}. */
export interface KeyringOptions {
  alg: SigningAlg;
  /** A configured private key: it signs, and automatic rotation is off. */
  configured?: JWK | string;
  /** A key held outside plantgate: it signs, and automatic rotation is off. */
  signer?: SigningKeySigner;
  clock: () => number;
  /** Rotate so that no key signs for longer than this (ms). Default: never. */
  maxAgeMs?: number;
  /** Delay between publishing a rotated key and signing with it (ms). Default 360 s. */
  activationDelayMs?: number;
  /** Encrypts private keys at rest; default none (stored in clear). */
  encryption?: KeyEncryption;
  /** Told once, at the first load, when private keys are stored in clear; default: nobody. */
  logger?: { warn(message: string): void };
  /**
   * The longest access-token lifetime in ms (server default or any client's own); read only when
   * a retired key might be prunable. Default: 7200 s.
   */
  maxTokenTtlMs?: () => Promise<number>;
  /** The server default lifetime (a lower bound of `maxTokenTtlMs`), used while there is one key. */
  minTokenTtlMs?: number;
  reloadIntervalMs?: number;
  signingReloadMs?: number;
  /**
   * Told when a periodic re-read of the keys fails while keys are loaded (a storage outage): the
   * keys loaded before keep serving, and the re-read is tried again {@link RELOAD_RETRY_MS} later.
   * Once per run of failures (again after a re-read has worked).
   */
  onReloadFailed?: (error: unknown) => void;
  /**
   * Told when stamping the configured key as in use (`signingKeys.markSigning`) fails at a load of
   * the keys: the load goes on with what it read, and the key signs here as before; instances
   * pinned to another key trust it only until the longest token lifetime + 60 s after its last
   * stamp. Once per run of failures (again after a stamp has worked).
   */
  onStampFailed?: (error: unknown) => void;
  /**
   * The longest a caller waits for a load of the keys (ms); past it the keys loaded before serve
   * (none yet: `StorageError`), and the load is given up on, so the next caller starts another.
   * Default: no bound.
   */
  loadTimeoutMs?: number;
  /** Told after each automatic rotation stored a key (for the `signing_key.rotated` event). */
  onRotated?: (rotation: { kid: string; alg: string; activatesAt: number; deleted: string[] }) => void;
}

/** Told once when there is no key encryption key; names the variable, never a key. */
export const CLEAR_KEYS_WARNING = `signing keys are stored in clear: anyone who can read the store can sign tokens; set ${KEK_SOURCE} to encrypt them at rest`;

/** The longest delay `setTimeout` takes (a longer one fires at once). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * A read shared by the requests that come while it runs (a keyring's kid look, an activation's
 * recheck), each of which waits for it at most as long as it may take: two loads (its read and the
 * load it starts each wait at most `loadTimeoutMs`) from when it began, real time.
 */
interface SharedRead<T> {
  done: Promise<T>;
  startedAt: number;
}

/**
 * A keyring over a store. With `signer` or `configured`, that key signs (its record is stored so
 * other instances verify it); otherwise the key whose stored activation time came last signs, and
 * one is generated if the store has none (stored by `createIfEmpty` where the store has it, so
 * instances starting together on an empty store end with that one key). With `maxAgeMs`, the next key is stored ahead of time
 * (published as `next`) so it takes over when the active one reaches that age. Any instance may do
 * it; racing instances schedule keys for the same instant and the order (activation, creation,
 * kid) picks the one that signs, the same everywhere. Replaced keys keep verifying and stay in the
 * JWKS until no unexpired token can carry them.
 */
export function createKeyring(store: SigningKeyStore, opts: KeyringOptions): Keyring {
  let keys: LoadedKey[] | null = null;
  let pinned: string | undefined;
  /** The load in progress, and when it started (real time: the bound is on the wait, not the clock). */
  let loading: { done: Promise<void>; startedAt: number; number: number } | null = null;
  /** How many loads were started, and the number of the one whose keys are in use. */
  let started = 0;
  let applied = 0;
  let lastReload = 0;
  const loadTimeout = opts.loadTimeoutMs ?? 0;
  let warned = false;
  /** The last stamp of the configured key failed (see `onStampFailed`). */
  let stampFailing = false;
  // An unknown kid re-reads the keys at most once per this: a token signed by a key another
  // instance (or the CLI) stored since the last read (`keys rotate --now`; two instances that each
  // made a first key on an empty store) is then taken within a second. It was 10 s until
  // 2026-11-29, and those tokens were refused by the other instances for up to 10 s. A flood of
  // tokens with made-up kids costs one read of the keys a second.
  const reloadInterval = opts.reloadIntervalMs ?? UNKNOWN_KID_RELOAD_MS;
  // How often the keys are re-read, so a rotation done elsewhere (the CLI, another instance) is
  // published, and a `--now` key signs, everywhere within this time.
  const signingReload = opts.signingReloadMs ?? SIGNING_RELOAD_MS;
  const delay = opts.activationDelayMs ?? MIN_ACTIVATION_DELAY_SECONDS * 1000;
  const encryption = opts.encryption;

  const minTtl = opts.minTokenTtlMs ?? 7200_000;
  const maxTtl = async () => Math.max(minTtl, opts.maxTokenTtlMs ? await opts.maxTokenTtlMs() : minTtl);

  // A signer's record holds no private key, only the marker: nothing to seal. A new key goes under
  // the KEK of the key signing now among `records` (see signingKek).
  const seal = async (r: SigningKeyRecord, records: SigningKeyRecord[]): Promise<SigningKeyRecord> =>
    encryption?.configured && r.privateJwk !== EXTERNAL_PRIVATE_KEY ? { ...r, privateJwk: await encryption.seal(r.kid, r.privateJwk, signingKek(records, opts.clock())) } : r;
  const storedInClear = (r: SigningKeyRecord) => r.privateJwk !== EXTERNAL_PRIVATE_KEY && !isSealed(r.privateJwk);

  async function load(record: SigningKeyRecord, until: number, signsHere: boolean): Promise<LoadedKey> {
    const alg = record.alg as SigningAlg;
    const publicJwk = publicPart(JSON.parse(record.publicJwk) as JWK);
    let privateKey: CryptoKey | Uint8Array | null = null;
    if (record.privateJwk !== EXTERNAL_PRIVATE_KEY) {
      // Every stored key is opened, so a missing or wrong KEK fails the first load (the start).
      const text = encryption ? await encryption.open(record.kid, record.privateJwk) : record.privateJwk;
      if (isSealed(text)) throw new KeyEncryptionError(`signing key ${quoteId(record.kid)} is stored encrypted and no key encryption key is configured; set ${KEK_SOURCE}`);
      // A signer's marker that an earlier version sealed (signer with a KEK) is still the marker.
      if (signsHere && text !== EXTERNAL_PRIVATE_KEY) privateKey = await importJWK(parseKeyText(text, `signing key ${quoteId(record.kid)}'s stored private key is not JSON (a damaged row)`) as JWK, alg);
    }
    return {
      kid: record.kid,
      alg,
      publicJwk: { ...publicJwk, kid: record.kid, alg, use: "sig" },
      privateKey,
      external: opts.signer && record.kid === pinned ? checkedSign(opts.signer, publicJwk) : null,
      publicKey: await importJWK(publicJwk, alg),
      activatesAt: record.activatesAt,
      until,
    };
  }

  async function reload(): Promise<{ loaded: LoadedKey[]; at: number; expired: Set<string> }> {
    const now = opts.clock();
    let records = await store.list();
    if (opts.signer !== undefined || opts.configured !== undefined) {
      const record = opts.signer !== undefined ? await signerRecord(opts.signer, now) : await keyRecordFromJwk(opts.configured!, opts.alg, now);
      pinned = record.kid;
      const stored = records.find((r) => r.kid === record.kid);
      // This instance signs with the key until its next load: stamped so that instances pinned to
      // another key (a gradual deployment replacing it) keep trusting it that long (see `place`).
      const stamps = typeof store.markSigning === "function";
      if (stored === undefined) {
        await store.create(await seal(stamps ? { ...record, lastSignedAt: now } : record, records));
        records = await store.list();
      } else if ((await thumbprintOf(stored.publicJwk)) !== (await thumbprintOf(record.publicJwk))) {
        // The configured key changed under a kid of its own choosing (a KMS key replaced, a leaked
        // key swapped, the kid kept): until 2026-12-01 the stored row's old key was loaded, so a
        // signer's tokens failed their own verification (401 everywhere) and a replaced signingKey
        // went on signing with the old key, without a word.
        const what = opts.signer !== undefined ? "signer" : "signingKey (PLANTGATE_SIGNING_KEY)";
        throw new TypeError(
          `${what} has kid ${quoteId(record.kid)}, which is stored with another key: give the new key a kid of its own (or none: its RFC 7638 thumbprint is the kid); nothing was stored`,
        );
      } else if (stored.alg !== record.alg) {
        // The same key under another alg (RS256 to PS256): until 2026-12-02 the stored row's alg
        // was loaded, so the server went on signing and publishing the old alg, without a word.
        const what = opts.signer !== undefined ? "signer" : "signingKey (PLANTGATE_SIGNING_KEY)";
        throw new TypeError(
          `${what} has kid ${quoteId(record.kid)}, which is stored with alg ${stored.alg}, not ${record.alg}: give the key under its new alg a kid of its own (its RFC 7638 thumbprint, the kid by default, is the same whatever the alg); nothing was stored`,
        );
      } else if (stamps) {
        // Only once the stored row is known to hold this key (above): a stamp on a row of another
        // key under the same kid would keep that one trusted. One write a load (a minute), never
        // per token. The records keep the stamp read: the key signs here whatever it says. A
        // failed stamp (writes failing while reads work: a full disk, D1's daily write limit, a
        // read-only failover) does not fail the load: until the diff review of 2026-12-02 it did,
        // and such an instance could neither sign nor learn another instance's new key. Told
        // once per run of failures.
        try {
          await store.markSigning!(record.kid, now);
          stampFailing = false;
        } catch (error) {
          if (!stampFailing) {
            stampFailing = true;
            try {
              opts.onStampFailed?.(error);
            } catch {
              // A reporter that throws changes nothing here.
            }
          }
        }
      }
    } else if (records.length === 0) {
      // The first key signs at once: nobody holds a JWKS that could lack it. Stored only if the
      // store is still empty: of instances starting together on an empty store one stores its
      // key, the others store nothing and read that one back, so all of them sign with it and
      // publish it. A store without createIfEmpty (written before it): create, and racing
      // instances may each store a first key (the order then picks one, as for rotations; until each
      // re-reads, one may sign with its own key and publish a JWKS lacking the others').
      const first = await seal(await generateKeyRecord(opts.alg, now), records);
      if (typeof store.createIfEmpty === "function") await store.createIfEmpty(first);
      else await store.create(first);
      records = await store.list();
    } else if (opts.maxAgeMs !== undefined) {
      const placed = place(records);
      const active = signingIndex(
        placed.map((p) => p.record),
        now,
      );
      const current = placed[active]!.record;
      // Schedule the successor one delay (plus one reload, as this check runs at most that late)
      // before the active key reaches its age, unless a later key is already scheduled.
      if (active === placed.length - 1 && now >= current.activatesAt + opts.maxAgeMs - delay - signingReload) {
        const generated = await generateKeyRecord(opts.alg, now);
        const sealed = await seal(generated, records);
        // The delay counts from after the generation and the seal (see the admin's rotateSigningKey).
        const activatesAt = Math.max(Math.max(now, opts.clock()) + delay, current.activatesAt + opts.maxAgeMs);
        const next: SigningKeyRecord = { ...generated, activatesAt };
        // Another instance may have stored its own successor meanwhile: the order picks one, both are told.
        const stored: SigningKeyRecord = { ...sealed, activatesAt };
        await store.create(stored);
        // At most ROTATION_KEY_DELETES (a request waits for this): the prune deletes the rest.
        const deleted = await pruneKeys(store, now, await maxTtl(), undefined, ROTATION_KEY_DELETES);
        opts.onRotated?.({ kid: next.kid, alg: next.alg, activatesAt, deleted });
        records = await store.list();
        // Sealed under the KEK of the key signing when the rows were read: a `keys reencrypt` may
        // have moved the keys since (see resealUnderSigningKek).
        if (encryption !== undefined && (await resealUnderSigningKek(store, encryption, next.kid, next.privateJwk, stored.privateJwk, records, now))) records = await store.list();
      }
    }
    if (encryption?.configured) {
      // Keys stored in clear (before a KEK was set) are encrypted now; compare-and-set, so an
      // instance doing the same at the same moment changes nothing either way. At most
      // KEYS_SEALED_PER_LOAD, the newest first (the key that signs, and will, before the old ones
      // the prune is to delete); the next loads seal the rest.
      const clear = place(records)
        .map((p) => p.record)
        .filter(storedInClear)
        .reverse()
        .slice(0, KEYS_SEALED_PER_LOAD);
      for (const r of clear) await store.replacePrivateJwk(r.kid, r.privateJwk, await encryption.seal(r.kid, r.privateJwk));
      if (clear.length > 0) records = await store.list();
    } else if (!warned && records.some(storedInClear)) {
      warned = true;
      opts.logger?.warn(CLEAR_KEYS_WARNING);
    }
    // A retired key is trusted (and published) until no token it could have signed is alive; the
    // deadline is kept per key so a cached keyring drops it on time. The longest lifetime (the
    // store's clients.maxAccessTokenTtl; a read of every client without it) is asked only when
    // there is more than one key.
    const ttl = records.length > 1 ? await maxTtl() : minTtl;
    const placed = place(records, pinned);
    const loaded: LoadedKey[] = [];
    // Stored, but past the time a token it signed could be alive (until prune deletes it).
    const expired = new Set<string>();
    for (const { record, replacedAt } of placed) {
      const until = replacedAt === null ? Infinity : replacedAt + ttl + signingReload;
      if (now >= until) {
        expired.add(record.kid);
        continue;
      }
      // Only keys that may still sign need their private part in memory.
      const signsHere = pinned === undefined ? replacedAt === null || replacedAt > now : record.kid === pinned;
      loaded.push(await load(record, until, signsHere));
    }
    return { loaded, at: now, expired };
  }

  function startLoad(): NonNullable<typeof loading> {
    const number = ++started;
    const current = {
      number,
      startedAt: Date.now(),
      done: reload()
        .then(({ loaded, at, expired }) => {
          // A load given up on that ends after a later one must not put older keys back.
          if (number < applied) return;
          applied = number;
          keys = loaded;
          expiredKids = expired;
          lastReload = at;
          // A re-read that worked ends a run of failures (see `reloadFailed`), whoever asked for it.
          failing = false;
          late = false;
        })
        .finally(() => {
          if (loading === current) loading = null;
        }),
    };
    // A load given up on is awaited by nobody: its failure is not an unhandled rejection.
    current.done.catch(() => {});
    loading = current;
    return current;
  }

  /**
   * One load shared by every caller, each of which waits at most `loadTimeoutMs` for it. The bound
   * matters in workerd: a load runs in the context of the request that started it, and if that
   * context goes (the request was cancelled, or found hung), its storage calls never settle; every
   * later caller waited for it, and with no bound the isolate never answered again.
   */
  async function reloadOnce(): Promise<void> {
    if (loadTimeout === 0) return (loading ?? startLoad()).done;
    // Late already: given up on, a fresh load starts.
    if (loading !== null && Date.now() - loading.startedAt >= loadTimeout) loading = null;
    const current = loading ?? startLoad();
    if ((await waitAtMost(current.done, loadTimeout - (Date.now() - current.startedAt))) !== LATE) return;
    if (loading === current) loading = null;
    if (keys === null) throw new StorageError(`the signing keys were not loaded from storage within ${loadTimeout} ms`);
    // The keys loaded before serve, and may lack one stored since: `stale` until a load lands (until
    // 2026-12-03 only a failed re-read made it so, and the JWK Set went out cacheable for 300 s).
    // Unless a later load landed meanwhile (this caller's timer fired late on a busy loop).
    if (applied < current.number) late = true;
  }

  const trusted = (k: LoadedKey) => opts.clock() < k.until;

  /**
   * Whether a shared read (see SharedRead) outlived its bound: one whose request went (workerd: its context's calls
   * never settle), never to be waited for, so the caller drops it and starts its own.
   */
  const outlived = (shared: SharedRead<unknown> | null): boolean => shared !== null && loadTimeout > 0 && Date.now() - shared.startedAt >= 2 * loadTimeout;
  /**
   * Waits for a shared read for what is left of that bound, on this request's own timer: its value,
   * or LATE. At most 2^31-1 ms, what a timer takes (a longer one fires at once: loadTimeoutMs may be that long).
   */
  const waitShared = <T>(shared: SharedRead<T>): Promise<T | typeof LATE> =>
    loadTimeout === 0 ? shared.done : waitAtMost(shared.done, Math.min(2 * loadTimeout - (Date.now() - shared.startedAt), MAX_TIMER_MS));

  // The reload and kid-look intervals are `passed` (a clock stepped back counts as over): until
  // 2026-12-01 such a step put `since` in the instance's future, and for as long as the step it
  // neither re-read the keys (it took a revoked key's tokens and signed with it) nor looked for an
  // unknown kid (it refused a `--now` key's tokens).
  /** Whether a failed re-read may be tried again: its time has come, or the clock stepped back past its wait. */
  const retryDue = (now: number): boolean => now >= retryAt || retryAt - now > RELOAD_RETRY_MS;

  // A periodic re-read that failed (keys loaded before): not tried again before this, and told once.
  let retryAt = 0;
  let failing = false;
  // The last re-read waited for was given up on past `loadTimeoutMs` (keys loaded before serve).
  let late = false;
  // The key whose activation, come since the keys were last read, made signingKey() read them again
  // (set once that read settled).
  let rechecked: string | null = null;
  /**
   * That read under way, for the key `kid` (and when it began, real time): every request that picks
   * the key meanwhile waits for it. Until 2026-12-02 only the first did; the others signed with the
   * key at once, though the read was there to find it deleted (`keys rotate --now`). `done` never
   * rejects: it brings the read's failure, for each waiter to handle (see `reloadFailed`).
   */
  let recheck: (SharedRead<unknown> & { kid: string }) | null = null;
  // When an unknown kid last made this instance look at the stored keys (see `storedElsewhere`).
  let lastKidLook = -Infinity;
  /** The look for an unknown kid under way (its read and the load it starts, and when it began, real time): others wait for it. */
  let kidLook: SharedRead<void> | null = null;
  // The stored keys the last load left out as no longer trusted (a retired key past its time):
  // a token of one is not a key stored elsewhere, and reloading would leave it out again.
  let expiredKids = new Set<string>();

  /**
   * Loads on first use, and again once the cache is older than the signing reload interval. A
   * re-read that fails while keys are loaded (a storage outage) serves those keys, as a re-read past
   * `loadTimeoutMs` does: until 2026-11-29 it failed the request (503) though nothing needed the
   * store but the re-read (a client from the client cache, a token to verify). The keys then miss
   * what changed meanwhile (a rotation, a revocation) until a re-read works; one is tried every
   * RELOAD_RETRY_MS, not on every request.
   */
  async function ensure(): Promise<LoadedKey[]> {
    if (keys) {
      const now = opts.clock();
      if (passed(now, lastReload, signingReload) && retryDue(now)) {
        try {
          await reloadOnce();
        } catch (error) {
          reloadFailed(error);
        }
      }
    }
    if (!keys) await reloadKept();
    return keys!;
  }

  /**
   * {@link reloadOnce} until keys are kept: on first use, and again when the load waited for was
   * dropped by an invalidate() meanwhile (see there), which left none (a kid look then took a token
   * of a key just seen in the store for unknown, 401).
   */
  async function reloadKept(): Promise<void> {
    do await reloadOnce();
    while (keys === null);
  }

  /**
   * A re-read that failed with keys loaded: a storage outage (StorageError) is tried again only
   * RELOAD_RETRY_MS later, told once per run of failures, and the keys loaded before serve. Anything
   * else (a key sealed with a key encryption key this instance lacks, a key that does not import)
   * is thrown: the request's 503, as before 2026-11-29, rather than stale keys for good.
   */
  function reloadFailed(error: unknown): void {
    if (keys === null || !(error instanceof StorageError)) throw error;
    // From the failure, not the call: a failure that took longer than the wait (a statement
    // deadline) must not let the next request try again at once.
    retryAt = opts.clock() + RELOAD_RETRY_MS;
    if (failing) return;
    failing = true;
    opts.onReloadFailed?.(error);
  }

  /**
   * Whether the keys in use hold `kid`, or the last load left it out as expired (it never will).
   * None while the keys are dropped (`invalidate`, by an admin call or a prune on this instance
   * during a look's read): the look then loads them. Until 2026-11-30 that look failed the request (500).
   */
  const known = (kid: string): boolean => (keys !== null && keys.some((k) => k.kid === kid)) || expiredKids.has(kid);

  /**
   * Whether a kid this instance does not know is among the stored keys, read at most once per
   * `reloadInterval` (and not while re-reads are failing, see `reloadFailed`). Only the key rows are
   * read: a made-up kid (a flood of them) costs that one read a second, never a whole reload (every
   * key imported, and with several keys every client read for the longest token lifetime); a kid
   * that is there (a key another instance or the CLI stored since) then reloads the keys.
   */
  async function storedElsewhere(kid: string, lookNow = false): Promise<boolean> {
    if (outlived(kidLook)) kidLook = null;
    if (!lookNow && kidLook !== null) {
      // Another request's look is under way: wait for it and the load it starts (at most as long as
      // it may take, on this request's own timer), rather than take the kid for unknown meanwhile
      // (until 2026-11-30 a burst of a new key's tokens reaching an instance got 401 but for the
      // first, whose look the others came during).
      if ((await waitShared(kidLook)) === LATE) return false;
      return keys !== null && keys.some((k) => k.kid === kid);
    }
    const now = opts.clock();
    if (!lookNow && !(passed(now, lastKidLook, reloadInterval) && passed(now, lastReload, reloadInterval) && retryDue(now))) return false;
    lastKidLook = now;
    let lookDone = (): void => {};
    const look = lookNow ? null : { done: new Promise<void>((resolve) => (lookDone = resolve)), startedAt: Date.now() };
    if (look !== null) kidLook = look;
    try {
      const read = store.list();
      const records = loadTimeout === 0 ? await read : await waitAtMost(read, loadTimeout);
      if (records === LATE) {
        read.catch(() => {});
        // Looked for at once: not knowing is not "unknown" (a 200 that revoked nothing).
        if (lookNow) throw new StorageError(`the signing keys were not read from storage within ${loadTimeout} ms`);
        return false;
      }
      // A kid the last load left out as expired (a replayed old token) reloads nothing: it would be
      // left out again, and every second of such tokens would cost a whole reload.
      const stored = !expiredKids.has(kid) && records.some((r) => r.kid === kid);
      // A stored key this instance has not loaded, whatever kid was asked for: a look for a made-up
      // kid loads a key rotated in (`now`) since, which otherwise a flood of made-up kids, taking
      // every second's look, kept from this instance until the minute's reload (until 2026-11-30).
      // After a load every stored key is loaded or left out as expired, so this reloads once per new key.
      if (!stored && records.every((r) => known(r.kid))) return false;
      // Loads started from here on read the store after the key was seen in it.
      const seen = started;
      await reloadKept();
      if (!stored) return false;
      if (lookNow && !known(kid)) {
        // The load waited for was one already under way, begun before that key was stored, or it
        // was given up on (past loadTimeoutMs, the keys loaded before kept): a load of its own, and
        // a 503 should that one not bring the key either. Until 2026-11-30 the revocation answered
        // 200 from the keys it had, and the token kept working where it was issued.
        // Only a load begun before the key was seen is left: concurrent revocations share the new one.
        if (loading !== null && loading.number <= seen) loading = null;
        await reloadKept();
        if (!known(kid)) throw new StorageError(`signing key ${quoteId(kid)} is stored but a load of the keys did not bring it (given up on, or the key went since)`);
      }
      return true;
    } catch (error) {
      // Looked for at once (a revocation): a failed read is the caller's 503, so it is tried again,
      // never a 200 that revoked nothing.
      if (lookNow) throw error;
      reloadFailed(error);
      return false;
    } finally {
      if (kidLook === look) kidLook = null;
      lookDone();
    }
  }

  /**
   * A read of the keys begun after it was asked: a load already under way may have read the store
   * before the deletion the caller looks for, so when the one joined began before (and was applied,
   * not given up on past `loadTimeoutMs`), one more is read.
   */
  async function readAfterNow(): Promise<void> {
    const asked = started;
    const appliedBefore = applied;
    await reloadOnce();
    if (applied > appliedBefore && applied <= asked) await reloadOnce();
  }

  /**
   * Reads the keys again before `kid`, whose activation came since the last read, first signs (see
   * signingKey); one read shared by the requests that come meanwhile, each waiting at most as long
   * as it may take (two loads) on its own timer, as for a kid look. A failed read: the keys loaded
   * serve (a StorageError), or the request fails (anything else), as for a periodic re-read.
   */
  async function recheckStored(kid: string): Promise<void> {
    if (outlived(recheck)) recheck = null;
    let current = recheck;
    if (current === null || current.kid !== kid) {
      const fresh: NonNullable<typeof recheck> = {
        kid,
        startedAt: Date.now(),
        done: readAfterNow().then(
          () => undefined,
          (error: unknown) => error,
        ),
      };
      void fresh.done.then(() => {
        rechecked = kid;
        if (recheck === fresh) recheck = null;
      });
      recheck = current = fresh;
    }
    const error = await waitShared(current);
    if (error !== undefined && error !== LATE) reloadFailed(error);
  }

  return {
    async signingKey() {
      let loaded = await ensure();
      // Chosen at each call from the stored activation times: every instance switches at the same instant.
      let now = opts.clock();
      let k = loaded[signingIndex(loaded, now, pinned)]!;
      // A key whose time came since the keys were last read (a `next` key taking over) signs only
      // after a read of the store has it still stored: `keys rotate --now` deletes the `next` keys
      // made before it, and until 2026-12-02 an instance that had loaded one signed with it at its
      // activation time until its next reload (up to a minute), tokens every other instance
      // refused. Once per such key, at most one extra load per rotation (two when one begun before
      // was under way), shared by the requests meanwhile; a failed read keeps the keys loaded (see
      // `reloadFailed`). Otherwise the cost is these comparisons.
      if (pinned === undefined && k.activatesAt <= now && k.activatesAt > lastReload && k.kid !== rechecked) {
        await recheckStored(k.kid);
        loaded = await ensure();
        now = opts.clock();
        k = loaded[signingIndex(loaded, now, pinned)]!;
      }
      if (k.privateKey === null && k.external === null) {
        throw new Error(`signing key ${quoteId(k.kid)} is held by a signer this instance was not given (option signer)`);
      }
      return { kid: k.kid, alg: k.alg, key: k.privateKey, sign: k.external };
    },
    async verificationKey(kid, options = {}) {
      let k = (await ensure()).find((x) => x.kid === kid);
      // keys may have been dropped meanwhile (invalidate): the kid is then not taken this time.
      if (!k && (await storedElsewhere(kid, options.lookNow === true))) k = keys?.find((x) => x.kid === kid);
      return k && trusted(k) ? { alg: k.alg, key: k.publicKey } : null;
    },
    async jwks() {
      return { keys: (await ensure()).filter(trusted).map((k) => k.publicJwk) };
    },
    get stale() {
      return failing || late;
    },
    async list() {
      await ensure();
      return describeKeys(await store.list(), opts.clock(), await maxTtl(), pinned);
    },
    invalidate() {
      keys = null;
      // A load under way read the store before the change that called this (a rotation with
      // `now`, a revocation): it is never applied (its number is below `applied`), and the next use
      // starts a fresh one. Until 2026-12-01 the next use joined it and put the replaced keys back
      // until the next reload, so the instance that rotated kept signing with the old key.
      applied = ++started;
      loading = null;
    },
    async configuredRecord(now) {
      if (opts.signer !== undefined) return signerRecord(opts.signer, now);
      return opts.configured !== undefined ? keyRecordFromJwk(opts.configured, opts.alg, now) : null;
    },
    configured: opts.signer !== undefined ? "signer" : opts.configured !== undefined ? "signingKey" : null,
  };
}

/**
 * How a listed key's private part is kept in the store: `encrypted` under a key encryption key
 * (which one: {@link ListedSigningKey.kek}), `clear` (readable by anyone who can read the store;
 * with a key encryption key configured, the servers' next load of the keys, or `keys reencrypt`,
 * encrypts it), `external` (held by a `signer`: only its public key is stored; also when the row
 * holds the marker an earlier version sealed under a KEK, which `kek` then names).
 */
export type SigningKeyAtRest = "encrypted" | "clear" | "external";

/**
 * How the KEK a listed key's row is sealed under stands in the lister's configuration
 * (`keyEncryptionKeys` / `PLANTGATE_KEY_ENCRYPTION_KEY`): `current` (the first KEK, which `keys
 * reencrypt` moves keys to; a rotation seals under the KEK of the key signing then), `older` (another configured KEK: `keys reencrypt` moves the key to the first, and until
 * then that KEK must stay configured wherever the keys are loaded), `missing` (no configured KEK has
 * that id: the lister has none, or not that one; a server configured so fails to load the keys).
 */
export type SigningKeyKekStatus = "current" | "older" | "missing";

/** A key as {@link listSigningKeys} describes it: its status, and whether and how it is stored. */
export interface ListedSigningKey extends SigningKeyInfo {
  /**
   * False for the configured key (`signingKey` / `PLANTGATE_SIGNING_KEY`, or `signer`) when the
   * store does not hold it yet: it signs wherever it is configured, and the first load of the keys
   * there stores it. Its `createdAt` and `activatesAt` are then the listing's time (what storing it
   * then would record), and the stored keys' statuses are those they get once it is stored.
   */
  stored: boolean;
  /** How the private key is stored; null when the key is not stored. */
  atRest: SigningKeyAtRest | null;
  /**
   * The id of the key encryption key the row is sealed under (the `<kek id>` of its
   * `enc:A256GCM:<kek id>:...` form: 8 bytes of SHA-256 over a label and the KEK, base64url); null
   * when the row is not sealed (a key in clear, a signer's marker stored as such) or not stored.
   */
  kek: string | null;
  /** How that KEK stands in the lister's configuration; null when `kek` is. */
  kekStatus: SigningKeyKekStatus | null;
}

const atRest = (r: SigningKeyRecord): SigningKeyAtRest =>
  r.privateJwk === EXTERNAL_PRIVATE_KEY || sealsExternalMarker(r.privateJwk) ? "external" : isSealed(r.privateJwk) ? "encrypted" : "clear";

/**
 * Every stored signing key with its status, newest first, read and never written: unlike loading
 * the keyring it makes no first key on an empty store (`[]`), encrypts no key stored in clear
 * (`atRest: "clear"`), stores no configured key (`stored: false`) and rotates nothing. No private
 * key is opened, so a key encryption key that is missing or wrong does not fail the listing: the
 * KEK a row is sealed under is read from the row's form, and told `current`, `older` or `missing`
 * against `keks`, the configured KEKs' ids ({@link KeyEncryption.ids}, first the one that seals).
 * `configured` is the configured key's record ({@link Keyring.configuredRecord}); it is the
 * active key, as it is for the keyring.
 *
 * @example
 * const keys = await listSigningKeys(storage.signingKeys, { now: Date.now(), maxTokenTtlMs: 7200_000, configured: null, keks: [] });
 */
export async function listSigningKeys(
  store: SigningKeyStore,
  options: { now: number; maxTokenTtlMs: number; configured: SigningKeyRecord | null; keks: readonly string[] },
): Promise<ListedSigningKey[]> {
  const records = await store.list();
  const { configured, keks } = options;
  const missing = configured !== null && !records.some((r) => r.kid === configured.kid) ? configured : null;
  const byKid = new Map(records.map((r) => [r.kid, r]));
  const kekStatus = (id: string): SigningKeyKekStatus => (id === keks[0] ? "current" : keks.includes(id) ? "older" : "missing");
  return describeKeys(missing === null ? records : [...records, missing], options.now, options.maxTokenTtlMs, configured?.kid).map((k) => {
    const record = byKid.get(k.kid);
    if (record === undefined) return { ...k, stored: false, atRest: null, kek: null, kekStatus: null };
    const kek = sealedUnder(record.privateJwk);
    return { ...k, stored: true, atRest: atRest(record), kek, kekStatus: kek === null ? null : kekStatus(kek) };
  });
}

/**
 * A listed key as `plantgate keys list` prints it and the console's key API answers it (which adds
 * `signing`): the one mapping both use, so they show the same fields the same way. Times in ISO 8601.
 */
export interface SigningKeyView {
  kid: string;
  alg: string;
  createdAt: string;
  activatesAt: string;
  status: SigningKeyStatus;
  stored: boolean;
  atRest: SigningKeyAtRest | null;
  kek: string | null;
  kekStatus: SigningKeyKekStatus | null;
}

/**
 * The {@link SigningKeyView} of a key of {@link listSigningKeys} (`retiredAt` is left out).
 *
 * @example
 * const view = (await app.admin.listSigningKeys()).map(signingKeyView);
 */
export function signingKeyView(k: ListedSigningKey): SigningKeyView {
  return {
    kid: k.kid,
    alg: k.alg,
    createdAt: isoTimestamp(k.createdAt),
    activatesAt: isoTimestamp(k.activatesAt),
    status: k.status,
    stored: k.stored,
    atRest: k.atRest,
    kek: k.kek,
    kekStatus: k.kekStatus,
  };
}
