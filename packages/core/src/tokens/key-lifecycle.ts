/**
 * A signing key's life (next, active, retired, prunable), from stored creation and activation
 * times alone, so every instance reads the same answer; and the pruning of dead keys.
 */
import type { SigningKeyRecord, SigningKeyStore } from "../storage/types.js";

/**
 * How often every instance re-reads the keys from storage (ms): a key rotated by the CLI or by
 * another instance is in every instance's JWKS within this time, and a `--now` rotation signs
 * everywhere within it.
 */
export const SIGNING_RELOAD_MS = 60_000;

/**
 * Where a key is in its life: `next` is published but signs only from its activation time;
 * `active` signs new tokens; `retired` was replaced but may still have unexpired tokens, so it
 * stays in the JWKS and verifies; `prunable` was replaced longer ago than the longest access-token
 * lifetime (plus the reload interval), so no live token can carry it and it can be deleted.
 */
export type SigningKeyStatus = "next" | "active" | "retired" | "prunable";

/** A key as `keys list` and the admin show it; never the private part. */
export interface SigningKeyInfo {
  kid: string;
  alg: string;
  /** Epoch ms. */
  createdAt: number;
  /** Epoch ms from which the key signs (or signed). */
  activatesAt: number;
  /**
   * Epoch ms when the key stopped signing everywhere: when a newer key took over, or the last
   * stamp of an instance configured with it (`lastSignedAt`) when that is later; null for `next`
   * and `active` keys.
   */
  retiredAt: number | null;
  status: SigningKeyStatus;
}

/** Activation order; equal times are ordered by creation, then kid, so every instance agrees. */
const inOrder = (a: SigningKeyRecord, b: SigningKeyRecord) =>
  a.activatesAt - b.activatesAt || a.createdAt - b.createdAt || (a.kid < b.kid ? -1 : a.kid > b.kid ? 1 : 0);

interface Placed {
  record: SigningKeyRecord;
  /**
   * When the key stops signing everywhere: its successor's (in activation order) activation, or
   * its `lastSignedAt` when later; null for the pinned key and for the last key (unless stamped
   * and read by a pinned instance, see {@link place}).
   */
  replacedAt: number | null;
}

/**
 * Keys in activation order, each with the time it stops signing. A key's successor takes over at
 * its activation, but an instance configured with the key (`signingKey`, `signer`) signs with it
 * whatever comes after, and stamps `lastSignedAt` at each load of the keys (see
 * {@link SigningKeyStore.markSigning}): it signs with the key until its next load (at most the reload
 * interval later, the margin the retirement already has), so the key is not replaced before that
 * stamp. Read by an instance pinned to another key (`pinnedKid`), a stamped key after all the others
 * (one stored again by an instance still configured with it, after this instance's key was stored)
 * is replaced at its stamp, not never. Until 2026-12-02 no stamp was kept: an instance pinned to the
 * new key of a gradual deployment refused the old version's fresh tokens once the token lifetime
 * had passed, and trusted a replaced key that an old-version instance stored again for good.
 * A key without a stamp (a rotated key, a store without `markSigning`) is placed as before.
 */
export function place(records: readonly SigningKeyRecord[], pinnedKid?: string): Placed[] {
  const sorted = [...records].sort(inOrder);
  return sorted.map((record, i) => {
    const stamp = record.lastSignedAt;
    const next = sorted[i + 1];
    let replacedAt: number | null;
    if (record.kid === pinnedKid) replacedAt = null;
    else if (next !== undefined) replacedAt = stamp === undefined ? next.activatesAt : Math.max(next.activatesAt, stamp);
    else replacedAt = pinnedKid !== undefined && stamp !== undefined ? stamp : null;
    return { record, replacedAt };
  });
}

/**
 * The index of the key that signs at `now`: the pinned (configured) one, else the last whose
 * activation time has come; the first when none has (this instance's clock is behind the one that
 * created the only key).
 */
export function signingIndex(keys: readonly { kid: string; activatesAt: number }[], now: number, pinnedKid?: string): number {
  if (pinnedKid !== undefined) {
    const i = keys.findIndex((k) => k.kid === pinnedKid);
    if (i >= 0) return i;
  }
  let found = 0;
  for (let i = 1; i < keys.length; i++) if (keys[i]!.activatesAt <= now) found = i;
  return found;
}

/**
 * The status of every key, newest first. `activeKid` is the configured signing key when there is
 * one (else the key whose activation time came last signs); `maxTokenTtlMs` is the longest
 * access-token lifetime in force.
 *
 * @example
 * describeKeys(await storage.signingKeys.list(), Date.now(), 7200_000);
 */
export function describeKeys(records: readonly SigningKeyRecord[], now: number, maxTokenTtlMs: number, activeKid?: string): SigningKeyInfo[] {
  const placed = place(records, activeKid);
  const active = signingIndex(
    placed.map((p) => p.record),
    now,
    activeKid,
  );
  return placed
    .map(({ record: r, replacedAt }, i): SigningKeyInfo => {
      const base = { kid: r.kid, alg: r.alg, createdAt: r.createdAt, activatesAt: r.activatesAt };
      if (i === active) return { ...base, retiredAt: null, status: "active" };
      if (r.activatesAt > now) return { ...base, retiredAt: null, status: "next" };
      // Prunable once the last token it could have signed (up to SIGNING_RELOAD_MS after it was
      // replaced, on an instance that had not re-read the keys yet) has expired.
      const retiredAt = replacedAt !== null && replacedAt <= now ? replacedAt : null;
      const prunable = retiredAt !== null && now - retiredAt >= maxTokenTtlMs + SIGNING_RELOAD_MS;
      return { ...base, retiredAt, status: prunable ? "prunable" : "retired" };
    })
    .reverse();
}

/**
 * The kids of the `prunable` keys among `records`, oldest first (never `activeKid`). Oldest first
 * so that any prefix of them may be deleted alone: a key's retirement is read from the key after
 * it, and deleting the oldest keys changes no other key's successor. (A key kept `retired` by its
 * stamp, `lastSignedAt`, before a prunable one keeps that retirement when the prunable one goes:
 * its stamp is later than the activations after it.)
 */
export function prunableKids(records: readonly SigningKeyRecord[], now: number, maxTokenTtlMs: number, activeKid?: string): string[] {
  return describeKeys(records, now, maxTokenTtlMs, activeKid)
    // "prunable" is never the active key; the kid check says so again, so no caller can delete the key that signs.
    .filter((k) => k.status === "prunable" && k.kid !== activeKid)
    .map((k) => k.kid)
    .reverse();
}

/**
 * The most signing keys a rotation deletes (the console's or the CLI's `rotateSigningKey`, and
 * automatic rotation): one statement each, on a request path, so a store holding many prunable
 * keys costs a rotation at most this many deletes; the rest go with the next rotations or the
 * prune. A rotation makes at most one key prunable in the steady state, so two keep up.
 */
export const ROTATION_KEY_DELETES = 2;

/**
 * The most `prunable` keys the console's revocation (`DELETE /console/api/signing-keys`) deletes
 * before the revoked key, one statement each, in its request: with more before it, it deletes the
 * oldest this many and refuses to revoke until the rest are gone (revoke again, or the prune).
 * Deleting the key alone is no option: its prunable predecessor would be read as replaced by the
 * key after it, and trusted again. 8 keeps the request under the Free plan's 50 D1 queries with the
 * costliest start of an isolate beside it.
 */
export const REVOKE_KEY_DELETES = 8;

/** What {@link deletePrunableKeys} did. */
export interface KeyPrune {
  /** The kids deleted, oldest first (a delete that found its row gone already is not among them). */
  deleted: string[];
  /** The deletes made: each a storage call (a statement), including one that found no row and one that failed. */
  attempted: number;
  /** Whether prunable keys were left past `limit`, as of the list. */
  left: boolean;
  /** The delete that failed, if one did: the keys after it were not tried; those before it stay deleted. */
  failed?: { kid: string; error: unknown };
}

/**
 * Deletes the prunable keys of a store, the oldest first, at most `limit` of them (default: all):
 * one `list`, then one `delete` per key. A failed delete ends it and is answered in `failed`, not
 * thrown, so the caller still learns what was deleted and attempted before it (the prune counts
 * them, and re-reads the keys); a failed list rejects. An aborted `signal` ends it before its next
 * storage call (the list, or a delete; the delete under way finishes), `left` true when prunable
 * keys were not tried, or the list was not read (the prune's stop; until 2026-12-02 the keys
 * ignored it, and a stop waited for every prunable key's delete). The one loop behind
 * {@link pruneKeys} (the rotations) and the prune's keys (until 2026-12-02 the prune repeated it to
 * count the attempts).
 *
 * @example
 * const { deleted, attempted, left, failed } = await deletePrunableKeys(storage.signingKeys, Date.now(), 7200_000, undefined, 3);
 */
export async function deletePrunableKeys(store: SigningKeyStore, now: number, maxTokenTtlMs: number, activeKid?: string, limit = Number.POSITIVE_INFINITY, signal?: AbortSignal): Promise<KeyPrune> {
  // A function: TypeScript would keep the first check's narrowing across the awaits.
  const aborted = () => signal?.aborted === true;
  if (aborted()) return { deleted: [], attempted: 0, left: true };
  const prunable = prunableKids(await store.list(), now, maxTokenTtlMs, activeKid);
  const result: KeyPrune = { deleted: [], attempted: 0, left: prunable.length > limit };
  for (const kid of prunable.slice(0, limit)) {
    if (aborted()) {
      result.left = true;
      break;
    }
    result.attempted++;
    try {
      if (await store.delete(kid)) result.deleted.push(kid);
    } catch (error) {
      result.failed = { kid, error };
      break;
    }
  }
  return result;
}

/**
 * Deletes the prunable keys of a store, the oldest first, at most `limit` of them (default: all),
 * and returns the kids deleted; rejects with a failed delete's error (see {@link deletePrunableKeys}).
 *
 * @example
 * const deleted = await pruneKeys(storage.signingKeys, Date.now(), 7200_000);
 */
export async function pruneKeys(store: SigningKeyStore, now: number, maxTokenTtlMs: number, activeKid?: string, limit = Number.POSITIVE_INFINITY): Promise<string[]> {
  const { deleted, failed } = await deletePrunableKeys(store, now, maxTokenTtlMs, activeKid, limit);
  if (failed !== undefined) throw failed.error;
  return deleted;
}
