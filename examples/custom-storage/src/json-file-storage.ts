/**
 * A storage backend for plantgate written the way a library user would: only public exports of
 * `@plantgate/core`. Everything lives in memory; after every write the whole state is persisted to
 * one JSON file atomically (temp file in the same folder, fsync, rename), so a crash leaves either
 * the old file or the new one, never half of one.
 *
 * Good for a single process with modest data (a demo, a small internal deployment). One process (and
 * one store object) per file: a second one would overwrite the first one's writes (a revocation
 * undone), so opening takes a lock file beside the data (`<file>.lock`, holding the process id) and a
 * second opener is refused while the holder lives; a lock left by a process that died is taken over.
 * After a failed write (disk full, folder gone) memory holds changes the file lacks, which their
 * callers were told failed: the store then refuses every call (StorageError, a 503) until the
 * process restarts and reads the file as last written, rather than serve or later persist them.
 *
 * It has no audit store: `storage.audit` is optional, and without one security events still reach
 * the `onEvent` hook but are not kept (the conformance suite skips its audit cases). An append-only
 * audit trail would rewrite this whole file on every token; a backend that wants one adds `audit`.
 */
import { randomUUID } from "node:crypto";
import { link, mkdir, open, readdir, readFile, rename, rm } from "node:fs/promises";
import { hostname } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import {
  StorageError,
  UnstorableValueError,
  type AccountRecord,
  type AttemptRecord,
  type ClientRecord,
  type ClientSecretRecord,
  type PlantRecord,
  type RefreshTokenRecord,
  type SessionRecord,
  type SigningKeyRecord,
  type Storage,
} from "@plantgate/core";

/** A lone UTF-16 surrogate (one not part of a pair). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A {@link Storage} backed by one JSON file. */
export interface JsonFileStorage extends Storage {
  /** Absolute path of the JSON file. */
  readonly path: string;
  /** Resolves once every write made so far is on disk. */
  flush(): Promise<void>;
  /** Flushes, then releases the file (its lock) for another store; every later call is refused. */
  close(): Promise<void>;
}

/** Files held by a store of this process (the lock file says which process, not which store). */
const held = new Set<string>();

const FORMAT = "plantgate-json-storage";
/**
 * Version 2 added `attempts`, `revokedTokens` and `sessions`; a version 1 file reads as having none.
 * Version 3 gave clients several secrets (`secrets` instead of `secretHash`), `authMethod`, `jwks`
 * and `jwksUri`, and added `assertionJtis`; an older client's secret becomes its first secret.
 */
const VERSION = 3;

/** What the file holds: plant ids as decimal strings (JSON numbers lose precision past 2^53). */
interface FileState {
  format: typeof FORMAT;
  version: typeof VERSION;
  clients: ClientRecord[];
  accounts: AccountRecord[];
  refreshTokens: RefreshTokenRecord[];
  plants: { id: string; name: string; tag: string | null }[];
  signingKeys: SigningKeyRecord[];
  attempts: AttemptRecord[];
  revokedTokens: { jti: string; expiresAt: number }[];
  sessions: SessionRecord[];
  assertionJtis: { key: string; expiresAt: number }[];
}

// Copies in and out, so no caller can mutate stored state through a record it passed or got.
const copyClient = (r: ClientRecord): ClientRecord => ({ ...r, secrets: r.secrets.map((x) => ({ ...x })), grantTypes: [...r.grantTypes], scopes: [...r.scopes] });
/** Secrets are kept oldest first (by `createdAt`, then `id`), as the contract orders them. */
const bySecretAge = (a: ClientSecretRecord, b: ClientSecretRecord) => a.createdAt - b.createdAt || byCodeUnit(a.id, b.id);
const copyAccount = (r: AccountRecord): AccountRecord => ({ ...r, roles: [...r.roles] });
const copyRefresh = (r: RefreshTokenRecord): RefreshTokenRecord => ({ ...r, scope: [...r.scope] });
const copyPlant = (r: PlantRecord): PlantRecord => ({ id: r.id, name: r.name, tag: r.tag });
const copyKey = (r: SigningKeyRecord): SigningKeyRecord => ({ ...r });
const copyAttempt = (r: AttemptRecord): AttemptRecord => ({ ...r });
const copySession = (r: SessionRecord): SessionRecord => ({ ...r });

/** JavaScript's `<` on strings compares UTF-16 code units, which is the order the contract asks for. */
const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Opens (or starts) the JSON file store at `path`. A missing file is an empty store (its folder and
 * the lock file are created now, the file at the first write); a file that is not a valid store
 * rejects with an `Error` naming the file and the problem, and the file is left untouched. A file
 * another live process holds rejects with a `StorageError` naming that process.
 *
 * @example
 * const storage = await createJsonFileStorage("./data/plantgate.json");
 * const app = createPlantgate({ storage });
 * // ... and at shutdown, once the server stopped: await storage.close();
 */
export async function createJsonFileStorage(path: string): Promise<JsonFileStorage> {
  const file = resolve(path);
  const unlock = await lock(file);
  let state: FileState;
  try {
    // A crash between writing a temp file and renaming it left a full copy (keys, hashes) behind.
    await removeTempFiles(file);
    state = await load(file);
  } catch (error) {
    await unlock();
    throw error;
  }

  const clients = new Map(state.clients.map((r) => [r.clientId, r]));
  const accounts = new Map(state.accounts.map((r) => [r.id, r]));
  const usernames = new Map(state.accounts.map((r) => [r.username, r.id]));
  // The file lists accounts in creation order (a Map keeps insertion order, and that is the order
  // they are written in), so their places survive a restart; a page is a slice of this array.
  const accountOrder = state.accounts.map((r) => r.id);
  const refresh = new Map(state.refreshTokens.map((r) => [r.tokenHash, r]));
  const plants = new Map<bigint, PlantRecord>(state.plants.map((p) => [BigInt(p.id), { id: BigInt(p.id), name: p.name, tag: p.tag }]));
  const keys = new Map(state.signingKeys.map((r) => [r.kid, r]));
  const attempts = new Map(state.attempts.map((r) => [r.key, r]));
  const revoked = new Map(state.revokedTokens.map((r) => [r.jti, r.expiresAt]));
  const sessions = new Map(state.sessions.map((r) => [r.idHash, r]));
  const jtis = new Map(state.assertionJtis.map((r) => [r.key, r.expiresAt]));

  const serialize = (): string => {
    const out: FileState = {
      format: FORMAT,
      version: VERSION,
      clients: [...clients.values()],
      accounts: accountOrder.map((id) => accounts.get(id)!),
      refreshTokens: [...refresh.values()],
      plants: [...plants.values()].map((p) => ({ id: p.id.toString(), name: p.name, tag: p.tag })),
      signingKeys: [...keys.values()],
      attempts: [...attempts.values()],
      revokedTokens: [...revoked].map(([jti, expiresAt]) => ({ jti, expiresAt })),
      sessions: [...sessions.values()],
      assertionJtis: [...jtis].map(([key, expiresAt]) => ({ key, expiresAt })),
    };
    return `${JSON.stringify(out, null, 2)}\n`;
  };

  // The write queue: one file write at a time, in order. A write that has not started yet serializes
  // the state when it starts, so it also carries every change made while it waited; later callers
  // join it instead of queueing another one.
  let tail: Promise<void> = Promise.resolve();
  let waiting: Promise<void> | null = null;
  /** Set by the first failed write (or by close): every later call is refused with it. */
  let stopped: StorageError | null = null;
  /** The first failed write's error, which `flush` and `close` report. */
  let failed: StorageError | null = null;
  const persist = (): Promise<void> => {
    if (waiting) return waiting;
    const run = tail.then(() => {
      waiting = null; // from here on, a new change needs a new write
      if (stopped) throw stopped;
      return writeAtomically(file, serialize());
    });
    const reported = run.catch((cause: unknown) => {
      // The changes are in memory but not on disk, and their callers are told they failed: serving
      // them, or letting a later write persist them, would contradict that answer.
      stopped ??= failed = new StorageError(`could not write ${file}; the store refuses every call until the process restarts and reads the file as last written`, { cause });
      throw cause === stopped ? stopped : new StorageError(`could not write ${file}`, { cause });
    });
    tail = run.catch(() => {});
    waiting = reported;
    return reported;
  };

  /**
   * For a revocation or sign-out that finds its work done already (a retry, or two at once): waits
   * for the write that carries the change that did it, and fails with it. Until 2026-12-01 such a
   * call answered at once, so a retried RFC 7009 revocation got its 200 while the first one's write
   * was still pending, and when that write failed (or the power went) the restarted store had no
   * revocation: the token worked again, though the client had been told it was dead.
   */
  const settled = (): Promise<void> =>
    waiting ??
    tail.then(() => {
      if (stopped) throw stopped;
    });

  const store: JsonFileStorage = {
    path: file,
    // Rejects once a write has failed: the file then lacks changes memory made.
    flush: () => tail.then(() => (failed ? Promise.reject(failed) : undefined)),
    async close() {
      await tail;
      stopped ??= new StorageError(`the JSON file store ${file} is closed`);
      await unlock();
      if (failed) throw failed;
    },

    clients: {
      async get(clientId) {
        const r = clients.get(clientId);
        return r ? copyClient(r) : null;
      },
      async create(record) {
        // JSON holds a lone surrogate (as an escape), but no page cursor carries one: refused,
        // as every store does (the storage contract, since 2026-11-30).
        if (LONE_SURROGATE.test(record.clientId)) throw new UnstorableValueError("clientId contains a lone UTF-16 surrogate, which no store holds exactly");
        if (clients.has(record.clientId)) return false;
        const copy = copyClient(record);
        copy.secrets.sort(bySecretAge);
        clients.set(record.clientId, copy);
        await persist();
        return true;
      },
      // Each change reads, decides and writes with no await in between (atomic on the JS thread),
      // so concurrent changes to one client's secrets are all kept; then it waits for the disk.
      async addSecret(clientId, secret) {
        const r = clients.get(clientId);
        if (!r || r.secrets.some((x) => x.id === secret.id)) return false;
        clients.set(clientId, { ...copyClient(r), secrets: [...r.secrets, { ...secret }].sort(bySecretAge), secretUpdatedAt: secret.createdAt });
        await persist();
        return true;
      },
      async replaceSecrets(clientId, secret) {
        const r = clients.get(clientId);
        if (!r) return false;
        clients.set(clientId, { ...copyClient(r), secrets: [{ ...secret }], secretUpdatedAt: secret.createdAt });
        await persist();
        return true;
      },
      async removeSecret(clientId, secretId, now) {
        const r = clients.get(clientId);
        if (!r || !r.secrets.some((x) => x.id === secretId)) return false;
        clients.set(clientId, { ...copyClient(r), secrets: r.secrets.filter((x) => x.id !== secretId), secretUpdatedAt: now });
        await persist();
        return true;
      },
      async touchSecret(clientId, secretId, usedAt) {
        const r = clients.get(clientId);
        const x = r?.secrets.find((y) => y.id === secretId);
        if (!r || !x || (x.lastUsedAt !== null && x.lastUsedAt >= usedAt)) return;
        clients.set(clientId, { ...copyClient(r), secrets: r.secrets.map((y) => (y.id === secretId ? { ...y, lastUsedAt: usedAt } : { ...y })) });
        await persist();
      },
      async list() {
        return [...clients.values()].sort((a, b) => byCodeUnit(a.clientId, b.clientId)).map(copyClient);
      },
      // Optional (core falls back to list() without it). Everything is in memory here, so a page
      // sorts the ids after the cursor and copies only the page; a database would read an index range.
      async listPage(after, limit) {
        const ids = [...clients.keys()].filter((id) => after === null || id > after).sort(byCodeUnit);
        return ids.slice(0, limit).map((id) => copyClient(clients.get(id)!));
      },
      // Optional (core reads list() whole without it, copying every client). Everything is in
      // memory here, so one pass over the records with no copy; a database would ask an index on
      // the column (SELECT MAX(access_token_ttl)), which costs the same at any number of clients.
      async maxAccessTokenTtl() {
        let longest: number | null = null;
        for (const c of clients.values()) if (c.accessTokenTtl != null && (longest === null || c.accessTokenTtl > longest)) longest = c.accessTokenTtl;
        return longest;
      },
      async delete(clientId) {
        // Its refresh tokens stay; the core refuses a refresh token whose client is gone.
        if (!clients.delete(clientId)) return false;
        await persist();
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
        await persist();
        return true;
      },
      async createMany(records) {
        // Check everything first (against the store and earlier records of the batch), then write
        // all of it with no await in between: all or nothing.
        const ids = new Set<string>();
        const names = new Set<string>();
        for (const [i, r] of records.entries()) {
          if (accounts.has(r.id) || usernames.has(r.username) || ids.has(r.id) || names.has(r.username)) return i;
          ids.add(r.id);
          names.add(r.username);
        }
        if (records.length === 0) return null;
        for (const r of records) {
          accounts.set(r.id, copyAccount(r));
          usernames.set(r.username, r.id);
          accountOrder.push(r.id);
        }
        await persist();
        return null;
      },
      async setEnabled(id, enabled) {
        const r = accounts.get(id);
        if (!r) return false;
        accounts.set(id, { ...copyAccount(r), enabled });
        await persist();
        return true;
      },
      async setPasswordHash(id, expected, replacement) {
        // Compare and write with no await in between: one of several racing callers wins.
        const r = accounts.get(id);
        if (!r || r.passwordHash !== expected) return false;
        accounts.set(id, { ...copyAccount(r), passwordHash: replacement });
        await persist();
        return true;
      },
      async list(offset, limit) {
        return { items: accountOrder.slice(offset, offset + limit).map((id) => copyAccount(accounts.get(id)!)), total: accountOrder.length };
      },
    },

    refreshTokens: {
      async create(record) {
        refresh.set(record.tokenHash, copyRefresh(record));
        await persist();
      },
      async findByHash(tokenHash) {
        const r = refresh.get(tokenHash);
        return r ? copyRefresh(r) : null;
      },
      async consume(tokenHash, now, replacement, replay = null) {
        // Check and set with no await in between: atomic on the single JS thread, so of any number
        // of concurrent callers exactly one sees the token unconsumed. Only then wait for the disk.
        const r = refresh.get(tokenHash);
        if (!r || r.consumedAt !== null || r.revokedAt !== null || refresh.has(replacement.tokenHash)) return false;
        refresh.set(tokenHash, { ...copyRefresh(r), consumedAt: now, replay });
        refresh.set(replacement.tokenHash, copyRefresh(replacement));
        await persist();
        return true;
      },
      async graceUse(tokenHash, consumedAfter, maxUses) {
        // As consume: check and count with no await in between, then wait for the disk.
        const r = refresh.get(tokenHash);
        if (!r || r.consumedAt === null || r.consumedAt <= consumedAfter || r.revokedAt !== null || r.replay === null || r.graceUses >= maxUses) {
          return null;
        }
        const used = { ...copyRefresh(r), graceUses: r.graceUses + 1 };
        refresh.set(tokenHash, used);
        await persist();
        return copyRefresh(used);
      },
      async revokeFamily(familyId, now) {
        // True when this call revoked a token (no `await` before the marks: of concurrent calls on
        // a live family, the first marks them all).
        let changed = false;
        for (const [hash, r] of refresh) {
          if (r.familyId === familyId && r.revokedAt === null) {
            refresh.set(hash, { ...copyRefresh(r), revokedAt: now });
            changed = true;
          }
        }
        await (changed ? persist() : settled());
        return changed;
      },
      async revokeByAccount(accountId, now) {
        let changed = false;
        for (const [hash, r] of refresh) {
          if (r.accountId === accountId && r.revokedAt === null) {
            refresh.set(hash, { ...copyRefresh(r), revokedAt: now });
            changed = true;
          }
        }
        await (changed ? persist() : settled());
      },
      async deleteExpired(now, limit = Infinity) {
        let n = 0;
        for (const [hash, r] of refresh) {
          if (n >= limit) break;
          // A consumed token stays until its family ends: presenting it again is reuse detection.
          if (r.familyExpiresAt <= now || (r.consumedAt === null && r.expiresAt <= now)) {
            refresh.delete(hash);
            n++;
          }
        }
        if (n > 0) await persist();
        return n;
      },
    },

    plants: {
      async create(record) {
        if (plants.has(record.id)) return false;
        plants.set(record.id, copyPlant(record));
        await persist();
        return true;
      },
      async get(id) {
        const r = plants.get(id);
        return r ? copyPlant(r) : null;
      },
    },

    signingKeys: {
      async list() {
        return [...keys.values()].map(copyKey);
      },
      async create(record) {
        if (keys.has(record.kid)) return false;
        keys.set(record.kid, copyKey(record));
        await persist();
        return true;
      },
      async createIfEmpty(record) {
        // Check and write with no await in between: of racing callers exactly one finds it empty.
        if (keys.size > 0) return false;
        keys.set(record.kid, copyKey(record));
        await persist();
        return true;
      },
      async delete(kid) {
        if (!keys.delete(kid)) return false;
        await persist();
        return true;
      },
      async replacePrivateJwk(kid, expected, replacement) {
        // Compare and write with no await in between: one of several racing callers wins.
        const k = keys.get(kid);
        if (!k || k.privateJwk !== expected) return false;
        keys.set(kid, { ...k, privateJwk: replacement });
        await persist();
        return true;
      },
      async markSigning(kid, at) {
        // Compare and write with no await in between: the later of racing stamps stays.
        const k = keys.get(kid);
        if (!k || (k.lastSignedAt !== undefined && k.lastSignedAt >= at)) return;
        keys.set(kid, { ...k, lastSignedAt: at });
        await persist();
      },
    },

    attempts: {
      async increment(key, now, windowMs) {
        // Read, decide and write with no await in between, so concurrent calls never lose a count.
        const r = attempts.get(key);
        const next = !r || r.windowStart <= now - windowMs ? { key, count: 1, windowStart: now } : { ...r, count: r.count + 1 };
        attempts.set(key, next);
        await persist();
        return copyAttempt(next);
      },
      async get(key) {
        const r = attempts.get(key);
        return r ? copyAttempt(r) : null;
      },
      async reset(key) {
        if (attempts.delete(key)) await persist();
      },
      async refund(key, windowStart, count) {
        // Only in the window the counts were counted in, and never below 0.
        const r = attempts.get(key);
        if (!r || r.windowStart !== windowStart || r.count <= 0) return;
        // A record left at 0 is deleted, as reset would.
        if (r.count <= count) attempts.delete(key);
        else attempts.set(key, { ...r, count: r.count - count });
        await persist();
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
        if (n > 0) await persist();
        return n;
      },
    },

    revokedTokens: {
      async add(jti, expiresAt) {
        // Idempotent: a repeat keeps the first expiry (once the write that stored it is done) and
        // resolves to false; the call that recorded the jti to true.
        if (revoked.has(jti)) {
          await settled();
          return false;
        }
        revoked.set(jti, expiresAt);
        await persist();
        return true;
      },
      async has(jti) {
        return revoked.has(jti);
      },
      async deleteExpired(now, limit = Infinity) {
        let n = 0;
        for (const [jti, expiresAt] of revoked) {
          if (n >= limit) break;
          if (expiresAt <= now) {
            revoked.delete(jti);
            n++;
          }
        }
        if (n > 0) await persist();
        return n;
      },
    },

    sessions: {
      async create(record) {
        if (sessions.has(record.idHash)) return false;
        sessions.set(record.idHash, copySession(record));
        await persist();
        return true;
      },
      async get(idHash) {
        const r = sessions.get(idHash);
        return r ? copySession(r) : null;
      },
      async delete(idHash) {
        if (!sessions.delete(idHash)) {
          await settled();
          return false;
        }
        await persist();
        return true;
      },
      async touch(idHash, expiresAt) {
        // Compare and write with no await in between: of racing callers the latest end stays, and
        // a session deleted meanwhile is not made again.
        const r = sessions.get(idHash);
        if (!r || r.expiresAt >= expiresAt) return false;
        sessions.set(idHash, { ...r, expiresAt });
        await persist();
        return true;
      },
      async deleteByAccount(accountId) {
        let n = 0;
        for (const [idHash, r] of sessions) {
          if (r.accountId === accountId) {
            sessions.delete(idHash);
            n++;
          }
        }
        await (n > 0 ? persist() : settled());
        return n;
      },
      async deleteExpired(now, limit = Infinity) {
        let n = 0;
        for (const [idHash, r] of sessions) {
          if (n >= limit) break;
          if (r.expiresAt <= now) {
            sessions.delete(idHash);
            n++;
          }
        }
        if (n > 0) await persist();
        return n;
      },
    },

    assertionJtis: {
      async use(key, expiresAt) {
        // Check and record with no await in between: of concurrent callers exactly one gets true.
        if (jtis.has(key)) return false;
        jtis.set(key, expiresAt);
        await persist();
        return true;
      },
      async deleteExpired(now, limit = Infinity) {
        let n = 0;
        for (const [key, expiresAt] of jtis) {
          if (n >= limit) break;
          if (expiresAt <= now) {
            jtis.delete(key);
            n++;
          }
        }
        if (n > 0) await persist();
        return n;
      },
    },
  };

  // Every store method first checks that the store still runs (see `stopped`).
  for (const part of Object.values(store)) {
    if (typeof part !== "object" || part === null) continue;
    const methods = part as Record<string, unknown>;
    for (const [name, method] of Object.entries(methods)) {
      if (typeof method !== "function") continue;
      methods[name] = (...args: unknown[]) => (stopped ? Promise.reject(stopped) : (method as (...a: unknown[]) => unknown)(...args));
    }
  }
  return store;
}

/**
 * Takes `<file>.lock` for this process. The lock holds `<pid> <hostname> <random>` from the moment it
 * exists (written to a temp file first, then hard-linked into place, which fails if a lock is
 * there). A lock of a live process, of another host (whose processes cannot be asked), or that
 * cannot be read is refused; one whose process on this host is gone (a crash, a kill -9) is moved
 * aside, checked to be the very lock judged stale, and replaced. Returns the release, which deletes
 * the lock only while it is still this one. Known gap: three or more processes taking over one
 * stale lock within the same instant can still both end up holding it (one's put-back of another's
 * lock can lose to a third); good enough for an example that serves one process.
 */
async function lock(file: string): Promise<() => Promise<void>> {
  if (held.has(file)) throw new StorageError(`${file} is already open in this process; close that store first`);
  // Claimed before the first await, so that two opens in this process at once cannot both read the
  // lock as "our own pid, an earlier life" below.
  held.add(file);
  try {
    return await lockFile(file);
  } catch (error) {
    held.delete(file);
    throw error;
  }
}

async function lockFile(file: string): Promise<() => Promise<void>> {
  const path = `${file}.lock`;
  await mkdir(dirname(file), { recursive: true });
  const mine = `${process.pid} ${hostname()} ${randomUUID()}\n`;
  const draft = `${path}.${randomUUID()}.draft`;
  // On disk before it is linked into place: a power loss must not leave an empty lock.
  await writeSynced(draft, mine);
  const inUse = (why: string) => new StorageError(`${file} is in use by ${why} (lock ${path}): one process per file; if no such process serves it, delete the lock`);
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        await link(draft, path);
        let released = false;
        return async () => {
          if (released) return;
          released = true;
          // The file is free for this process's next store only once the lock is gone (else a
          // reopen in between took this lock for a stale one of its own pid and lost its own).
          try {
            if ((await readFile(path, "utf8").catch(() => null)) === mine) await rm(path, { force: true });
          } finally {
            held.delete(file);
          }
        };
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        // A file system without hard links (FAT, some network mounts): refused in so many words.
        if (code === "EPERM" || code === "ENOTSUP" || code === "EOPNOTSUPP") {
          throw new StorageError(`could not take the lock ${path}: this file system has no hard links; keep the store on one that has`, { cause: error });
        }
        if (code !== "EEXIST") throw new StorageError(`could not take the lock ${path}`, { cause: error });
      }
      const seen = await readFile(path, "utf8").catch(() => null);
      if (seen === null) continue; // released meanwhile: try again
      // A bare pid is the lock of the release before (2026-11-29): of this host.
      const [pidText, host = /^\d+\n?$/.test(seen) ? hostname() : undefined] = seen.trim().split(" ");
      const pid = Number(pidText);
      if (!Number.isSafeInteger(pid) || pid <= 0 || host === undefined) throw inUse("an unreadable lock");
      if (host !== hostname()) throw inUse(`process ${pid} on host ${host}`);
      // Our own pid on our own host in a lock no store of ours holds: left by an earlier life of
      // this process id (a container restarted as pid 1, say).
      if (pid !== process.pid && alive(pid)) throw inUse(`process ${pid}`);
      const aside = `${path}.${randomUUID()}.stale`;
      try {
        await rename(path, aside);
      } catch {
        continue; // someone else moved it first
      }
      if ((await readFile(aside, "utf8").catch(() => null)) !== seen) {
        // A fresh lock took the stale one's place between the read and the move: put it back.
        await link(aside, path).catch(() => {});
        await rm(aside, { force: true });
        continue;
      }
      await rm(aside, { force: true });
    }
    throw new StorageError(`could not take the lock ${path}: it kept changing`);
  } finally {
    await rm(draft, { force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Deletes temp files an interrupted write left beside `file` (only with the lock held). */
async function removeTempFiles(file: string): Promise<void> {
  const prefix = `.${basename(file)}.`;
  for (const name of await readdir(dirname(file))) {
    if (name.startsWith(prefix) && name.endsWith(".tmp")) await rm(join(dirname(file), name), { force: true });
  }
}

/** Creates (or truncates) `path` with `text`, private to this user (0600: the store holds the private signing key and every secret hash), and flushes it to disk. */
async function writeSynced(path: string, text: string): Promise<void> {
  const handle = await open(path, "w", 0o600);
  try {
    await handle.writeFile(text, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes `text` to a temp file next to `file`, flushes it to disk, then renames it over `file`. */
async function writeAtomically(file: string, text: string): Promise<void> {
  const dir = dirname(file);
  await mkdir(dir, { recursive: true });
  const temp = join(dir, `.${basename(file)}.${process.pid}.${randomUUID()}.tmp`);
  try {
    await writeSynced(temp, text);
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true }).catch(() => {});
    throw error;
  }
  // The rename is durable only once the folder's entry is on disk: without this, a power loss
  // could bring back the previous file (a consumed refresh token unconsumed, a revocation undone).
  // Not on Windows, where a folder cannot be opened for it; and a folder fsync the file system does
  // not support (EINVAL) is no failure: the file itself is written.
  if (process.platform === "win32") return;
  try {
    const folder = await open(dir, "r");
    try {
      await folder.sync();
    } finally {
      await folder.close();
    }
  } catch (error) {
    if (!["EINVAL", "EISDIR", "EPERM", "ENOTSUP"].includes((error as NodeJS.ErrnoException).code ?? "")) throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Loading and checking the file.

type Kind = "string" | "number" | "boolean" | "string|null" | "number|null" | "string[]" | "secret[]";

const SHAPES = {
  clients: {
    clientId: "string", authMethod: "string", secrets: "secret[]", jwks: "string|null", jwksUri: "string|null",
    name: "string", grantTypes: "string[]", scopes: "string[]",
    accessTokenTtl: "number|null", refreshTokenTtl: "number|null", refreshTokenAbsoluteTtl: "number|null",
    createdAt: "number", secretUpdatedAt: "number",
  },
  accounts: {
    id: "string", username: "string", displayName: "string|null", email: "string|null", roles: "string[]",
    enabled: "boolean", createdAt: "number", passwordHash: "string",
  },
  refreshTokens: {
    tokenHash: "string", familyId: "string", clientId: "string", accountId: "string", scope: "string[]",
    createdAt: "number", expiresAt: "number", familyExpiresAt: "number", consumedAt: "number|null", revokedAt: "number|null",
    replay: "string|null", graceUses: "number",
  },
  plants: { id: "string", name: "string", tag: "string|null" },
  signingKeys: { kid: "string", alg: "string", privateJwk: "string", publicJwk: "string", createdAt: "number", activatesAt: "number" },
  attempts: { key: "string", count: "number", windowStart: "number" },
  revokedTokens: { jti: "string", expiresAt: "number" },
  sessions: { idHash: "string", accountId: "string", csrfHash: "string", createdAt: "number", expiresAt: "number" },
  assertionJtis: { key: "string", expiresAt: "number" },
} satisfies Record<string, Record<string, Kind>>;

/**
 * Fields a record may lack (added to the contract later, in no new file version): a client's
 * `generation`, a refresh token's `clientGeneration` and a signing key's `lastSignedAt`
 * (2026-12-02); absent = from before (or, for `lastSignedAt`, never stamped).
 */
const OPTIONAL: Partial<Record<keyof typeof SHAPES, Record<string, Kind>>> = {
  clients: { generation: "string" },
  refreshTokens: { clientGeneration: "string" },
  signingKeys: { lastSignedAt: "number" },
};

/** Sections a version 1 file predates; reading one, they start empty. */
const ADDED_IN_V2 = new Set<keyof typeof SHAPES>(["attempts", "revokedTokens", "sessions"]);
/** Sections a version 1 or 2 file predates. */
const ADDED_IN_V3 = new Set<keyof typeof SHAPES>(["assertionJtis"]);

const KEYS: Record<keyof typeof SHAPES, string> = {
  clients: "clientId", accounts: "id", refreshTokens: "tokenHash", plants: "id", signingKeys: "kid",
  attempts: "key", revokedTokens: "jti", sessions: "idHash", assertionJtis: "key",
};

const GRANTS = new Set(["client_credentials", "password", "refresh_token"]);
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function isKind(value: unknown, kind: Kind): boolean {
  switch (kind) {
    case "string": return typeof value === "string";
    case "number": return typeof value === "number" && Number.isFinite(value);
    case "boolean": return typeof value === "boolean";
    case "string|null": return value === null || typeof value === "string";
    case "number|null": return value === null || (typeof value === "number" && Number.isFinite(value));
    case "string[]": return Array.isArray(value) && value.every((v) => typeof v === "string");
    case "secret[]": return Array.isArray(value) && value.every((v) => {
      const x = v as Record<string, unknown>;
      return typeof v === "object" && v !== null && Object.keys(x).length === 5 && typeof x.id === "string" && typeof x.hash === "string" &&
        isKind(x.createdAt, "number") && isKind(x.expiresAt, "number|null") && isKind(x.lastUsedAt, "number|null");
    });
  }
}

async function load(file: string): Promise<FileState> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      return { format: FORMAT, version: VERSION, clients: [], accounts: [], refreshTokens: [], plants: [], signingKeys: [], attempts: [], revokedTokens: [], sessions: [], assertionJtis: [] };
    }
    throw new StorageError(`could not read ${file}`, { cause: error });
  }
  const corrupt = (why: string, cause?: unknown): never => {
    throw new Error(`plantgate JSON storage: ${file} is not a valid store: ${why}. Fix it, or move it away to start empty.`, { cause });
  };
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    corrupt(`invalid JSON (${(error as Error).message})`, error);
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) return corrupt("the top level is not an object");
  const top = data as Record<string, unknown>;
  if (top.format !== FORMAT) corrupt(`"format" is not "${FORMAT}"`);
  if (top.version !== 1 && top.version !== 2 && top.version !== VERSION) corrupt(`unsupported "version" ${JSON.stringify(top.version)} (this code reads 1 to ${VERSION})`);
  for (const [section, shape] of Object.entries(SHAPES) as [keyof typeof SHAPES, Record<string, Kind>][]) {
    // Upgrading a version 1 file: the sections added since start empty; the next write saves version 2.
    if (top.version === 1 && ADDED_IN_V2.has(section)) {
      if (section in top) corrupt(`"${section}" is not part of a version 1 file`);
      top[section] = [];
    }
    if (top.version !== VERSION && ADDED_IN_V3.has(section)) {
      if (section in top) corrupt(`"${section}" is not part of a version ${String(top.version)} file`);
      top[section] = [];
    }
    const rows = top[section];
    if (!Array.isArray(rows)) corrupt(`"${section}" is not an array`);
    if (section === "signingKeys") {
      // Files written before keys were published ahead of signing: each key signed from its creation.
      for (const row of rows as Record<string, unknown>[]) {
        if (typeof row === "object" && row !== null && !("activatesAt" in row)) row.activatesAt = row.createdAt;
      }
    }
    const seen = new Set<string>();
    for (const [i, row] of (rows as unknown[]).entries()) {
      const where = `${section}[${i}]`;
      if (typeof row !== "object" || row === null || Array.isArray(row)) corrupt(`${where} is not an object`);
      const record = row as Record<string, unknown>;
      // A client of a version 1 or 2 file has one secret (its hash): it becomes the first of its secrets.
      if (section === "clients" && top.version !== VERSION && "secretHash" in record) {
        record.secrets = [{ id: "initial", hash: record.secretHash, createdAt: record.secretUpdatedAt, expiresAt: null, lastUsedAt: null }];
        delete record.secretHash;
        record.authMethod = "client_secret";
        record.jwks = null;
        record.jwksUri = null;
      }
      // Refresh tokens written before the grace window have no replay data and no grace uses.
      if (section === "refreshTokens") {
        if (!("replay" in record)) record.replay = null;
        if (!("graceUses" in record)) record.graceUses = 0;
      }
      for (const [field, kind] of Object.entries(shape)) {
        if (!isKind(record[field], kind)) corrupt(`${where}.${field} is not ${kind}`);
      }
      const optional = OPTIONAL[section] ?? {};
      for (const [field, kind] of Object.entries(optional)) {
        if (field in record && !isKind(record[field], kind)) corrupt(`${where}.${field} is not ${kind}`);
      }
      const extra = Object.keys(record).find((k) => !(k in shape) && !(k in optional));
      if (extra !== undefined) corrupt(`${where} has an unknown field "${extra}"`);
      const key = record[KEYS[section]] as string;
      if (seen.has(key)) corrupt(`${where} repeats the key ${JSON.stringify(key)}`);
      seen.add(key);
    }
  }
  const state: FileState = { ...(data as FileState), version: VERSION };
  for (const [i, c] of state.clients.entries()) {
    if (!c.grantTypes.every((g) => GRANTS.has(g))) corrupt(`clients[${i}].grantTypes has an unknown grant`);
    if (c.authMethod !== "client_secret" && c.authMethod !== "private_key_jwt") corrupt(`clients[${i}].authMethod is neither client_secret nor private_key_jwt`);
    c.secrets.sort(bySecretAge);
  }
  const names = new Set<string>();
  for (const [i, a] of state.accounts.entries()) {
    if (names.has(a.username)) corrupt(`accounts[${i}] repeats the username ${JSON.stringify(a.username)}`);
    names.add(a.username);
  }
  for (const [i, p] of state.plants.entries()) {
    if (!/^(0|-?[1-9]\d*)$/.test(p.id) || BigInt(p.id) < INT64_MIN || BigInt(p.id) > INT64_MAX) {
      corrupt(`plants[${i}].id ${JSON.stringify(p.id)} is not a decimal int64`);
    }
  }
  return state;
}
