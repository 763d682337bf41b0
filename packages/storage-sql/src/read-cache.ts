import { TABLES } from "./schema.js";

// A cache of hot reads, valid only as long as nothing was committed since the value was read.
// Two sources tell it what was committed:
//
// SQLite (`sqliteFastPath`):
// - another connection's commit (another process sharing the file, the CLI, a second storage
//   opened on the same file) changes `PRAGMA data_version`, which every cached read checks first
//   (one cached statement, about a microsecond); a change drops the whole cache;
// - this connection's own writes do not change data_version, so every statement that is about to
//   run on the connection is classified once by its SQL text: a write drops the caches that read
//   a table it names (see `cachingStatements`' onWrite, which sees every statement Kysely runs).
//
// PostgreSQL (`pgClientCache`, clients only): triggers on pg_clients send a notification naming the
// changed client on commit, whoever wrote it; one LISTENing connection per storage drops that
// client (`invalidate`). While that connection is down, or the triggers are missing, every read
// bypasses the cache, and getting back (re)starts from an empty cache (`dataVersion` changes).
// The store also drops a client around its own writes, so read-after-write holds at once in the
// writing instance, without waiting for the notification.
//
// Either way, a read that was in flight while a change was reported is not remembered (generation
// counters): the value it loaded may predate the change.
//
// One check serves every cached read made in the same synchronous run of JavaScript (it is
// trusted until the next microtask): nothing from outside the process can be observed in between,
// so another process's commit in that span is concurrent with those reads. A statement other than
// a read run by any SQLite connection of this process ends that trust at once (a second storage on
// the same file in this process commits synchronously, right after being told). The token endpoint
// starts its two reads (the brute-force counter and the client) together for this: on SQLite, one
// `PRAGMA data_version` per request instead of two (about 2.6 µs and three system calls each: a WAL
// read lock).

/** Statements other than reads started by any connection of this process (see the module comment). */
let processWrites = 0;
const READ_ONLY = /^\s*(select|explain)\b/i;

/** What the cache depends on: the SQLite connection, or PostgreSQL's notifications. */
export interface ReadCacheSource {
  /**
   * Changes whenever the cache may have missed a change (SQLite: `PRAGMA data_version` on the
   * connection the cached reads use; PostgreSQL: a counter bumped when the listening connection
   * goes down or comes back). A change drops everything.
   */
  dataVersion(): number;
  /**
   * True while reads must go to the database and nothing may be remembered (SQLite: a transaction
   * is open on the connection; PostgreSQL: not listening).
   */
  bypass(): boolean;
  /**
   * The tables whose changes this source reports (default: all). A space reading any other table
   * is not cached at all.
   */
  cacheable?: readonly string[];
}

/** A named group of cached reads and the tables whose writes make it stale. */
export interface CacheSpace<T> {
  /** `key`'s value from the cache, or from `load` (remembered unless a write raced the read). */
  get(key: string, load: () => Promise<T>): Promise<T>;
}

export interface ReadCache {
  /**
   * A cache space reading `tables`; `copy` hands each caller its own copy of a remembered value.
   * `keyedBy`: the space's keys are the primary keys of that table, so `invalidate(keyedBy, key)`
   * drops only `key` (any other change to its tables drops the whole space).
   */
  space<T>(tables: readonly string[], copy: (value: T) => T, maxEntries: number, keyedBy?: string): CacheSpace<T>;
  /** Called with the SQL of every statement about to run on the connection (reads are told apart here). */
  written(sql: string): void;
  /**
   * A row of `table` changed (or is about to): `key` is its primary key, or null when unknown (then
   * every space reading `table` is dropped). Reads in flight in those spaces are not remembered.
   */
  invalidate(table: string, key: string | null): void;
}

const passThrough = <T>(): CacheSpace<T> => ({ get: (_key: string, load: () => Promise<T>) => load() });

/** The cache of a storage that has none (MySQL, D1, a Kysely instance given to `createSqlStorage`). */
export const noReadCache: ReadCache = {
  space: passThrough,
  written: () => {},
  invalidate: () => {},
};

const CACHEABLE_TABLES: readonly string[] = Object.values(TABLES);

/** Statements that write nothing (or only move a transaction along) and so invalidate nothing. */
const NOT_A_WRITE = /^\s*(select|begin|commit|end|rollback|savepoint|release|explain)\b/i;

/** A read cache validated by `source` (see the module comment). */
export function createReadCache(source: ReadCacheSource): ReadCache {
  interface Space {
    entries: Map<string, unknown>;
    generation: number;
    keyedBy: string | undefined;
  }
  const cacheable = source.cacheable ?? CACHEABLE_TABLES;
  const byTable = new Map<string, Space[]>();
  const all: Space[] = [];
  let version = source.dataVersion();
  /** Tables each statement's SQL writes ([] for a read; "all" when none is known, e.g. DDL: drop everything). */
  const writes = new Map<string, readonly string[] | "all">();

  const drop = (space: Space) => {
    space.generation++;
    if (space.entries.size > 0) space.entries = new Map();
  };

  // Whether the last check still holds (until the next microtask, and no statement ran since).
  let trusted = false;
  let writesSeen = -1;
  const distrust = () => {
    trusted = false;
  };

  /** False (and everything dropped) when another connection committed since the last check. */
  const current = (): boolean => {
    if (trusted && writesSeen === processWrites) return true;
    const now = source.dataVersion();
    if (!trusted) {
      trusted = true;
      queueMicrotask(distrust);
    }
    writesSeen = processWrites;
    if (now === version) return true;
    version = now;
    for (const space of all) drop(space);
    return false;
  };

  const tablesOf = (sql: string): readonly string[] | "all" => {
    let tables = writes.get(sql);
    if (tables === undefined) {
      if (NOT_A_WRITE.test(sql)) tables = [];
      else {
        const named = CACHEABLE_TABLES.filter((t) => new RegExp(`\\b${t}\\b`).test(sql));
        tables = named.length > 0 && /^\s*(insert|update|delete|replace)\b/i.test(sql) ? named : "all";
      }
      if (writes.size >= 1000) writes.clear();
      writes.set(sql, tables);
    }
    return tables;
  };

  return {
    space<T>(tables: readonly string[], copy: (value: T) => T, maxEntries: number, keyedBy?: string): CacheSpace<T> {
      // Changes to a table the source does not report would go unseen: such a space is not cached.
      if (!tables.every((t) => cacheable.includes(t))) return passThrough<T>();
      const space: Space = { entries: new Map(), generation: 0, keyedBy };
      all.push(space);
      for (const t of tables) byTable.set(t, [...(byTable.get(t) ?? []), space]);
      return {
        async get(key, load) {
          if (source.bypass()) return load();
          if (current()) {
            const hit = space.entries.get(key) as T | undefined;
            if (hit !== undefined) return copy(hit);
          }
          const generation = space.generation;
          const value = await load();
          // Remember it only if no write (ours or, checked again now, another connection's)
          // happened while it was read.
          if (value !== undefined && generation === space.generation && current() && !source.bypass()) {
            if (space.entries.size >= maxEntries) space.entries.delete(space.entries.keys().next().value!);
            space.entries.set(key, copy(value));
          }
          return value;
        },
      };
    },
    written(sql) {
      if (!READ_ONLY.test(sql)) processWrites++;
      const tables = tablesOf(sql);
      if (tables === "all") {
        for (const space of all) drop(space);
        return;
      }
      for (const t of tables) for (const space of byTable.get(t) ?? []) drop(space);
    },
    invalidate(table, key) {
      for (const space of byTable.get(table) ?? []) {
        if (key === null || space.keyedBy !== table) drop(space);
        else {
          space.generation++;
          space.entries.delete(key);
        }
      }
    },
  };
}

/**
 * A copy of a record read from storage, its array fields copied too (records hold strings,
 * numbers, bigints and arrays of those), so no caller can change what the cache remembers.
 */
export function copyRecord<T>(record: T): T {
  if (record === null || typeof record !== "object") return record;
  const copy = { ...record } as Record<string, unknown>;
  for (const key in copy) {
    const value = copy[key];
    if (Array.isArray(value)) copy[key] = value.map(copyRecord);
  }
  return copy as T;
}
