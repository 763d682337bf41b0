// The practical ceiling: node:http answering a fixed JSON body. It still drains the request body so
// POST workloads cost it what reading a form costs every other contender.
import { createServer } from "node:http";
import { announceReady } from "../shared.js";

const BODY = Buffer.from(JSON.stringify({ access_token: "x".repeat(32), token_type: "Bearer", expires_in: 7200 }));

const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json", "content-length": BODY.length, "cache-control": "no-store" });
    res.end(BODY);
  });
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  announceReady({ port: typeof address === "object" && address ? address.port : 0 });
});
