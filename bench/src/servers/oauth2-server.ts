// @node-oauth/oauth2-server 5.x on node:http with an in-memory model, as its README shows, issuing
// either its own opaque tokens (BENCH_TOKENS=opaque) or ES256 JWTs signed with jose in
// model.generateAccessToken (BENCH_TOKENS=jwt). The model hashes client secrets with SHA-256 and
// passwords with PBKDF2-SHA256 at the same iteration count as plantgate, so the work is comparable.
import { createHash, pbkdf2, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";
import { promisify } from "node:util";
import OAuth2Server from "@node-oauth/oauth2-server";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { announceReady, CLIENT_ID, CLIENT_SECRET, DEFAULT_BENCH_ITERATIONS, envInt, PASSWORD, readBody, username, USERS } from "../shared.js";

const pbkdf2Async = promisify(pbkdf2);
const iterations = envInt("BENCH_ITERATIONS", DEFAULT_BENCH_ITERATIONS);
const jwtMode = process.env.BENCH_TOKENS === "jwt";
const sha256 = (text: string) => createHash("sha256").update(text).digest();

interface User {
  id: string;
  username: string;
  salt: Buffer;
  hash: Buffer;
}
interface Client {
  id: string;
  secretHash: Buffer;
  grants: string[];
  accessTokenLifetime: number;
  refreshTokenLifetime: number;
}
interface StoredToken {
  accessToken?: string;
  accessTokenExpiresAt?: Date;
  refreshToken?: string;
  refreshTokenExpiresAt?: Date;
  scope?: string[];
  client: { id: string };
  user: { id: string };
}

async function makeUser(username: string, password: string): Promise<User> {
  const salt = randomBytes(16);
  return { id: randomUUID(), username, salt, hash: await pbkdf2Async(password, salt, iterations, 32, "sha256") };
}

const client: Client = {
  id: CLIENT_ID,
  secretHash: sha256(CLIENT_SECRET),
  grants: ["client_credentials", "password", "refresh_token"],
  accessTokenLifetime: 7200,
  refreshTokenLifetime: 7 * 24 * 3600,
};
const users = new Map<string, User>();
for (let i = 0; i < USERS; i++) users.set(username(i), await makeUser(username(i), PASSWORD));
// Unknown usernames cost a full hash too, as plantgate's do.
const dummy = await makeUser("dummy", randomUUID());
const accessTokens = new Map<string, StoredToken>();
const refreshTokens = new Map<string, StoredToken>();

const { privateKey, publicKey } = await generateKeyPair("ES256");
const kid = randomUUID();
await exportJWK(publicKey); // what a JWKS endpoint would serve; not part of the measured path

let issuer = "";

const model = {
  async getClient(clientId: string, clientSecret: string | null) {
    if (clientId !== client.id || clientSecret === null) return null;
    return timingSafeEqual(sha256(clientSecret), client.secretHash) ? client : null;
  },
  async getUserFromClient(c: Client) {
    return { id: `client:${c.id}` };
  },
  async getUser(username: string, password: string) {
    const user = users.get(username);
    const hash = await pbkdf2Async(password, (user ?? dummy).salt, iterations, 32, "sha256");
    return user && timingSafeEqual(hash, user.hash) ? { id: user.id } : null;
  },
  async validateScope(_user: unknown, _c: Client, scope: string[] | undefined) {
    return scope && scope.length > 0 ? scope : ["api"];
  },
  ...(jwtMode
    ? {
        async generateAccessToken(c: Client, user: { id: string }, scope: string[]) {
          const now = Math.floor(Date.now() / 1000);
          return new SignJWT({ client_id: c.id, scope: scope.join(" ") })
            .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid })
            .setIssuer(issuer)
            .setSubject(user.id)
            .setAudience(issuer)
            .setIssuedAt(now)
            .setExpirationTime(now + c.accessTokenLifetime)
            .setJti(randomUUID())
            .sign(privateKey);
        },
      }
    : {}),
  async saveToken(token: Omit<StoredToken, "client" | "user">, c: Client, user: { id: string }) {
    const stored: StoredToken = { ...token, client: { id: c.id }, user };
    // A JWT is self-contained; only the opaque variant has to remember its access tokens.
    if (!jwtMode && token.accessToken) accessTokens.set(token.accessToken, stored);
    if (token.refreshToken) refreshTokens.set(token.refreshToken, stored);
    return stored;
  },
  async getAccessToken(accessToken: string) {
    return accessTokens.get(accessToken) ?? null;
  },
  async getRefreshToken(refreshToken: string) {
    return refreshTokens.get(refreshToken) ?? null;
  },
  async revokeToken(token: StoredToken) {
    return token.refreshToken !== undefined && refreshTokens.delete(token.refreshToken);
  },
};

const oauth = new OAuth2Server({ model: model as never, accessTokenLifetime: 7200 });

function send(res: ServerResponse, status: number, headers: Record<string, string>, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { ...headers, "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

const server = createServer(async (req, res) => {
  try {
    if (req.method !== "POST" || req.url !== "/token") return send(res, 404, {}, { error: "not_found" });
    const body = Object.fromEntries(new URLSearchParams(await readBody(req)));
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers[name] = value;
    const request = new OAuth2Server.Request({ method: req.method, query: {}, headers, body });
    const response = new OAuth2Server.Response({ headers: {} });
    try {
      await oauth.token(request, response);
    } catch {
      // token() has already put the RFC 6749 error into the response.
    }
    send(res, response.status ?? 500, response.headers as Record<string, string>, response.body);
  } catch {
    send(res, 500, {}, { error: "server_error" });
  }
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  issuer = `http://127.0.0.1:${port}`;
  announceReady({ port });
});
