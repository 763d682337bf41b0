/**
 * The README's node:http adapter ("Writing an adapter"), as printed, over the app it is given (the
 * README's `app`): readme-adapter.test.ts runs it whole, embed-readme-frameworks.test.ts hands its
 * `handler` to the Fastify lines. Not a test file itself (vitest only picks up `*.test.ts`).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Plantgate } from "@plantgate/core";

export function readmeAdapter(app: Plantgate) {
  // ---- the README's adapter, as printed ----
  function readAll(incoming: IncomingMessage, maxBytes: number): Promise<Uint8Array | null> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      incoming.on("data", (chunk: Buffer) => {
        size += chunk.byteLength;
        if (size > maxBytes) {
          incoming.removeAllListeners("data");
          incoming.resume(); // discard the rest
          resolve(null);
        } else chunks.push(chunk);
      });
      incoming.on("end", () => resolve(Buffer.concat(chunks)));
      incoming.on("error", reject);
    });
  }

  async function handler(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let request: Request;
    try {
      const headers = new Headers();
      for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
      request = new Request(`http://${req.headers.host ?? "localhost"}${req.url}`, { method: req.method, headers });
    } catch {
      // A Host no URL can hold ("Host: ["), or a method no Request carries (TRACE, TRACK): answer,
      // never throw (an async listener's rejection would end the process).
      res.writeHead(400, { "content-type": "application/json", "cache-control": "no-store" });
      res.end('{"error":"invalid_request","error_description":"The request cannot be processed."}');
      return;
    }
    const answer = await app.handle(request, { clientIp: req.socket.remoteAddress, readBody: (max) => readAll(req, max) });
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body ?? undefined);
  }
  // ---- end of the README's adapter ----
  return { handler, readAll };
}
