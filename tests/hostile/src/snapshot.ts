/**
 * Store snapshots for the "a rejected request changes nothing" invariant.
 *
 * The snapshot reads only through the public `Storage` interface, so it would work over any backend.
 * That interface cannot enumerate refresh tokens, plants, revoked jtis or sessions (only look them
 * up by key), so a recording wrapper remembers every key any write ever used, and the snapshot
 * reads each of them back. The same wrapper keeps a log of write calls: an additional check (a
 * rejected request must not even *call* a write method other than the attempt counters), not a
 * substitute for comparing what is stored.
 *
 * `attempts` is deliberately outside both: its counters are the brute-force defence and change on
 * failures by design.
 */
import type { RefreshTokenRecord, Storage } from "@plantgate/core";

/** One write call through the wrapper that reported a change (or failed). */
export interface WriteCall {
  aggregate: keyof Storage;
  method: string;
}

/** Keys ever written, so the snapshot can read the unlistable aggregates back. */
export interface KnownKeys {
  refreshTokenHashes: Set<string>;
  plantIds: Set<bigint>;
  revokedJtis: Set<string>;
  sessionHashes: Set<string>;
}

export interface RecordingStorage {
  storage: Storage;
  known: KnownKeys;
  /** Write calls since the last {@link RecordingStorage.takeWrites}. */
  takeWrites(): WriteCall[];
}

const WRITES: Record<keyof Storage, readonly string[]> = {
  clients: ["create", "addSecret", "replaceSecrets", "removeSecret", "touchSecret", "delete"],
  accounts: ["create", "createMany", "setEnabled", "setPasswordHash"],
  refreshTokens: ["create", "consume", "graceUse", "revokeFamily", "revokeByAccount", "deleteExpired"],
  plants: ["create"],
  signingKeys: ["create", "createIfEmpty", "delete", "replacePrivateJwk", "markSigning"],
  attempts: ["increment", "reset", "refund", "deleteExpired"],
  revokedTokens: ["add", "deleteExpired"],
  sessions: ["create", "touch", "delete", "deleteByAccount", "deleteExpired"],
  // Like attempts: a refused request is recorded there by design (its security event).
  audit: ["append", "deleteExpired"],
  auditPrune: ["deleteExpired"],
  assertionJtis: ["use", "deleteExpired"],
};

/**
 * Wraps a storage: every call is passed through unchanged; writes are logged and their keys kept.
 *
 * @example
 * const rec = createRecordingStorage(createMemoryStorage());
 * const app = createPlantgate({ storage: rec.storage });
 */
export function createRecordingStorage(inner: Storage): RecordingStorage {
  const known: KnownKeys = { refreshTokenHashes: new Set(), plantIds: new Set(), revokedJtis: new Set(), sessionHashes: new Set() };
  let log: WriteCall[] = [];
  const remember = (aggregate: keyof Storage, method: string, args: unknown[]) => {
    if (aggregate === "refreshTokens" && method === "create") known.refreshTokenHashes.add((args[0] as { tokenHash: string }).tokenHash);
    if (aggregate === "refreshTokens" && method === "consume") {
      known.refreshTokenHashes.add(args[0] as string);
      known.refreshTokenHashes.add((args[2] as { tokenHash: string }).tokenHash);
    }
    if (aggregate === "plants" && method === "create") known.plantIds.add((args[0] as { id: bigint }).id);
    if (aggregate === "revokedTokens" && method === "add") known.revokedJtis.add(args[0] as string);
    if (aggregate === "sessions" && method === "create") known.sessionHashes.add((args[0] as { idHash: string }).idHash);
  };
  const storage = {} as Record<string, Record<string, unknown>>;
  for (const aggregate of Object.keys(WRITES) as (keyof Storage)[]) {
    const target = inner[aggregate] as unknown as Record<string, (...args: unknown[]) => Promise<unknown>> | undefined;
    // Optional aggregates (audit, auditPrune) the inner storage does not have stay absent.
    if (target === undefined) continue;
    const wrapped: Record<string, unknown> = {};
    for (const method of Object.keys(target)) {
      const fn = target[method]!;
      const isWrite = WRITES[aggregate].includes(method);
      wrapped[method] = (...args: unknown[]) => {
        if (!isWrite) return fn.apply(target, args);
        // Remember the key before the call: a write that throws half-way must still be inspected.
        remember(aggregate, method, args);
        return fn.apply(target, args).then(
          (result) => {
            // The interface's "false (and changes nothing)" answers, and deletions of nothing, are no writes.
            const noop =
              result === false ||
              (method === "createMany" && result !== null) ||
              (method === "graceUse" && result === null) ||
              ((method === "deleteExpired" || method === "deleteByAccount") && result === 0);
            if (!noop) log.push({ aggregate, method });
            return result;
          },
          (error: unknown) => {
            log.push({ aggregate, method });
            throw error;
          },
        );
      };
    }
    storage[aggregate] = wrapped;
  }
  return {
    storage: storage as unknown as Storage,
    known,
    takeWrites() {
      const out = log;
      log = [];
      return out;
    },
  };
}

/** Everything stored but `attempts`, read back through the Storage interface. */
export interface StoreSnapshot {
  clients: unknown[];
  accounts: unknown;
  refresh: [string, RefreshTokenRecord | null][];
  plants: unknown[];
  keys: unknown[];
  revoked: [string, boolean][];
  sessions: unknown[];
}

/**
 * A full snapshot of everything but `attempts`. Reads go through the wrapper's read methods, which
 * are not logged.
 *
 * @example
 * const before = stringify(await snapshot(rec.storage, rec.known));
 */
export async function snapshot(storage: Storage, known: KnownKeys): Promise<StoreSnapshot> {
  // All reads at once: over a network store (D1 through its bridge, a SQL server) a snapshot takes
  // about one round trip instead of one per key. The snapshot is taken between requests, with
  // nothing else writing, so the reads see one state.
  const hashes = [...known.refreshTokenHashes].sort();
  const ids = [...known.plantIds].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const jtis = [...known.revokedJtis].sort();
  const sessionHashes = [...known.sessionHashes].sort();
  const [refresh, plants, revoked, sessions, keys, clients, accounts] = await Promise.all([
    Promise.all(hashes.map(async (h): Promise<[string, RefreshTokenRecord | null]> => [h, await storage.refreshTokens.findByHash(h)])),
    Promise.all(ids.map((id) => storage.plants.get(id))),
    Promise.all(jtis.map(async (jti): Promise<[string, boolean]> => [jti, await storage.revokedTokens.has(jti)])),
    Promise.all(sessionHashes.map((h) => storage.sessions.get(h))),
    storage.signingKeys.list().then((list) => list.sort((a, b) => (a.kid < b.kid ? -1 : 1))),
    storage.clients.list(),
    storage.accounts.list(0, Number.MAX_SAFE_INTEGER),
  ]);
  return { clients, accounts, refresh, plants, keys, revoked, sessions };
}

/** One comparable string (bigint ids as decimal text). */
export function stringify(s: StoreSnapshot): string {
  return JSON.stringify(s, (_key, value: unknown) => (typeof value === "bigint" ? `${value}n` : value));
}

/** The first differing region of two snapshots, for a readable failure message (no secrets: hashes only). */
export function describeDiff(before: string, after: string): string {
  let i = 0;
  while (i < before.length && before[i] === after[i]) i++;
  const from = Math.max(0, i - 120);
  return `snapshot differs at ${i}:\n  before: …${before.slice(from, i + 200)}\n  after:  …${after.slice(from, i + 200)}`;
}
