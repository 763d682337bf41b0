import { StorageConfigError } from "./config-error.js";

// Whether the PostgreSQL URL reaches the server through a pooler that hands one client's statements
// to different server sessions (PgBouncer's pool_mode = transaction or statement, and poolers like
// it): the storage relies on a session per connection and refuses such a URL at open (see
// TransactionPoolingError for what breaks).
//
// Two connections, held together, answer alternately which server process they run on
// (`pg_backend_pid()`), and nothing else: the probe sets nothing itself, and `openSqlStorage` runs
// it on bare connections outside its pool (which set only an empty placeholder of plantgate's, see
// open.ts), whose connect-time SETs would otherwise land on pooled server
// connections other clients of a transaction pooler are handed next (until 2026-12-03 a refused
// open left `statement_timeout = 29s`, `idle_in_transaction_session_timeout` and a session setting
// of the probe's own on them). Directly, or through a pooler in session mode, each connection is
// one session for its life: the first always runs in its own process, the second always in
// another. Through a transaction-mode pooler a connection holds a server session only for one
// transaction: PgBouncer gives the next one the most recently released server connection (LIFO),
// the one the other connection just used, so the second connection's first statement already runs
// in the first one's process. With `server_round_robin = 1`
// it hands out its idle server connections in turn (FIFO) instead: with two of them idle, the second
// connection's statements and the first one's can each keep landing on "their own" server, so each
// connection reads twice in a row, and the second of two statements back to back runs on the other
// server (another pid: evidence) where a session would have stayed put (a review on 2026-12-03 saw
// the probe miss a round-robin PgBouncer 20 times out of 20 with one read a turn). Under load from
// other clients of the pooler a server may be taken meanwhile; then a statement runs elsewhere
// (another pid), which counts as well; several rounds make a miss need every statement to fall
// exactly right. A pooler that pins a client to one server while it is free (server affinity) would
// pass unseen until it moves it.

/** How many rounds, each two reads on the second connection then two on the first, follow the first one's first read. */
const ROUNDS = 4;

/**
 * `openSqlStorage` (PostgreSQL) refused its URL: it reaches the server through a pooler that does
 * not keep one server session per connection (PgBouncer's `pool_mode = transaction` or
 * `statement`). The storage would run wrong there: its client cache would serve a rotated secret or
 * a deleted client after the change (a change notifies a server connection nobody listens on), the
 * per-connection statement and lock timeouts would hold on some statements only (a write told 503
 * could commit afterwards), and migrations run by several starts at once could run twice and leave
 * the migration lock held on a pooled connection. A `StorageConfigError`: nothing was migrated, and
 * trying again changes nothing; use `pool_mode = session` or a direct connection. Its message
 * never holds the URL.
 *
 * @example
 * try {
 *   await openSqlStorage(url);
 * } catch (e) {
 *   if (e instanceof TransactionPoolingError) console.error("point the store at PgBouncer in session mode, or at PostgreSQL itself");
 *   throw e;
 * }
 */
export class TransactionPoolingError extends StorageConfigError {
  override readonly name: string = "TransactionPoolingError";
}

/** The message of {@link TransactionPoolingError} for `name` (the argument, e.g. "openSqlStorage's url"). */
export function transactionPoolingMessage(name: string, evidence: string): string {
  return (
    `${name} reaches PostgreSQL through a pooler in transaction or statement pooling mode (PgBouncer pool_mode = transaction or statement): ${evidence}. ` +
    "plantgate needs one server session per connection (its client cache's LISTEN, its per-connection statement and lock timeouts, its migration lock), " +
    "so nothing was opened or migrated: use pool_mode = session, or connect to PostgreSQL directly"
  );
}

/** The part of a `pg` pool client used here. */
interface ProbeClient {
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
  release(error?: Error | boolean): void;
}

/** The part of a `pg.Pool` used here. */
export interface ProbePool {
  connect(): Promise<ProbeClient>;
}

/**
 * Puts {@link transactionPoolingEvidence} in front of `pool`: until it has found two sessions, every
 * `connect()` (Kysely's, for each statement or transaction) runs it first, once at a time, and fails
 * with its driver error (an outage: the next one tries again) or, once it found a transaction
 * pooler, with a {@link TransactionPoolingError} from then on (told to `warn` once). The returned
 * `check()` runs it now (`openSqlStorage` at open). The probe runs on `probe`'s connections (bare
 * ones, outside the pool: see the top of this file).
 */
export function gateOnSessionPooling(pool: ProbePool, name: string, warn: (message: string) => void, probe: ProbePool): () => Promise<void> {
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => Promise<ProbeClient> | undefined;
  let passed = false;
  let refused: TransactionPoolingError | null = null;
  let running: Promise<void> | null = null;
  const check = (): Promise<void> => {
    if (passed) return Promise.resolve();
    if (refused !== null) return Promise.reject(refused);
    return (running ??= (async () => {
      try {
        const evidence = await transactionPoolingEvidence(probe);
        if (evidence === null) passed = true;
        else {
          refused = new TransactionPoolingError(transactionPoolingMessage(name, evidence));
          try {
            warn(`plantgate: ${refused.message}`);
          } catch {
            // A logger that throws changes nothing here.
          }
          throw refused;
        }
      } finally {
        running = null;
      }
    })());
  };
  (pool as { connect: (...args: unknown[]) => unknown }).connect = (...args: unknown[]) => {
    if (passed) return connect(...args);
    const callback = typeof args[0] === "function" ? (args[0] as (error: unknown) => void) : null;
    const gated = check().then(() => connect(...args));
    if (callback === null) return gated;
    gated.catch((error: unknown) => callback(error));
    return undefined;
  };
  return check;
}

/**
 * Null when two connections of `pool` held at once are two sessions throughout (direct, or a
 * session-mode pooler); otherwise what showed they are not. Driver errors are thrown as they are.
 */
export async function transactionPoolingEvidence(pool: ProbePool): Promise<string | null> {
  const a = await pool.connect();
  let b: ProbeClient | undefined;
  try {
    b = await pool.connect();
    const pid = async (client: ProbeClient) => Number((await client.query("select pg_backend_pid() as pid")).rows[0]?.pid);
    const pidA = await pid(a);
    let pidB: number | null = null;
    let evidence: string | null = null;
    for (let round = 0; round < ROUNDS && evidence === null; round++) {
      for (let turn = 0; turn < 2 && evidence === null; turn++) {
        const onB = await pid(b);
        if (onB === pidA) evidence = "a second connection ran in the first one's server session";
        else if (pidB !== null && onB !== pidB) evidence = "a connection's statements ran in different server sessions";
        pidB = onB;
      }
      for (let turn = 0; turn < 2 && evidence === null; turn++) {
        if ((await pid(a)) !== pidA) evidence = "a connection's statements ran in different server sessions";
      }
    }
    return evidence;
  } finally {
    b?.release();
    a.release();
  }
}
