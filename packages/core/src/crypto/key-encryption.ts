import { quoteId } from "../admin/errors.js";
import { base64url, fromBase64url } from "./index.js";

/**
 * Encryption of stored private signing keys (AES-256-GCM through Web Crypto, so it runs in workerd
 * too) under one or more key encryption keys (KEKs): the first encrypts, every one decrypts. The
 * key's kid is the associated data, so a sealed key copied onto another kid's row does not open.
 *
 * Stored form (the `privateJwk` text of a key record): `enc:A256GCM:<kek id>:<iv>:<ciphertext>`,
 * each part base64url. The KEK id is the first 8 bytes of SHA-256 over a fixed label and the KEK:
 * it tells which configured KEK opens a row (and which rows `reencrypt` must move) and reveals
 * nothing about the KEK itself.
 */
export interface KeyEncryption {
  /** Whether any KEK is configured. */
  readonly configured: boolean;
  /**
   * Encrypts a private JWK text under the KEK whose id is `kekId` when that one is configured, else
   * under the first; throws when none is configured.
   */
  seal(kid: string, privateJwk: string, kekId?: string | null): Promise<string>;
  /**
   * The private JWK text of a stored value: clear JWK text passes through; a sealed one is
   * decrypted. Throws {@link KeyEncryptionError} when no configured KEK matches or it fails to open.
   */
  open(kid: string, stored: string): Promise<string>;
  /** Whether the stored value is already sealed under the first KEK (so `reencrypt` leaves it). */
  sealedWithPrimary(stored: string): Promise<boolean>;
  /**
   * The ids of the configured KEKs (see {@link sealedUnder}), the first KEK's first; [] without
   * one. Ids only: nothing that reveals a KEK.
   */
  ids(): Promise<string[]>;
}

/** Marks a stored private key that is encrypted. */
export const SEALED_PREFIX = "enc:A256GCM:";

/** The `privateJwk` of a key held by a `signer` outside plantgate: there is no private part to store. */
export const EXTERNAL_PRIVATE_KEY = "external";

/** Where the KEKs come from, for messages: the option and the variable the example servers read. */
export const KEK_SOURCE = "PLANTGATE_KEY_ENCRYPTION_KEY (option keyEncryptionKeys)";

/**
 * A stored signing key cannot be opened: no configured key encryption key matches it, or it does
 * not decrypt. The message is one line that names the variable and the kid, never key material.
 */
export class KeyEncryptionError extends Error {
  override readonly name = "KeyEncryptionError";
}

/** Whether a stored `privateJwk` is sealed (else clear JWK text, or {@link EXTERNAL_PRIVATE_KEY}). */
export const isSealed = (stored: string): boolean => stored.startsWith(SEALED_PREFIX);

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });
const KEK_ID_LABEL = encoder.encode("plantgate key encryption key id\0");


/**
 * The id of the KEK a stored `privateJwk` is sealed under (the `<kek id>` of
 * `enc:A256GCM:<kek id>:<iv>:<ciphertext>`), read without opening it; null when it is not sealed.
 */
export const sealedUnder = (stored: string): string | null => (isSealed(stored) ? stored.slice(SEALED_PREFIX.length).split(":")[0]! : null);

/** Bytes of the AES-GCM tag at the end of a sealed value's ciphertext. */
const TAG_BYTES = 16;

/**
 * Whether a sealed `privateJwk` holds {@link EXTERNAL_PRIVATE_KEY}, the marker of a `signer`'s key,
 * which versions before 2026-11-29 sealed under the KEK too. Told without opening it, by length: an
 * AES-GCM ciphertext is its text plus the 16-byte tag, so the text here is 8 bytes long, and no
 * private JWK is (a load of the keys takes such a text as the marker or fails).
 */
export function sealsExternalMarker(stored: string): boolean {
  if (!isSealed(stored)) return false;
  const ct = fromBase64url(stored.slice(SEALED_PREFIX.length).split(":")[2] ?? "");
  return ct !== null && ct.length === encoder.encode(EXTERNAL_PRIVATE_KEY).length + TAG_BYTES;
}

/**
 * Parses KEKs given as base64url text (each exactly 32 bytes); a comma-separated string is split.
 * An empty or blank string is none (`[]`: keys stay in clear), as an unset or blank
 * `PLANTGATE_KEY_ENCRYPTION_KEY` is to `optionsFromEnv`; until 2026-12-02 it threw `entry 1 is not
 * ...`, so the example below crashed where the variable was not set. An empty entry beside others
 * (`"<key>,"`) is still refused. The error names the position of a bad entry, never its value.
 *
 * @example
 * const keks = parseKeyEncryptionKeys(process.env.PLANTGATE_KEY_ENCRYPTION_KEY ?? ""); // [] when unset
 */
export function parseKeyEncryptionKeys(input: string | readonly string[]): Uint8Array[] {
  if (typeof input === "string" && input.trim() === "") return [];
  const list = typeof input === "string" ? input.split(",") : [...input];
  const out: Uint8Array[] = [];
  for (const [i, raw] of list.entries()) {
    const text = typeof raw === "string" ? raw.trim() : "";
    const bytes = fromBase64url(text);
    if (bytes === null || bytes.length !== 32) {
      throw new TypeError(`keyEncryptionKeys: entry ${i + 1} is not a base64url-encoded 256-bit key (43 characters)`);
    }
    out.push(bytes);
  }
  return out;
}

interface Kek {
  id: string;
  key: CryptoKey;
}

/** HKDF-SHA-256 `info` of the brute-force counter keys' HMAC key (see {@link counterKeyHash}). */
const COUNTER_KEY_INFO = encoder.encode("plantgate attempt counter keys");

/**
 * The hash of the brute-force counters' storage keys under a KEK: HMAC-SHA-256 (base64url) under a
 * key derived from `kek` with HKDF-SHA-256 (empty salt, info "plantgate attempt counter keys").
 * Those keys hold what was typed, a username (where users now and then type their password) or a
 * client id (where a client that swapped id and secret sends its secret): their unkeyed SHA-256
 * let a dictionary run over a copy of the attempts table read a weak password back (until
 * 2026-12-03); under the KEK a copy of the table alone reads nothing back. The key is derived
 * once, on first use, through Web Crypto (so workerd runs it too; a derivation that fails is tried
 * again by the next call). With `digest` (the `crypto` option's `sha256`, Node's in-line hash) the
 * HMAC is two calls of it (RFC 2104) instead of a Web Crypto job per key.
 */
export function counterKeyHash(kek: Uint8Array, digest?: (data: Uint8Array) => Uint8Array): (text: string) => Promise<string> {
  let derived: Promise<Uint8Array> | undefined;
  const bits = () =>
    (derived ??= crypto.subtle
      .importKey("raw", kek as Uint8Array<ArrayBuffer>, "HKDF", false, ["deriveBits"])
      .then((base) => crypto.subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: COUNTER_KEY_INFO }, base, 256))
      .then(
        (raw) => new Uint8Array(raw),
        (error: unknown) => {
          derived = undefined;
          throw error;
        },
      ));
  if (digest !== undefined) {
    let pads: { inner: Uint8Array; outer: Uint8Array } | undefined;
    return async (text) => {
      if (pads === undefined) {
        const key = await bits();
        // RFC 2104: the 32-byte key zero-padded to SHA-256's 64-byte block, XORed with ipad / opad.
        const inner = new Uint8Array(64).fill(0x36);
        const outer = new Uint8Array(64).fill(0x5c);
        for (let i = 0; i < key.length; i++) {
          inner[i]! ^= key[i]!;
          outer[i]! ^= key[i]!;
        }
        pads = { inner, outer };
      }
      const message = encoder.encode(text);
      const first = new Uint8Array(64 + message.length);
      first.set(pads.inner);
      first.set(message, 64);
      const second = new Uint8Array(64 + 32);
      second.set(pads.outer);
      second.set(digest(first), 64);
      return base64url(digest(second));
    };
  }
  let hmac: Promise<CryptoKey> | undefined;
  const key = () =>
    (hmac ??= bits()
      .then((raw) => crypto.subtle.importKey("raw", raw as Uint8Array<ArrayBuffer>, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]))
      .catch((error: unknown) => {
        hmac = undefined;
        throw error;
      }));
  return async (text) => base64url(new Uint8Array(await crypto.subtle.sign("HMAC", await key(), encoder.encode(text))));
}

/**
 * Key encryption over the given KEKs (see {@link parseKeyEncryptionKeys}); none = keys stay clear.
 *
 * @example
 * const enc = createKeyEncryption(parseKeyEncryptionKeys([kek]));
 * const stored = await enc.seal("kid-1", privateJwkText);
 */
export function createKeyEncryption(keks: readonly Uint8Array[]): KeyEncryption {
  let prepared: Promise<Kek[]> | null = null;
  const ready = (): Promise<Kek[]> =>
    (prepared ??= Promise.all(
      keks.map(async (raw) => {
        const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new Uint8Array([...KEK_ID_LABEL, ...raw])));
        // Not extractable: the raw KEK stays only in the caller's options.
        const key = await crypto.subtle.importKey("raw", raw as Uint8Array<ArrayBuffer>, "AES-GCM", false, ["encrypt", "decrypt"]);
        return { id: base64url(digest.subarray(0, 8)), key };
      }),
    ));
  const aad = (kid: string) => encoder.encode(kid);

  return {
    configured: keks.length > 0,
    async seal(kid, privateJwk, kekId) {
      const all = await ready();
      const primary = all.find((k) => k.id === kekId) ?? all[0];
      if (!primary) throw new KeyEncryptionError(`no key encryption key is configured; set ${KEK_SOURCE}`);
      // A fresh random 96-bit IV per seal, always from the platform: never the injectable test randomness.
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: aad(kid), tagLength: 128 }, primary.key, encoder.encode(privateJwk));
      return `${SEALED_PREFIX}${primary.id}:${base64url(iv)}:${base64url(new Uint8Array(sealed))}`;
    },
    async open(kid, stored) {
      if (!isSealed(stored)) return stored;
      const [id, ivText, ctText] = stored.slice(SEALED_PREFIX.length).split(":");
      const kek = (await ready()).find((k) => k.id === id);
      if (!kek) {
        throw new KeyEncryptionError(
          keks.length === 0
            ? `signing key ${quoteId(kid)} is stored encrypted and no key encryption key is configured; set ${KEK_SOURCE}`
            : `signing key ${quoteId(kid)} is encrypted with a key encryption key that is not configured; add it to ${KEK_SOURCE}`,
        );
      }
      const iv = fromBase64url(ivText ?? "");
      const ct = fromBase64url(ctText ?? "");
      try {
        if (iv === null || ct === null || iv.length !== 12) throw new Error("malformed");
        const clear = await crypto.subtle.decrypt({ name: "AES-GCM", iv: iv as Uint8Array<ArrayBuffer>, additionalData: aad(kid), tagLength: 128 }, kek.key, ct as Uint8Array<ArrayBuffer>);
        return decoder.decode(clear);
      } catch {
        throw new KeyEncryptionError(`signing key ${quoteId(kid)} does not decrypt with its key encryption key (the stored row was altered or belongs to another kid); check ${KEK_SOURCE}`);
      }
    },
    async sealedWithPrimary(stored) {
      const [primary] = await ready();
      return primary !== undefined && stored.startsWith(`${SEALED_PREFIX}${primary.id}:`);
    },
    async ids() {
      return (await ready()).map((k) => k.id);
    },
  };
}
