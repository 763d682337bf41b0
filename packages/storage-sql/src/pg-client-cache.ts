import { CLIENT_TRIGGERS, CLIENTS_CHANNEL } from "./migrations/client-notify.js";
import { createReadCache, type ReadCache } from "./read-cache.js";
import { TABLES } from "./schema.js";

// The client read cache of a PostgreSQL storage, invalidated by the database itself.
//
// Client credentials read the client on every token request. Caching that row is safe only if a
// rotated or revoked secret, a changed or deleted client, is seen at once on every instance,
// whoever changed it (another instance, the admin CLI, SQL by hand). Migration 0009 puts triggers
// on pg_clients that NOTIFY the changed client id on commit; this module holds one dedicated
// connection per storage that LISTENs and drops that client from the cache as the notification
// arrives (a few ms after the commit). Nothing is polled per request.
//
// When it cannot be sure it hears every change, the cache is bypassed (every read goes to the
// database) and emptied:
// - until the listening connection is connected, LISTENing, has seen both triggers in place
//   (not so on a database migrated by an older release, opened with `migrate: false`, or with
//   the triggers disabled by hand) and has heard its own probe notification come back;
// - while that connection is down (an 'error' or 'end': a restart, pg_terminate_backend, a network
//   failure), until it has reconnected (backoff from 100 ms to 5 s) and checked again;
// - when a periodic check (every `checkIntervalMs`, default 5 s) finds the triggers gone or
//   disabled, or no pg_clients on the search_path;
// - when its probe (a NOTIFY sent by the listening connection itself) has not come back within
//   max(checkIntervalMs, 2 s): the connection is then dropped and opened again. This is
//   what notices a half-open connection, which would otherwise wait silently. The worst case for a
//   stale read is a connection that silently stops hearing: about one interval plus the wait.
// It does not notice a pooler in transaction mode (PgBouncer pool_mode = transaction), where the
// LISTEN holds on one server connection and a change notifies whichever one made it: PgBouncer
// runs the probe on the server connection this connection last used, the LISTENing one, so it
// comes back and the cache goes live while other instances' changes go unheard (until 2026-12-02
// this comment said the probe never came back there; a review saw a rotated secret served for
// 20 s). openSqlStorage refuses such a URL before the cache is made (pooler-probe.ts).
// Notifications name the schema of the table that changed (`tg_table_schema`); only those of the
// schema holding the pg_clients the storage's statements use count (another plantgate may live in
// another schema of the same database). That schema is the one `to_regclass('pg_clients')` finds on
// the search_path, as the statements do, read by every check: when it changes (a pg_clients made
// in a schema earlier on the path, or dropped) the cache is emptied and follows the new one. Until
// 2026-12-01 it was `current_schema()`, the first existing schema on the search_path, read once per
// connection: with the tables in a later schema (PostgreSQL's default `"$user", public` with a
// schema named after the role and the tables in public, opened with `migrate: false`) every
// notification was ignored and the cache, live, served changed and deleted clients for good.
// Coming back starts from an empty cache, and a read that was in flight across any of this is not
// remembered (`ReadCache`'s generation counters).

/** Options of the PostgreSQL client cache (`openSqlStorage`'s `clientCache`). */
export interface PgClientCacheOptions {
  /**
   * How often the listening connection checks that it still hears notifications and that the
   * triggers are in place (milliseconds, default 5000). A failed check bypasses the cache until
   * a good one.
   */
  checkIntervalMs?: number;
}

/** What a storage tells about its client cache (`SqlStorage.clientCache`). */
export interface ClientCacheState {
  /** True while client reads are served from memory (listening, triggers in place). */
  live(): boolean;
}

/** The client cache of one PostgreSQL storage, and its listening connection. */
export interface PgClientCache extends ClientCacheState {
  readonly cache: ReadCache;
  /**
   * Opens the listening connection; settles once that first attempt has succeeded or failed (then
   * it retries in the background), or after max(checkIntervalMs, 2 s) at most. Until the cache
   * is live it is bypassed. Called once, after migrating.
   */
  start(): Promise<void>;
  /** Ends the listening connection; the cache stays bypassed. Idempotent. */
  close(): Promise<void>;
}

/** The part of a `pg.Client` used here. */
interface ListenClient {
  connect(): Promise<unknown>;
  query(text: string): Promise<{ rows: Array<Record<string, unknown>> }>;
  end(): Promise<void>;
  on(event: "notification", listener: (message: { channel: string; payload?: string | undefined }) => void): unknown;
  on(event: "error" | "end", listener: (error?: unknown) => void): unknown;
}

/** `pg.Client`'s constructor, with the settings used here. */
export type ListenClientConstructor = new (config: { connectionString: string; connectionTimeoutMillis: number; keepAlive: boolean }) => ListenClient;

/** How long closing waits for a connection's polite end before it drops the socket. */
export const CLOSE_WAIT_MS = 2000;

/** Whether `promise` settles (either way) within `ms`. */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const settled = await Promise.race([
    promise.then(() => true, () => true),
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]);
  clearTimeout(timer);
  return settled;
}

/** Drops a `pg` client's socket at once (its polite `end()` waits for a server that may never answer). */
export function destroyPgSocket(client: unknown): void {
  (client as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

// A comment names the listening connection's statements in pg_stat_activity.
const MARK = "/* plantgate client cache */";
const TRIGGERS_IN_PLACE = `select count(*)::int from pg_trigger where tgrelid = to_regclass('${TABLES.clients}') and tgname in (${CLIENT_TRIGGERS.map((t) => `'${t}'`).join(", ")}) and tgenabled <> 'D'`;
/** The schema of the pg_clients the unqualified name finds on this connection's search_path (null: none). */
const CLIENTS_SCHEMA = `select n.nspname from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.oid = to_regclass('${TABLES.clients}')`;
/** How long a probe may go unheard before the connection counts as dead (at least this, at least one interval). */
const MIN_PROBE_WAIT_MS = 2000;

/** The client cache for `url` and the listening connection that keeps it valid (opened by `start()`). */
export function pgClientCache(Client: ListenClientConstructor, url: string, options: PgClientCacheOptions = {}): PgClientCache {
  const checkIntervalMs = options.checkIntervalMs ?? 5000;
  if (!Number.isSafeInteger(checkIntervalMs) || checkIntervalMs < 1) throw new RangeError("clientCache.checkIntervalMs must be a positive integer (milliseconds)");
  const probeWaitMs = Math.max(checkIntervalMs, MIN_PROBE_WAIT_MS);
  let version = 0;
  let listening = false;
  let closed = false;
  /** The connection being set up or in use; `ready` once it LISTENs. */
  let current: ListenClient | null = null;
  let ready: ListenClient | null = null;
  /** The schema of pg_clients as the last check found it (null: none yet, or none on the search_path). */
  let schema: string | null = null;
  let failures = 0;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let check: ReturnType<typeof setInterval> | undefined;
  // The check is a round trip through the whole path: the listening connection NOTIFYs a probe
  // (a token of this cache) on the channel in the statement that counts the triggers, and the
  // cache is live only once that probe came back and the triggers are there. A probe unheard for
  // `probeWaitMs` means the connection stopped hearing (half-open): it is dropped and opened again.
  const probeId = `${Date.now().toString(36)}.${Math.random().toString(36).slice(2)}`;
  let probes = 0;
  let probe: { token: string; sentAt: number; heard: boolean; triggers: boolean | null } | null = null;
  let settled: (() => void) | null = null;

  const cache = createReadCache({ dataVersion: () => version, bypass: () => !listening, cacheable: [TABLES.clients] });

  /** Bypass (or not) from now on; either way everything remembered so far is dropped. */
  const setListening = (value: boolean) => {
    listening = value;
    version++;
  };

  /** Live once the current probe is heard and found the triggers; bypassed as soon as one found them missing. */
  const settle = () => {
    if (probe === null || probe.triggers === null) return;
    if (!probe.triggers) {
      if (listening) setListening(false);
    } else if (probe.heard) {
      if (!listening) setListening(true);
      failures = 0;
    } else return;
    settled?.();
  };

  const onNotification = (client: ListenClient, payload: string | undefined) => {
    if (client !== ready) return;
    let message: { s?: unknown; k?: unknown; p?: unknown } | null = null;
    try {
      message = JSON.parse(payload ?? "") as { s?: unknown; k?: unknown; p?: unknown };
    } catch {
      // Not ours in form: drop everything below rather than guess.
    }
    if (message !== null && typeof message === "object" && typeof message.p === "string") {
      // A probe: ours (then the path works) or another instance's (nothing changed).
      if (probe !== null && message.p === probe.token) {
        probe.heard = true;
        settle();
      }
      return;
    }
    if (!listening) return;
    if (message !== null && typeof message === "object" && typeof message.s === "string") {
      if (message.s !== schema) return; // another plantgate schema in the same database
      cache.invalidate(TABLES.clients, typeof message.k === "string" ? message.k : null);
      return;
    }
    version++;
  };

  const down = (client: ListenClient) => {
    if (client !== current) return;
    current = null;
    ready = null;
    probe = null;
    setListening(false);
    settled?.();
    client.end().catch(() => {});
    if (closed) return;
    // Backoff from 100 ms, doubling up to 5 s, with jitter so instances do not reconnect in step.
    const delay = Math.min(5000, 100 * 2 ** Math.min(failures++, 6)) * (0.75 + Math.random() / 2);
    retry = setTimeout(() => void connect(), delay);
    retry.unref?.();
  };

  /**
   * One check: the last probe must have come back by now; a new one goes out with the trigger
   * count and the schema pg_clients is in (one statement, so both describe the same table).
   */
  const verify = async (client: ListenClient) => {
    if (probe !== null && !probe.heard) {
      if (performance.now() - probe.sentAt >= probeWaitMs) down(client);
      return;
    }
    // Monotonic (performance.now): on the wall clock a step back put an unheard probe's sentAt in
    // the future, so it was never late and no new one went out, and a connection that stopped
    // hearing kept the cache live for the length of the step (until 2026-12-01).
    const sent = { token: `${probeId}.${++probes}`, sentAt: performance.now(), heard: false, triggers: null as boolean | null };
    probe = sent;
    try {
      const payload = JSON.stringify({ p: sent.token });
      const { rows } = await client.query(`select (${TRIGGERS_IN_PLACE}) as n, (${CLIENTS_SCHEMA}) as s, pg_notify('${CLIENTS_CHANNEL}', '${payload}') ${MARK}`);
      if (client !== ready || probe !== sent) return;
      const found = typeof rows[0]?.s === "string" ? rows[0].s : null;
      if (found !== schema) {
        // Another table from now on (or none): what was kept came from the old one, and its
        // notifications may have been ignored until now. Bypassed and emptied; live again below
        // only with this schema's triggers in place and the probe heard.
        if (listening) setListening(false);
        schema = found;
      }
      sent.triggers = found !== null && rows[0]?.n === CLIENT_TRIGGERS.length;
      settle();
    } catch {
      down(client);
    }
  };

  const connect = async (): Promise<void> => {
    if (closed) return;
    const client = new Client({ connectionString: url, connectionTimeoutMillis: 10_000, keepAlive: true });
    current = client;
    client.on("error", () => down(client));
    client.on("end", () => down(client));
    client.on("notification", (message) => {
      if (message.channel === CLIENTS_CHANNEL) onNotification(client, message.payload);
    });
    try {
      await client.connect();
      // LISTEN before anything is cached: no commit after this point goes unheard.
      await client.query(`listen ${CLIENTS_CHANNEL} ${MARK}`);
      if (client !== current) return;
      // The schema is read by each check, the first one below; not live before it.
      schema = null;
      ready = client;
      // The listening connection must not keep the process alive by itself (as the pool's idle
      // connections do not); close() ends it anyway.
      (client as { connection?: { stream?: { unref?: () => void } } }).connection?.stream?.unref?.();
      // Wait (at most probeWaitMs) for the first probe's answer, so a storage opened on a healthy
      // database starts with its cache live.
      const answered = new Promise<void>((resolve) => {
        settled = resolve;
        setTimeout(resolve, probeWaitMs).unref?.();
      });
      await verify(client);
      await answered;
      settled = null;
    } catch {
      down(client);
    }
  };

  return {
    cache,
    start() {
      if (closed || check !== undefined) return Promise.resolve();
      check = setInterval(() => {
        if (ready !== null) void verify(ready);
      }, checkIntervalMs);
      check.unref?.();
      // Bounded: a database that is down (or black-holed) must not hold up the storage's opening;
      // the attempt goes on in the background and the cache stays bypassed until it succeeds.
      return new Promise<void>((resolve) => {
        void connect().then(resolve);
        setTimeout(resolve, probeWaitMs).unref?.();
      });
    },
    live: () => listening,
    async close() {
      if (closed) return;
      closed = true;
      clearTimeout(retry);
      clearInterval(check);
      const client = current;
      current = null;
      ready = null;
      probe = null;
      setListening(false);
      // A server that stopped answering never acknowledges the end: past the wait, the socket goes.
      if (client && !(await settlesWithin(client.end(), CLOSE_WAIT_MS))) destroyPgSocket(client);
    },
  };
}
