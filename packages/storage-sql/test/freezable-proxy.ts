/**
 * A TCP proxy in front of a real database server that can stop forwarding, as a network cut where
 * packets vanish looks to both ends: nothing passes in either direction, no socket is closed, and a
 * close (FIN or reset) by either end while frozen never reaches the other: the server keeps a
 * session whose client is gone until its own timeouts end it, and a client whose session the server
 * ended meets its own deadline. The sockets left are destroyed by `close()`.
 */
import { createServer, connect as tcpConnect, type Server, type Socket } from "node:net";

export interface FreezableProxy {
  readonly port: number;
  /** While true, nothing is forwarded either way (and no close is passed on). */
  frozen: boolean;
  /** Connections whose client side has neither half-closed nor gone. */
  readonly openClients: number;
  /**
   * Freezes the proxy when a client next sends bytes holding `text` (e.g. a statement's SQL),
   * those bytes dropped: the server never gets that statement, and sees the connection idle.
   */
  freezeOn(text: string): void;
  /** Destroys every socket, both sides, and stops listening. */
  close(): Promise<void>;
}

/** A {@link FreezableProxy} to `target` (a URL: its hostname and port) on 127.0.0.1. */
export async function freezableProxy(target: URL): Promise<FreezableProxy> {
  const sockets = new Set<Socket>();
  const openClients = new Set<Socket>();
  const state = { frozen: false, trigger: null as string | null };
  // allowHalfOpen: a client's FIN is not answered by the proxy's own, so while frozen a polite
  // close is never acknowledged, as over a dead network.
  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    const upstream = tcpConnect(Number(target.port), target.hostname);
    openClients.add(client);
    for (const event of ["end", "close"]) client.once(event, () => openClients.delete(client));
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => {});
      s.on("close", () => {
        sockets.delete(s);
        // One side gone while the network is cut: the other is not told.
        if (state.frozen) return;
        client.destroy();
        upstream.destroy();
      });
    }
    client.on("data", (chunk: Buffer) => {
      if (state.trigger !== null && chunk.includes(state.trigger)) {
        state.trigger = null;
        state.frozen = true;
      }
      if (!state.frozen) upstream.write(chunk);
    });
    upstream.on("data", (chunk) => void (state.frozen || client.write(chunk)));
    // A half-close is passed on only while the network works.
    client.on("end", () => void (state.frozen || upstream.end()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    get frozen() {
      return state.frozen;
    },
    set frozen(value: boolean) {
      state.frozen = value;
    },
    get openClients() {
      return openClients.size;
    },
    freezeOn(text) {
      state.trigger = text;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
