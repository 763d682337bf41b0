/**
 * A real TCP server speaking RESP2, answering each command with what `answer` returns (a raw RESP
 * reply, or null to stay silent): for what a redis-server cannot be made to do on this machine (be
 * Redis 6, or answer NOSCRIPT slowly and then hang). Commands `answer` does not know get `+OK`
 * (node-redis's `CLIENT SETINFO` at connect).
 */
import { createServer, type Server, type Socket } from "node:net";

export type Answer = (command: string[]) => string | null | undefined;

/** Parses as many whole RESP arrays of bulk strings as `buffer` holds; returns them and the rest. */
function parse(buffer: Buffer): { commands: string[][]; rest: Buffer } {
  const commands: string[][] = [];
  let at = 0;
  for (;;) {
    const start = at;
    const line = () => {
      const end = buffer.indexOf("\r\n", at);
      if (end < 0) return null;
      const text = buffer.toString("latin1", at, end);
      at = end + 2;
      return text;
    };
    const head = line();
    if (head === null || !head.startsWith("*")) return { commands, rest: buffer.subarray(start) };
    const parts: string[] = [];
    let whole = true;
    for (let i = 0; i < Number(head.slice(1)); i++) {
      const size = line();
      if (size === null || at + Number(size.slice(1)) + 2 > buffer.length) {
        whole = false;
        break;
      }
      parts.push(buffer.toString("utf8", at, at + Number(size.slice(1))));
      at += Number(size.slice(1)) + 2;
    }
    if (!whole) return { commands, rest: buffer.subarray(start) };
    commands.push(parts);
  }
}

/** The server, the commands it got, and `reply` to write a raw reply later to the last connection that sent one. */
export async function respServer(answer: Answer): Promise<{ port: number; close: () => Promise<void>; commands: string[][]; reply: (text: string) => void }> {
  const sockets = new Set<Socket>();
  const seen: string[][] = [];
  let last: Socket | null = null;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let pending: Buffer = Buffer.alloc(0);
    socket.on("data", (chunk) => {
      const { commands, rest } = parse(Buffer.concat([pending, chunk]));
      pending = rest;
      for (const command of commands) {
        seen.push(command);
        last = socket;
        const reply = answer(command);
        if (reply === null) continue;
        socket.write(reply ?? "+OK\r\n");
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    commands: seen,
    reply: (text) => void last?.write(text),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
