import type {
  AccountRecord,
  AttemptRecord,
  ClientRecord,
  ClientSecretRecord,
  PlantRecord,
  RefreshTokenRecord,
  SessionRecord,
  SigningKeyRecord,
  Storage,
} from "./types.js";
import { createMemoryAuditStore } from "./memory-audit.js";
import { UnstorableValueError } from "../errors/index.js";
import { byCodeUnit, isWellFormed } from "../util/storable-text.js";

// Records are copied in and out so callers can never mutate stored state by accident,
// which keeps this backend honest as the reference the conformance suite compares against.
const copyClient = (r: ClientRecord): ClientRecord => ({
  ...r,
  secrets: r.secrets.map((x) => ({ ...x })),
  grantTypes: [...r.grantTypes],
  scopes: [...r.scopes],
});
/** Oldest first, by `createdAt` then `id`, as the interface orders them. */
const bySecretAge = (a: ClientSecretRecord, b: ClientSecretRecord) => a.createdAt - b.createdAt || byCodeUnit(a.id, b.id);
const copyAccount = (r: AccountRecord): AccountRecord => ({ ...r, roles: [...r.roles] });
const copyRefresh = (r: RefreshTokenRecord): RefreshTokenRecord => ({ ...r, scope: [...r.scope] });

/**
 * The first index of ascending `sorted` whose value is above `value` (strings in code-unit order):
 * where `value` goes in, after any equal to it; one before it is an equal one, if there is one.
 */
function firstAbove<T extends string | number>(sorted: T[], value: T): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Options of {@link createMemoryStorage}. */
export interface MemoryStorageOptions {
  /** Keep security events in an audit store (`storage.audit`). Default false. */
  audit?: boolean;
}

/**
 * The in-memory storage: complete and atomic within one process; lost on exit.
 *
 * @example
 * const app = createPlantgate({ storage: createMemoryStorage({ audit: true }) });
 */
export function createMemoryStorage(options: MemoryStorageOptions = {}): Storage {
  const clients = new Map<string, ClientRecord>();
  /** Client ids in code-unit order: a page is a binary search and a slice, whatever its depth. */
  const clientOrder: string[] = [];
  /**
   * The distinct non-null `accessTokenTtl`s of the clients, ascending, and how many clients have
   * each: the largest is the last, whatever the number of clients. Only `create` and `delete`
   * change a client's lifetime (no other method touches it).
   */
  const ttlOrder: number[] = [];
  const ttlCounts = new Map<number, number>();
  const countTtl = (ttl: number | null, by: 1 | -1) => {
    if (ttl == null) return;
    const count = (ttlCounts.get(ttl) ?? 0) + by;
    if (count > 0) {
      if (!ttlCounts.has(ttl)) ttlOrder.splice(firstAbove(ttlOrder, ttl), 0, ttl);
      ttlCounts.set(ttl, count);
    } else {
      ttlCounts.delete(ttl);
      ttlOrder.splice(firstAbove(ttlOrder, ttl) - 1, 1);
    }
  };
  const accounts = new Map<string, AccountRecord>();
  const usernames = new Map<string, string>();
  /** Account ids in creation order: a page is a slice of it, whatever its depth. */
  const accountOrder: string[] = [];
  const refresh = new Map<string, RefreshTokenRecord>();
  /** Hashes of the tokens that may hold a replay, for `dropReplays` (the rest are checked as they are read). */
  const replays = new Set<string>();
  const plants = new Map<bigint, PlantRecord>();
  const keys = new Map<string, SigningKeyRecord>();
  const attempts = new Map<string, AttemptRecord>();
  const revoked = new Map<string, number>();
  const sessions = new Map<string, SessionRecord>();
  const jtis = new Map<string, number>();

  return {
    ...(options.audit === true ? { audit: createMemoryAuditStore() } : {}),
    clients: {
      async get(id) {
        const r = clients.get(id);
        return r ? copyClient(r) : null;
      },
      async create(record) {
        // As the SQL stores refuse it: a page's cursor is a client id, and no cursor (core's
        // `after`, the console's UTF-8 one) carries a lone surrogate. Held here until 2026-11-30,
        // such an id ended `admin.listClientsPage` at the page it closed (the next call refused
        // its own cursor) and made the console's cursor skip the ids after it.
        if (!isWellFormed(record.clientId)) throw new UnstorableValueError("clientId contains a lone UTF-16 surrogate, which no store holds exactly");
        if (clients.has(record.clientId)) return false;
        const copy = copyClient(record);
        copy.secrets.sort(bySecretAge);
        clients.set(record.clientId, copy);
        clientOrder.splice(firstAbove(clientOrder, record.clientId), 0, record.clientId);
        countTtl(copy.accessTokenTtl, 1);
        return true;
      },
      async addSecret(id, secret) {
        const r = clients.get(id);
        if (!r || r.secrets.some((x) => x.id === secret.id)) return false;
        r.secrets = [...r.secrets, { ...secret }].sort(bySecretAge);
        r.secretUpdatedAt = secret.createdAt;
        return true;
      },
      async replaceSecrets(id, secret) {
        const r = clients.get(id);
        if (!r) return false;
        r.secrets = [{ ...secret }];
        r.secretUpdatedAt = secret.createdAt;
        return true;
      },
      async removeSecret(id, secretId, now) {
        const r = clients.get(id);
        if (!r || !r.secrets.some((x) => x.id === secretId)) return false;
        r.secrets = r.secrets.filter((x) => x.id !== secretId);
        r.secretUpdatedAt = now;
        return true;
      },
      async touchSecret(id, secretId, usedAt) {
        const x = clients.get(id)?.secrets.find((y) => y.id === secretId);
        if (x && (x.lastUsedAt === null || x.lastUsedAt < usedAt)) x.lastUsedAt = usedAt;
      },
      async list() {
        return clientOrder.map((id) => copyClient(clients.get(id)!));
      },
      async listPage(after, limit) {
        const from = after === null ? 0 : firstAbove(clientOrder, after);
        return clientOrder.slice(from, from + limit).map((id) => copyClient(clients.get(id)!));
      },
      async maxAccessTokenTtl() {
        return ttlOrder.length === 0 ? null : ttlOrder[ttlOrder.length - 1]!;
      },
      async delete(id) {
        const record = clients.get(id);
        if (record === undefined) return false;
        clients.delete(id);
        countTtl(record.accessTokenTtl, -1);
        // The id is in the order (create put it there), just before the first id after it.
        clientOrder.splice(firstAbove(clientOrder, id) - 1, 1);
        return true;
      },
    },
    accounts: {
      async get(id) {
        const r = accounts.get(id);
        return r ? copyAccount(r) : null;
      },
      async findByUsername(username) {
        const id = usernames.get(username);
        const r = id === undefined ? undefined : accounts.get(id);
        return r ? copyAccount(r) : null;
      },
      async create(record) {
        if (accounts.has(record.id) || usernames.has(record.username)) return false;
        accounts.set(record.id, copyAccount(record));
        usernames.set(record.username, record.id);
        accountOrder.push(record.id);
        return true;
      },
      async createMany(records) {
        const ids = new Set<string>();
        const names = new Set<string>();
        for (const [i, r] of records.entries()) {
          if (accounts.has(r.id) || usernames.has(r.username) || ids.has(r.id) || names.has(r.username)) return i;
          ids.add(r.id);
          names.add(r.username);
        }
        for (const r of records) {
          accounts.set(r.id, copyAccount(r));
          usernames.set(r.username, r.id);
          accountOrder.push(r.id);
        }
        return null;
      },
      async setEnabled(id, enabled) {
        const r = accounts.get(id);
        if (!r) return false;
        accounts.set(id, { ...r, enabled });
        return true;
      },
      async setPasswordHash(id, expected, replacement) {
        // No await between the compare and the set: atomic on a single JS thread.
        const r = accounts.get(id);
        if (!r || r.passwordHash !== expected) return false;
        accounts.set(id, { ...r, passwordHash: replacement });
        return true;
      },
      async list(offset, limit) {
        const items = accountOrder.slice(offset, offset + limit).map((id) => copyAccount(accounts.get(id)!));
        return { items, total: accountOrder.length };
      },
    },
    refreshTokens: {
      async create(record) {
        refresh.set(record.tokenHash, copyRefresh(record));
        if (record.replay !== null) replays.add(record.tokenHash);
      },
      async findByHash(hash) {
        const r = refresh.get(hash);
        return r ? copyRefresh(r) : null;
      },
      async consume(hash, now, replacement, replay = null) {
        // No await between the check and the writes: atomic on a single JS thread.
        const r = refresh.get(hash);
        if (!r || r.consumedAt !== null || r.revokedAt !== null || refresh.has(replacement.tokenHash)) return false;
        r.consumedAt = now;
        r.replay = replay;
        if (replay !== null) replays.add(hash);
        refresh.set(replacement.tokenHash, copyRefresh(replacement));
        return true;
      },
      async graceUse(hash, consumedAfter, maxUses) {
        const r = refresh.get(hash);
        if (!r || r.consumedAt === null || r.consumedAt <= consumedAfter || r.revokedAt !== null || r.replay === null || r.graceUses >= maxUses) {
          return null;
        }
        r.graceUses += 1;
        return copyRefresh(r);
      },
      async revokeFamily(familyId, now) {
        let marked = false;
        for (const r of refresh.values()) {
          if (r.familyId === familyId && r.revokedAt === null) {
            r.revokedAt = now;
            marked = true;
          }
        }
        return marked;
      },
      async revokeByAccount(accountId, now) {
        for (const r of refresh.values()) {
          if (r.accountId === accountId && r.revokedAt === null) r.revokedAt = now;
        }
      },
      async deleteExpired(now, limit = Infinity) {
        let n = 0;
        for (const [hash, r] of refresh) {
          if (n >= limit) break;
          // A consumed token is kept until its family ends: presenting it again is reuse detection.
          if (r.familyExpiresAt <= now || (r.consumedAt === null && r.expiresAt <= now)) {
            refresh.delete(hash);
            n++;
          }
        }
        return n;
      },
      async dropReplays(consumedBefore, limit) {
        if (!Number.isSafeInteger(limit) || limit < 1) throw new TypeError("dropReplays: limit must be a positive integer");
        // Only the tokens that may hold a replay (the SQL stores' partial index): a batch reads
        // what it clears and the few too young, not every token.
        let n = 0;
        for (const hash of replays) {
          if (n >= limit) break;
          const r = refresh.get(hash);
          if (r === undefined || r.replay === null) {
            replays.delete(hash);
          } else if (r.consumedAt !== null && r.consumedAt <= consumedBefore) {
            r.replay = null;
            replays.delete(hash);
            n++;
          }
        }
        return n;
      },
    },
    plants: {
      async create(record) {
        if (plants.has(record.id)) return false;
        plants.set(record.id, { ...record });
        return true;
      },
      async get(id) {
        const r = plants.get(id);
        return r ? { ...r } : null;
      },
    },
    signingKeys: {
      async list() {
        return [...keys.values()].map((k) => ({ ...k }));
      },
      async create(record) {
        if (keys.has(record.kid)) return false;
        keys.set(record.kid, { ...record });
        return true;
      },
      async createIfEmpty(record) {
        // Checked and set with no await in between: of racing callers exactly one finds it empty.
        if (keys.size > 0) return false;
        keys.set(record.kid, { ...record });
        return true;
      },
      async delete(kid) {
        return keys.delete(kid);
      },
      async replacePrivateJwk(kid, expected, replacement) {
        const k = keys.get(kid);
        if (!k || k.privateJwk !== expected) return false;
        keys.set(kid, { ...k, privateJwk: replacement });
        return true;
      },
      async markSigning(kid, at) {
        const k = keys.get(kid);
        if (k && !(k.lastSignedAt !== undefined && k.lastSignedAt >= at)) keys.set(kid, { ...k, lastSignedAt: at });
      },
    },
    attempts: {
      async increment(key, now, windowMs) {
        const r = attempts.get(key);
        const next = !r || r.windowStart <= now - windowMs ? { key, count: 1, windowStart: now } : { ...r, count: r.count + 1 };
        attempts.set(key, next);
        return { ...next };
      },
      async get(key) {
        const r = attempts.get(key);
        return r ? { ...r } : null;
      },
      async reset(key) {
        attempts.delete(key);
      },
      async refund(key, windowStart, count) {
        const r = attempts.get(key);
        if (!r || r.windowStart !== windowStart || r.count <= 0) return;
        if (r.count <= count) attempts.delete(key);
        else attempts.set(key, { ...r, count: r.count - count });
      },
      async deleteExpired(before, limit = Infinity) {
        let n = 0;
        for (const [key, r] of attempts) {
          if (n >= limit) break;
          if (r.windowStart <= before) {
            attempts.delete(key);
            n++;
          }
        }
        return n;
      },
    },
    revokedTokens: {
      async add(jti, expiresAt) {
        if (revoked.has(jti)) return false;
        revoked.set(jti, expiresAt);
        return true;
      },
      async has(jti) {
        return revoked.has(jti);
      },
      async deleteExpired(now, limit = Infinity) {
        let n = 0;
        for (const [jti, exp] of revoked) {
          if (n >= limit) break;
          if (exp <= now) {
            revoked.delete(jti);
            n++;
          }
        }
        return n;
      },
    },
    sessions: {
      async create(record) {
        if (sessions.has(record.idHash)) return false;
        sessions.set(record.idHash, { ...record });
        return true;
      },
      async get(idHash) {
        const r = sessions.get(idHash);
        return r ? { ...r } : null;
      },
      async delete(idHash) {
        return sessions.delete(idHash);
      },
      async touch(idHash, expiresAt) {
        const r = sessions.get(idHash);
        if (!r || r.expiresAt >= expiresAt) return false;
        r.expiresAt = expiresAt;
        return true;
      },
      async deleteByAccount(accountId) {
        let n = 0;
        for (const [h, r] of sessions) {
          if (r.accountId === accountId) {
            sessions.delete(h);
            n++;
          }
        }
        return n;
      },
      async deleteExpired(now, limit = Infinity) {
        let n = 0;
        for (const [h, r] of sessions) {
          if (n >= limit) break;
          if (r.expiresAt <= now) {
            sessions.delete(h);
            n++;
          }
        }
        return n;
      },
    },
    assertionJtis: {
      async use(key, expiresAt) {
        if (jtis.has(key)) return false;
        jtis.set(key, expiresAt);
        return true;
      },
      async deleteExpired(now, limit = Infinity) {
        let n = 0;
        for (const [key, exp] of jtis) {
          if (n >= limit) break;
          if (exp <= now) {
            jtis.delete(key);
            n++;
          }
        }
        return n;
      },
    },
  };
}
