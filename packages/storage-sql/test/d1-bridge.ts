/**
 * A real D1 database (Miniflare's, in workerd) driven from Node over one WebSocket.
 *
 * Miniflare's own Node proxy (`getD1Database`) costs two synchronous round trips (`prepare`,
 * `bind`, each blocking Node on a worker thread) and an asynchronous one per statement: about 16 ms
 * a statement on a 2-core CI machine, so the D1 conformance files ran for minutes. Beside other test
 * files it also failed: it lost its replies (an assertion in its fetch-sync code) and, in a
 * full run with the D1 files among the rest, a native reference (an assertion in
 * `proxy.worker.ts` while reviving a prepared statement, during 50 concurrent consumes), so those
 * files ran last, one at a time.
 *
 * The bridge is a small Worker beside the others in the same Miniflare, holding a binding to the
 * same D1 database (same id). Each statement or batch is one message to it and one back: the
 * Worker prepares, binds and runs it on the real binding, in the Workers runtime, and sends back
 * what D1 answered (`results`, `meta`) or the error D1 threw (name, message, cause). About 1.7 ms
 * a statement, D1's own ~1.6 ms included. Nothing is emulated: the SQL runs in D1, and a value the
 * bridge cannot carry exactly is refused with a TypeError, never changed. One difference: D1's
 * `bind` throws its type errors (an `undefined` or a bigint value) at once, the bridge's `bind`
 * keeps the values and the same D1 error comes back when the statement runs (d1-bridge.test.ts
 * compares the two).
 *
 * @example
 * const mf = new Miniflare({ workers: [d1BridgeWorker("DB")] });
 * const bridge = await connectD1Bridge(mf);
 * const storage = createD1Storage(bridge.database);
 * ...
 * await bridge.close();
 * await mf.dispose();
 */
import type { Miniflare, WorkerOptions } from "miniflare";

/** The host the bridge Worker is routed on inside its Miniflare. */
const BRIDGE_HOST = "plantgate-d1-bridge.test";
/**
 * workerd refuses a large WebSocket message (here a 40 MB one: 1009 "Message is too large", where
 * 12 MB passed); a longer request goes in parts of at most this many characters (3 MiB of UTF-8 at most).
 */
const PART_CHARS = 1024 * 1024;

/**
 * Encoding of values that JSON cannot carry exactly, both ways: bytes as `{"$bytes": base64}`,
 * bigint as `{"$bigint": decimal}`, `undefined` as `{"$undefined": 1}` (D1 refuses it, and should
 * be seen refusing it) and non-finite numbers as `{"$number": "NaN"}`.
 */
const CODEC = String.raw`
const toBase64 = (bytes) => { let s = ""; for (const b of bytes) s += String.fromCharCode(b); return btoa(s); };
const fromBase64 = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
function encodeValue(value) {
  if (value === undefined) return { $undefined: 1 };
  if (typeof value === "bigint") return { $bigint: value.toString() };
  if (typeof value === "number" && !Number.isFinite(value)) return { $number: String(value) };
  if (value instanceof ArrayBuffer) return { $bytes: toBase64(new Uint8Array(value)), $type: "ArrayBuffer" };
  if (ArrayBuffer.isView(value)) return { $bytes: toBase64(new Uint8Array(value.buffer, value.byteOffset, value.byteLength)), $type: "Uint8Array" };
  if (value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean") return value;
  if (Array.isArray(value)) return value.map(encodeValue);
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = encodeValue(v);
    return out;
  }
  throw new TypeError("the D1 bridge cannot carry a value of type " + (value?.constructor?.name ?? typeof value));
}
function decodeValue(value) {
  if (Array.isArray(value)) return value.map(decodeValue);
  if (value === null || typeof value !== "object") return value;
  if ("$undefined" in value) return undefined;
  if ("$bigint" in value) return BigInt(value.$bigint);
  if ("$number" in value) return Number(value.$number);
  if ("$bytes" in value) { const bytes = fromBase64(value.$bytes); return value.$type === "ArrayBuffer" ? bytes.buffer : bytes; }
  const out = {};
  for (const [k, v] of Object.entries(value)) out[k] = decodeValue(v);
  return out;
}
function describeError(e) {
  if (!(e instanceof Error)) return { name: "Error", message: String(e) };
  const out = { name: e.name, message: e.message };
  for (const [k, v] of Object.entries(e)) if (typeof v === "string" || typeof v === "number") out[k] = v;
  if (e.cause !== undefined) out.cause = describeError(e.cause);
  return out;
}
`;

const SCRIPT = `${CODEC}
async function execute(db, m) {
  if (m.op === "batch") return db.batch(m.statements.map((s) => db.prepare(s.sql).bind(...s.params)));
  const statement = db.prepare(m.sql).bind(...m.params);
  if (m.op === "all") return statement.all();
  if (m.op === "run") return statement.run();
  if (m.op === "first") return m.column === undefined ? statement.first() : statement.first(m.column);
  if (m.op === "raw") return statement.raw(m.options);
  throw new TypeError("unknown D1 bridge operation " + m.op);
}
export default {
  async fetch(request, env) {
    if (request.headers.get("upgrade") !== "websocket") return new Response("the D1 bridge speaks WebSocket only", { status: 426 });
    const db = env.DB;
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    const parts = new Map();
    server.addEventListener("message", async (event) => {
      let m = JSON.parse(event.data);
      if (m.part !== undefined) {
        const got = parts.get(m.id) ?? [];
        got.push(m.text);
        if (got.length < m.parts) return void parts.set(m.id, got);
        parts.delete(m.id);
        m = JSON.parse(got.join(""));
      }
      m = decodeValue(m);
      let reply;
      try {
        reply = JSON.stringify({ id: m.id, result: encodeValue(await execute(db, m)) });
      } catch (e) {
        reply = JSON.stringify({ id: m.id, error: describeError(e) });
      }
      server.send(reply);
    });
    server.addEventListener("close", () => server.close());
    return new Response(null, { status: 101, webSocket: client });
  },
};
`;

/**
 * The bridge Worker, to put in a Miniflare's `workers` beside any others: it binds the D1 database
 * `databaseId` (the id another Worker's `d1Databases: ["DB"]` gets is "DB").
 */
export function d1BridgeWorker(databaseId: string): WorkerOptions {
  return { name: "plantgate-d1-bridge", modules: true, script: SCRIPT, d1Databases: { DB: databaseId }, routes: [`${BRIDGE_HOST}/*`] };
}

type Encoded = unknown;
// The same codec on the Node side (the script's functions, evaluated here once).
const codec = new Function(`${CODEC}; return { encodeValue, decodeValue };`)() as { encodeValue(v: unknown): Encoded; decodeValue(v: Encoded): unknown };

interface Reply {
  id: number;
  result?: Encoded;
  error?: ErrorDescription;
}
interface ErrorDescription {
  name: string;
  message: string;
  cause?: ErrorDescription;
  [key: string]: unknown;
}

/** The error D1 threw, rebuilt: same name, message, string and number members, and cause. */
function reviveError(d: ErrorDescription): Error {
  const { name, message, cause, ...rest } = d;
  const e = cause === undefined ? new Error(message) : new Error(message, { cause: reviveError(cause) });
  if (name !== e.name) e.name = name;
  Object.assign(e, rest);
  return e;
}

/** A prepared statement of the bridge: kept in Node until it runs. */
export class BridgedStatement {
  constructor(
    private readonly send: (m: Record<string, unknown>) => Promise<unknown>,
    readonly sql: string,
    readonly params: unknown[],
  ) {}
  /** As D1's `bind`: a statement with these values (replacing any bound before). */
  bind(...values: unknown[]): BridgedStatement {
    return new BridgedStatement(this.send, this.sql, values);
  }
  all<T = Record<string, unknown>>(): Promise<{ results: T[]; success: boolean; meta: Record<string, unknown> & { changes: number } }> {
    return this.send({ op: "all", sql: this.sql, params: this.params }) as never;
  }
  run(): Promise<{ results: unknown[]; success: boolean; meta: Record<string, unknown> & { changes: number } }> {
    return this.send({ op: "run", sql: this.sql, params: this.params }) as never;
  }
  first<T = Record<string, unknown>>(column?: string): Promise<T | null> {
    return this.send({ op: "first", sql: this.sql, params: this.params, column }) as never;
  }
  raw<T = unknown[]>(options?: { columnNames?: boolean }): Promise<T[]> {
    return this.send({ op: "raw", sql: this.sql, params: this.params, options }) as never;
  }
}

/** The Node side of the bridge: D1's `prepare` and `batch` over the WebSocket. */
export interface BridgedD1 {
  prepare(sql: string): BridgedStatement;
  /** As D1's `batch`; each statement must come from this bridge's `prepare` (a TypeError otherwise). */
  batch(statements: readonly unknown[]): Promise<Array<{ results: unknown[]; success: boolean; meta: Record<string, unknown> & { changes: number } }>>;
}

/** A connected bridge: the database, and `close()` to end the connection before disposing of its Miniflare. */
export interface D1Bridge {
  readonly database: BridgedD1;
  close(): Promise<void>;
}

interface BridgeSocket {
  accept(): void;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "close" | "error", listener: () => void): void;
}

/**
 * Connects to the bridge Worker of `mf` (see {@link d1BridgeWorker}). Every pending call is rejected
 * when the connection closes.
 */
export async function connectD1Bridge(mf: Miniflare): Promise<D1Bridge> {
  const res = await mf.dispatchFetch(`http://${BRIDGE_HOST}/`, { headers: { upgrade: "websocket" } });
  const socket = (res as unknown as { webSocket: BridgeSocket | null }).webSocket;
  if (res.status !== 101 || socket === null) throw new Error(`the D1 bridge did not accept a WebSocket: ${res.status} ${await res.text()}`);
  socket.accept();
  const pending = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
  let nextId = 0;
  let closed: Error | null = null;
  const fail = (why: string) => {
    closed ??= new Error(`the D1 bridge ${why}`);
    for (const p of pending.values()) p.reject(closed);
    pending.clear();
  };
  socket.addEventListener("message", (event) => {
    const reply = JSON.parse(String(event.data)) as Reply;
    const p = pending.get(reply.id);
    if (p === undefined) return;
    pending.delete(reply.id);
    if (reply.error !== undefined) p.reject(reviveError(reply.error));
    else p.resolve(codec.decodeValue(reply.result));
  });
  socket.addEventListener("close", () => fail("closed"));
  socket.addEventListener("error", () => fail("failed"));

  const send = (m: Record<string, unknown>): Promise<unknown> => {
    if (closed) return Promise.reject(closed);
    const id = nextId++;
    let text: string;
    try {
      text = JSON.stringify({ ...(codec.encodeValue(m) as object), id });
    } catch (e) {
      return Promise.reject(e);
    }
    const done = new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
    if (text.length <= PART_CHARS) socket.send(text);
    else {
      const parts = Math.ceil(text.length / PART_CHARS);
      for (let i = 0; i < parts; i++) socket.send(JSON.stringify({ id, part: i, parts, text: text.slice(i * PART_CHARS, (i + 1) * PART_CHARS) }));
    }
    return done;
  };
  const statementOf = (s: unknown): Record<string, unknown> => {
    if (!(s instanceof BridgedStatement)) throw new TypeError("D1 bridge batch: every statement must come from this bridge's prepare()");
    return { sql: s.sql, params: s.params };
  };
  const database: BridgedD1 = {
    prepare: (sql) => new BridgedStatement(send, sql, []),
    batch: async (statements) => (await send({ op: "batch", statements: statements.map(statementOf) })) as never,
  };
  return {
    database,
    async close() {
      if (closed) return;
      const ended = new Promise<void>((resolve) => socket.addEventListener("close", () => resolve()));
      socket.close(1000, "done");
      await ended;
      fail("closed");
    },
  };
}
