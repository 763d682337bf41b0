// The floor of any JWT-issuing token endpoint on this runtime: node:http answering every request
// with a freshly signed ES256 JWT (node:crypto), and nothing else: no client authentication, no
// parsing, no storage. Signatures are batched per event-loop turn exactly as plantgate's
// nodeCrypto() does (BENCH_BATCH=0: each signed in line as its request ends), so the gap between
// this row and plantgate's is everything plantgate does besides signing.
import { generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { createServer } from "node:http";
import { announceReady } from "../shared.js";

const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
const HEADER = Buffer.from(JSON.stringify({ alg: "ES256", kid: "bench", typ: "at+jwt" })).toString("base64url");

const batch = process.env.BENCH_BATCH !== "0";
const queue: Array<() => void> = [];
const flush = () => {
  for (const job of queue.splice(0)) job();
};

const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => (batch ? (queue.push(answer), queue.length === 1 && setImmediate(flush)) : answer()));
  function answer(): void {
    const iat = Math.floor(Date.now() / 1000);
    const payload = Buffer.from(
      JSON.stringify({ client_id: "bench-client", scope: "", iss: "http://127.0.0.1", sub: "client:bench-client", aud: "http://127.0.0.1", iat, exp: iat + 3600, jti: randomBytes(16).toString("base64url") }),
    ).toString("base64url");
    const input = `${HEADER}.${payload}`;
    const signature = sign("sha256", Buffer.from(input), { key: privateKey, dsaEncoding: "ieee-p1363" }).toString("base64url");
    const body = Buffer.from(JSON.stringify({ access_token: `${input}.${signature}`, token_type: "Bearer", expires_in: 3600, scope: "" }));
    res.writeHead(200, { "content-type": "application/json", "content-length": body.length, "cache-control": "no-store", pragma: "no-cache" });
    res.end(body);
  }
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  announceReady({ port: typeof address === "object" && address ? address.port : 0 });
});
